"""The page shell shared by every report: one standalone HTML file, autoescaped templates.

The only script is the page's one inline script: the table sorting and filtering of `templates/sort.js`
and the detail-on-demand inflation of `templates/lazy.js` (`compactlab.report.lazy`). The page carries a
Content-Security-Policy that allows exactly that script (by its SHA-256), inline styles and
`data:` images, and nothing from the network: even if hostile session text slipped past the
escaping, a browser would refuse to run it or to fetch anything.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from compactlab.report.lazy import lazy
from compactlab.report.names import short_name

TEMPLATES = Path(__file__).resolve().parent / "templates"

_environment: Environment | None = None


def environment() -> Environment:
    """The report templates; autoescaped, and a missing variable is an error rather than blank output."""
    global _environment
    if _environment is None:
        _environment = Environment(
            loader=FileSystemLoader(TEMPLATES),
            autoescape=True,
            undefined=StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=True,
        )
        _environment.filters["name"] = short_name  # a long name cut, whole in its tooltip
        _environment.globals["lazy"] = lazy  # a closed block inflated when opened
    return _environment


SCRIPTS = ("sort.js", "lazy.js")


def sort_script() -> str:
    """The page's script: `SCRIPTS` one after the other."""
    script = "".join((TEMPLATES / name).read_text(encoding="utf-8") for name in SCRIPTS)
    if "</script" in script.lower():
        raise ValueError(f"{', '.join(SCRIPTS)} must not contain '</script'")
    return script


def content_security_policy(script: str) -> str:
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return (
        "default-src 'none'; "
        f"script-src 'sha256-{digest}'; "
        "style-src 'unsafe-inline'; img-src data:; "
        "base-uri 'none'; form-action 'none'"
    )


def render_page(sections: Sequence[Markup], title: str, nav: Sequence[tuple[str, str]] = (), lead: Markup | str = "") -> str:
    """The standalone page around already rendered sections (each one our own template output).

    `nav`: (anchor id, label) pairs for the contents bar; `lead`: text under the title.
    """
    script = sort_script()
    return (
        environment()
        .get_template("page.html.j2")
        .render(
            title=title,
            sections=list(sections),
            nav=list(nav),
            lead=lead,
            script=Markup(script),
            csp=content_security_policy(script),
        )
    )
