"""Names every program knows without the session: what the needed-item extractor
(compactlab.scoring.extraction) never reads as an item of the session, by the labelling rule
(docs/needed-items-labelling.md, "noise"). The lists are general (the languages' own names),
not drawn from any session.
"""

from __future__ import annotations

import argparse
import builtins
import datetime
import io
import keyword
import pathlib
import re
import subprocess
import sys

# Names every program knows without the session (docs/needed-items-labelling.md, "noise"): Python's
# keywords and builtins, and any name whose first part is a standard-library module (`os.path.join`,
# `zipfile.ZipFile`, `sys.exit`). The few words below are other languages' keywords and globals,
# and product names written in lower camel case, which look like code to the extractor.
GENERAL_NAMES = (
    frozenset(keyword.kwlist)
    | frozenset(keyword.softkwlist)
    | frozenset(dir(builtins))
    | frozenset(sys.stdlib_module_names)
    # JavaScript's global objects, its standard library: `console.log`, `JSON.parse`, `Object.keys`
    | frozenset("console JSON Math Reflect Object Array Promise Number String Date Intl globalThis window document".split())
)
# Node's core modules, its standard library, as the first part of a name: `fs.rename`, `path.join`,
# `child_process.spawn` (issue 41: general knowledge beyond Python and JavaScript's globals). Not `process`:
# `process.env.JWT_SECRET` names a setting of the session.
NODE_MODULES = frozenset("fs path child_process Buffer crypto util events stream readline worker_threads require".split())
GENERAL_NAMES = GENERAL_NAMES | NODE_MODULES


def _camel(kebab: str) -> str:
    head, *rest = kebab.split("-")
    return head + "".join(word.capitalize() for word in rest)


# The web platform's own vocabulary, which a developer writes without the session (issue 41): CSS
# properties as a style object names them (`backdropFilter`, `zIndex`, and SVG's `strokeWidth`), CSS
# functions an edit's old text calls (`rgba(`, `blur(`), CSS keywords that look like code
# (`currentColor`), and DOM event handlers (`onClick`, `onChange`, `onKeyDown`). Written out from the
# CSS, SVG and DOM specifications' names, not drawn from any session.
CSS_PROPERTIES = frozenset(
    _camel(name)
    for name in """
    align-content align-items align-self animation-delay animation-duration animation-name aspect-ratio
    backdrop-filter backface-visibility background-color background-image background-position background-repeat
    background-size border-bottom border-color border-left border-radius border-right border-style border-top
    border-width box-shadow box-sizing column-gap flex-basis flex-direction flex-grow flex-shrink flex-wrap
    font-family font-size font-style font-weight grid-area grid-column grid-row grid-template-columns
    grid-template-rows justify-content justify-items justify-self letter-spacing line-height list-style
    margin-bottom margin-left margin-right margin-top max-height max-width min-height min-width mix-blend-mode
    object-fit object-position outline-offset overflow-wrap overflow-x overflow-y padding-bottom padding-left
    padding-right padding-top place-items pointer-events row-gap scroll-behavior text-align text-decoration
    text-overflow text-shadow text-transform transform-origin transition-delay transition-duration
    transition-property transition-timing-function user-select vertical-align white-space will-change
    word-break z-index fill-opacity fill-rule clip-rule stroke-dasharray stroke-dashoffset stroke-linecap
    stroke-linejoin stroke-opacity stroke-width view-box current-color
    """.split()
) | frozenset("viewBox currentColor".split())
CSS_FUNCTIONS = frozenset(
    """
    rgb rgba hsl hsla hwb calc clamp minmax blur brightness contrast grayscale invert saturate sepia translate
    translateX translateY translateZ translate3d scale scaleX scaleY rotate rotateX rotateY rotateZ skew skewX
    skewY matrix perspective
    """.split()
)
DOM_EVENTS = frozenset(
    "on" + name
    for name in """
    Click DoubleClick Change Input Submit KeyDown KeyUp KeyPress Focus Blur MouseEnter MouseLeave MouseOver
    MouseOut MouseDown MouseUp MouseMove PointerDown PointerUp PointerMove PointerEnter PointerLeave TouchStart
    TouchEnd TouchMove Scroll Wheel Load Error Resize Drag DragStart DragEnd DragOver DragEnter DragLeave Drop
    ContextMenu Copy Cut Paste Select Play Pause Ended Close Open Toggle Message AnimationEnd TransitionEnd
    """.split()
)
# React's own names for DOM attributes, and the keys of every package.json (`className`, `devDependencies`).
# (Not `readOnly` or `tabIndex`, which Qt's and other toolkits' properties share.)
REACT_AND_NPM_NAMES = frozenset(
    """
    className htmlFor dangerouslySetInnerHTML
    devDependencies peerDependencies optionalDependencies bundledDependencies packageManager
    """.split()
)
WEB_VOCABULARY = CSS_PROPERTIES | CSS_FUNCTIONS | DOM_EVENTS | REACT_AND_NPM_NAMES
# A DOM event's and element's own properties: `e.target.value`, `e.currentTarget.style.borderColor` and
# `node.dataset.model` reach the platform's objects through a variable; the name is the variable, if any.
# An event's target only through a handler's event parameter (`e`, `event`: Django's `col.target.column`
# is the session's model field); the element's others only when something is reached through them
# (`self.style` alone is Qt's method).
DOM_PROPERTIES = frozenset("style dataset classList".split())
DOM_TARGETS = frozenset("target currentTarget".split())
EVENT_NAMES = frozenset("e ev evt event".split())

STOP_WORDS = (
    GENERAL_NAMES
    | WEB_VOCABULARY
    | frozenset("self cls this null undefined true false def function const let var echo macOS iOS iPhone iPad".split())
)
# Methods of the languages' own types and of a few standard-library classes every script uses
# (Python's str, bytes, list, dict, set, files, Path, ArgumentParser, compiled patterns, datetime;
# JavaScript's arrays and strings): `lines.append`, `data.keys`, `parser.parse_args`, `items.push`
# call one on a variable of the session. The method is known without the session; the item is the
# variable (`order_items`), and a variable with a plain-word name (`lines`) is no item
# (docs/needed-items-labelling.md). Properties (`Path.name`) are not methods: `user.name` stays.
# Names that are also common attributes or methods of libraries are left out: JavaScript's `filter`,
# `map`, `then`, and a few of those classes' (`owner`, `group`, `error`, `date`, ...).
TYPE_METHODS = frozenset(
    name
    for kind in (
        str,
        bytes,
        list,
        dict,
        set,
        tuple,
        int,
        float,
        io.TextIOWrapper,
        io.BufferedReader,
        pathlib.Path,
        argparse.ArgumentParser,
        re.Pattern,
        datetime.datetime,
        datetime.timedelta,
        # and the standard library's process object (issue 41: `self.process.poll(`); not a logger's,
        # whose names (`log`, `critical`, `filter`) are every library's (`QMessageBox.critical(`, `self.log(`)
        subprocess.Popen,
    )
    for name in dir(kind)
    if not name.startswith("_") and callable(getattr(kind, name))
) - frozenset("owner group register scanner error exit date time".split()) | frozenset(
    """
    push shift unshift forEach length slice splice includes indexOf lastIndexOf concat toString trim
    trimStart trimEnd toLowerCase toUpperCase findIndex flat flatMap replaceAll startsWith endsWith
    padStart padEnd charAt substring substr matchAll
    """.split()
)
# A host name (`github.com`) reads as a dotted name; it names a place on the network, not code.
HOST = re.compile(r"[\w-]+(?:\.[\w-]+)*\.(?:com|org|net|edu|gov)")
# One lower-case letter before an acronym (`dGPU`, `eGPU`, `vCPU`): a product's name, not camelCase code.
PREFIXED_ACRONYM = re.compile(r"[a-z][A-Z]{2,}s?")
