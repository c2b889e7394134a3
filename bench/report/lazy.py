"""Detail on demand: a block of the report kept gzip-compressed inside the page until it is opened.

A report of 100 sessions held every session's saw-tooth, every compaction's summary and its kept and
lost facts inline: megabytes and tens of thousands of pixels that nobody reads at once. A lazy block
is a `<details>` whose body is the block's HTML (our own autoescaped template output, so hostile
session text in it is text), gzip-compressed and base64-encoded into its `data-lazy` attribute; the
page's script (`templates/lazy.js`) inflates it into the `<details>` the first time it is opened.
The page stays one self-contained file. `inflated(page)` is the page with every block already
opened, as a browser shows it after opening them: what tests and scripts search.
"""

from __future__ import annotations

import base64
import gzip
import re

from markupsafe import Markup, escape

# A lazy block's body, waiting for the script (or without it: the note says why nothing shows).
PLACEHOLDER = '<div class="lazy-body"><p class="note lazy-note">Loading… (needs JavaScript)</p></div>'
_BLOCK = re.compile(r'(<details\b[^>]*?) data-lazy="([A-Za-z0-9+/=]*)"([^>]*>.*?)' + re.escape(PLACEHOLDER), re.S)


def pack(content: str) -> str:
    """`content` gzip-compressed (deterministically: no time stamp) and base64-encoded."""
    return base64.b64encode(gzip.compress(content.encode("utf-8"), compresslevel=9, mtime=0)).decode("ascii")


def unpack(data: str) -> str:
    return gzip.decompress(base64.b64decode(data)).decode("utf-8")


def lazy(summary: Markup | str, content: Markup | str, element_id: str = "", cls: str = "") -> Markup:
    """A closed `<details>` showing `summary` (escaped unless Markup) whose `content` (Markup: already
    rendered and escaped) is inflated when it is first opened."""
    attributes = (f' id="{escape(element_id)}"' if element_id else "") + f' class="lazy{" " + escape(cls) if cls else ""}"'
    return Markup(
        f'<details{attributes} data-lazy="{pack(str(content))}"><summary>{escape(summary)}</summary>{PLACEHOLDER}</details>'
    )


def inflated(page: str) -> str:
    """`page` with every lazy block's content in place (opened), as the script puts it there."""
    return _BLOCK.sub(lambda m: f'{m.group(1)} open{m.group(3)}<div class="lazy-body">{unpack(m.group(2))}</div>', page)


def lazy_bytes(page: str) -> int:
    """How many bytes of `page` are lazy blocks' packed content."""
    return sum(len(m.group(2)) for m in _BLOCK.finditer(page))


__all__ = ["PLACEHOLDER", "inflated", "lazy", "lazy_bytes", "pack", "unpack"]
