"""The real tiktoken encodings, offline, and a cache so each distinct text is encoded once.

tiktoken fetches its rank files over the network on first use. compactlab ships the genuine
`cl100k_base` and `o200k_base` files in `bench/tokens/encodings/` and hands them to tiktoken's own
constructors (`tiktoken_ext.openai_public`), which check them against the SHA-256 tiktoken
expects. So the encodings are exactly tiktoken's, with no download.
"""

from __future__ import annotations

import re
import threading
from functools import cache
from pathlib import Path

import tiktoken
import tiktoken.load
from tiktoken_ext import openai_public

ENCODINGS_DIR = Path(__file__).resolve().parent / "encodings"
SHIPPED = ("cl100k_base", "o200k_base")
_loader_lock = threading.Lock()


class EncodingUnavailable(RuntimeError):
    pass


@cache
def get_encoding(name: str) -> tiktoken.Encoding:
    """The tiktoken encoding `name` built from the shipped file (no network)."""
    if name not in SHIPPED:
        raise EncodingUnavailable(f"encoding {name!r} is not shipped with compactlab; use one of {', '.join(SHIPPED)}")

    def local_file(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        path = ENCODINGS_DIR / url.rsplit("/", 1)[-1]
        if not path.is_file():
            raise EncodingUnavailable(
                f"{path} is missing: reinstall compactlab (pip install -e .) so the shipped encodings are present"
            )
        try:
            return tiktoken.load.load_tiktoken_bpe(str(path), expected_hash=expected_hash)
        except ValueError as exc:  # tiktoken's own hash check
            raise EncodingUnavailable(f"{path} is damaged ({exc}); restore it from the repository") from exc

    # tiktoken's constructor names its download URL and expected hash; swapping its loader for a
    # local one keeps tiktoken's exact pattern, special tokens and hash check.
    with _loader_lock:
        original = openai_public.load_tiktoken_bpe
        openai_public.load_tiktoken_bpe = local_file
        try:
            params = openai_public.ENCODING_CONSTRUCTORS[name]()
        finally:
            openai_public.load_tiktoken_bpe = original
    return tiktoken.Encoding(**params)


# A point where tiktoken's pre-tokenizer (cl100k_base and o200k_base alike) always splits a text:
# after a newline, before a character that is neither whitespace nor "/". No piece of either
# pattern runs across it (whitespace pieces end at the run's last newline, punctuation pieces take
# only newlines and "/" after them, word and number pieces hold no newline), and a piece before it
# is the same whether the text goes on or ends there. tiktoken encodes each piece on its own, so a
# text's token count is the sum of its blocks' counts. (Python's \s covers every character the
# patterns' \s does, so the split is never made where they see whitespace.)
_BLOCK_START = re.compile(r"\n(?=[^\s/])")  # a newline a block starts after (found by the newline: fast)


def _blocks(text: str) -> list[str]:
    """`text` split at each block start (see `_BLOCK_START`)."""
    cuts = [m.end() for m in _BLOCK_START.finditer(text)]
    return [text[start:end] for start, end in zip([0, *cuts], [*cuts, len(text)])]


class TokenCache:
    """Token counts of texts per encoding, each distinct text encoded once.

    Replaying a session asks for the same messages in every later prompt; keying by text makes the
    whole replay cost one encoding pass over the distinct text, not one per prefix. `max_chars`
    bounds what it holds: past that many characters of texts it starts afresh (a cache shared by
    a whole run's sessions would otherwise keep every text of its datasets alive).
    """

    def __init__(self, max_chars: int | None = None) -> None:
        self._counts: dict[str, dict[str, int]] = {}
        self.max_chars = max_chars
        self._chars = 0

    def count(self, encoding: str, text: str) -> int:
        table = self._counts.setdefault(encoding, {})
        found = table.get(text)
        if found is None:
            # disallowed_special=() counts "<|endoftext|>" in user text as text instead of raising.
            found = len(get_encoding(encoding).encode(text, disallowed_special=()))
            self._hold(table, text, found)
        return found

    def _hold(self, table: dict[str, int], text: str, count: int) -> None:
        self._chars += len(text)
        if self.max_chars is not None and self._chars > self.max_chars:
            for other in self._counts.values():
                other.clear()
            self._chars = len(text)
        table[text] = count

    def count_blocks(self, encoding: str, text: str) -> int:
        """`count(encoding, text)`, summed over the text's blocks (see `_BLOCK_START`), each counted
        once: for texts assembled from lines of other texts, like the summaries a strategy writes
        again and again, whose blocks recur from one to the next."""
        table = self._counts.setdefault(encoding, {})
        found = table.get(text)
        if found is None:
            found = sum(self.count(encoding, block) for block in _blocks(text))
            self._hold(table, text, found)
        return found

    def warm(self, encoding: str, texts) -> None:
        """Count many texts in one pass. One encoding at a time runs about a third faster than
        alternating encodings text by text, which keeps evicting each other's BPE tables from
        the CPU caches."""
        for text in texts:
            self.count(encoding, text)

    def encoded_texts(self, encoding: str) -> int:
        return len(self._counts.get(encoding, {}))
