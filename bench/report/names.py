"""Long names (session ids, file names) in the report: cut in the middle, the whole name in a tooltip.

Claude Code names a session by its project folder and a UUID (`-Users-me-src-a-long-project-name__3f2a…`);
set whole in a table cell that does not wrap, such a name pushed the figures beside it out of view.
`short_name` keeps the start and the end (the end tells sessions of one project apart) and puts the whole
name in the `title` attribute, which a browser shows on hover; CSS (`.name`) lets what is left wrap anywhere.
"""

from __future__ import annotations

from markupsafe import Markup, escape

NAME_CHARS = 44  # longer names are cut to this many characters (the ellipsis included)


def shortened(text: str, limit: int = NAME_CHARS) -> str:
    """`text`, or its start and end around an ellipsis when it is longer than `limit` characters."""
    if len(text) <= limit:
        return text
    tail = (limit - 1) * 2 // 5
    return f"{text[: limit - 1 - tail]}…{text[len(text) - tail :]}"


def short_name(text: object, limit: int = NAME_CHARS) -> Markup:
    """A name as a `<span class="name">`, cut to `limit` characters with the whole name as its tooltip."""
    name = "" if text is None else str(text)
    shown = shortened(name, limit)
    title = f' title="{escape(name)}"' if shown != name else ""
    return Markup(f'<span class="name"{title}>{escape(shown)}</span>')
