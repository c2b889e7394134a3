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
STOP_WORDS = GENERAL_NAMES | frozenset(
    "self cls this null undefined true false def function const let var echo macOS iOS iPhone iPad".split()
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
