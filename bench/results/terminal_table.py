"""A table and its prose fitted to a terminal's width: the leaderboard ran to ~400 characters a line.

The full table (every figure, with its interval) is printed as it is when it fits. When it does not,
the headers wrap over several lines, then the intervals go, then the last columns, down to the
first few (the catalogue's order puts the figures the recommendation weighs first); then the setting
names are shortened with "…". What was left out is said under the table: the full figures stay in
summary.json and `--json`.
"""

from __future__ import annotations

import textwrap

GAP = "  "
MIN_COLUMNS = (
    5  # the setting and the figures the rule weighs: tokens removed, facts kept (all, where compacted), over-window calls
)
INTERVAL = " ["


def fitted_table(headers: list[str], rows: list[list[str]], width: int | None) -> list[str]:
    """The lines of the table `headers` over `rows` (first column left-aligned, the rest right), at
    most `width` characters each (None: as wide as it takes, headers on one line)."""
    if width is None:
        return _lines(headers, rows, wrap=False)
    full = _lines(headers, rows, wrap=True)
    if _fits(full, width):
        return full
    bare = [[row[0], *(cell.split(INTERVAL)[0] for cell in row[1:])] for row in rows]
    for keep in range(len(headers), MIN_COLUMNS - 1, -1):
        lines = _lines(headers[:keep], [row[:keep] for row in bare], wrap=True)
        if _fits(lines, width):
            return lines + _left_out(headers, keep, width)
    keep = MIN_COLUMNS
    others = max(map(len, _lines(["", *headers[1:keep]], [["", *row[1:keep]] for row in bare], wrap=True)))
    room = max(12, width - others - len(GAP))
    short = [[_shorten(row[0], room), *row[1:keep]] for row in bare]
    return _lines(headers[:keep], short, wrap=True) + _left_out(headers, keep, width)


def wrapped(lines: list[str], width: int) -> list[str]:
    """Prose lines (each may hold several, split at newlines) wrapped to `width`, continuation lines
    indented like their first."""
    out: list[str] = []
    for line in (part for text in lines for part in text.split("\n")):
        if len(line) <= width:
            out.append(line)
            continue
        indent = " " * (len(line) - len(line.lstrip()) + (2 if line.lstrip()[:1] in "–✗-" else 0))
        out += textwrap.wrap(line, width, subsequent_indent=indent, break_long_words=True, break_on_hyphens=False)
    return out


def _lines(headers: list[str], rows: list[list[str]], wrap: bool) -> list[str]:
    widths = [max([len(r[i]) for r in rows] or [0]) for i in range(len(headers))]
    if wrap:  # a header as wide as its widest cell, or its longest word
        widths = [max(w, max(len(word) for word in h.split()) if h.split() else 0) for w, h in zip(widths, headers)]
        stacked = [textwrap.wrap(h, max(w, 1)) or [""] for h, w in zip(headers, widths)]
    else:
        widths = [max(w, len(h)) for w, h in zip(widths, headers)]
        stacked = [[h] for h in headers]
    height = max(len(s) for s in stacked)
    header_rows = [[(s[len(s) - height + k] if k >= height - len(s) else "") for s in stacked] for k in range(height)]
    return [
        GAP.join(text.ljust(w) if i == 0 else text.rjust(w) for i, (text, w) in enumerate(zip(r, widths))).rstrip()
        for r in [*header_rows, *rows]
    ]


def _fits(lines: list[str], width: int) -> bool:
    return all(len(line) <= width for line in lines)


def _left_out(headers: list[str], keep: int, width: int) -> list[str]:
    text = (
        "(intervals"
        + (f" and {', '.join(headers[keep:])}" if keep < len(headers) else "")
        + (" left out to fit the terminal; every figure is in summary.json and --json)")
    )
    return textwrap.wrap(text, width)


def _shorten(text: str, room: int) -> str:
    """`text` in `room` characters, cut in the middle: a setting's name and its mark (★ ◆ ✗) end it."""
    if len(text) <= room:
        return text
    tail = (room - 1) // 2
    return text[: room - 1 - tail] + "…" + text[len(text) - tail :]
