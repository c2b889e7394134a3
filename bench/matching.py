"""Whether an item a next step needs occurs in a text: the matching half of next-step preservation.

Matching (`present`) searches one joined text per side, built once per call: every text,
thinking and tool-result part, and each tool call's name and decoded argument values (raw JSON
would escape the quotes of a command). It is case-sensitive except for URLs (hosts vary in case). Identifiers, error
names and numbers must stand as whole tokens; commands are compared whitespace-normalised. A path
matches when it occurs whole, or when any suffix of it that keeps at least one directory and the
file name (`src/x/y.py`, `x/y.py` for `/testbed/src/x/y.py`) does, so contexts naming the file
from another root still count; a bare file name alone does not keep a longer path.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from bench.model import Message, TextPart, ThinkingPart, ToolCallPart, ToolResultPart

Kind = Literal["path", "identifier", "command", "url", "error", "number"]


@dataclass(frozen=True)
class Item:
    """Something a next step relies on: a path, identifier, command, URL, error name or number."""

    kind: Kind
    text: str


def _argument_strings(value: object) -> Iterator[str]:
    if isinstance(value, (dict, list)):
        for sub in value.values() if isinstance(value, dict) else value:
            yield from _argument_strings(sub)
    elif value is not None:
        yield str(value)


def _searchable(message: Message) -> Iterable[str]:
    """All text of a message, with tool-call arguments decoded: JSON would escape quotes in commands."""
    for part in message.parts:
        if isinstance(part, (TextPart, ThinkingPart)):
            yield part.text
        elif isinstance(part, ToolResultPart):
            yield part.content
        elif isinstance(part, ToolCallPart):
            yield part.name
            arguments = part.parsed_arguments()
            yield from _argument_strings(arguments) if isinstance(arguments, (dict, list)) else [str(arguments)]


# Each message's searchable text, made once: a sweep searches the same messages in thousands of
# contexts, and decoding tool-call arguments again each time was most of its cost. The entry holds
# the message so its id cannot be reused while the entry lives.
_MESSAGE_TEXT: dict[int, tuple[Message, str]] = {}


def _message_text(message: Message) -> str:
    found = _MESSAGE_TEXT.get(id(message))
    if found is None or found[0] is not message:
        if len(_MESSAGE_TEXT) > 200_000:
            _MESSAGE_TEXT.clear()
        found = (message, "\n".join(_searchable(message)))
        _MESSAGE_TEXT[id(message)] = found
    return found[1]


class Haystack:
    """The joined text of some messages, built once and searched for many items."""

    def __init__(self, text: str) -> None:
        self.text = text  # normalised and lower-cased copies are made only if a command or URL asks

    @classmethod
    def of(cls, messages: Sequence[Message]) -> Haystack:
        return cls("\n".join(_message_text(message) for message in messages))

    @cached_property
    def normalised(self) -> str:
        return " ".join(self.text.split())

    @cached_property
    def lower(self) -> str:
        return self.text.lower()


def _word(char: str) -> bool:
    return char.isalnum() or char == "_"


def _plain_before(text: str, i: int) -> bool:
    return i == 0 or not _word(text[i - 1])


def _plain_after(text: str, i: int) -> bool:
    return i >= len(text) or not _word(text[i])


def _path_before(text: str, i: int) -> bool:
    return i == 0 or not (_word(text[i - 1]) or text[i - 1] in ".@+-")


def _path_after(text: str, i: int) -> bool:
    return i >= len(text) or not (_word(text[i]) or text[i] in "@+-")


def _number_before(text: str, i: int) -> bool:
    # Not glued to a word or a dot, except a version's `v` (`v1.2`).
    if i == 0:
        return True
    previous = text[i - 1]
    if previous == "v":
        return i == 1 or not _word(text[i - 2])
    return not (_word(previous) or previous == ".")


def _number_after(text: str, i: int) -> bool:
    if i >= len(text):
        return True
    if _word(text[i]):
        return False
    return not (text[i] == "." and i + 1 < len(text) and text[i + 1].isdigit())


def _occurs(needle: str, text: str, before=_plain_before, after=_plain_after) -> bool:
    """`needle` in `text` with the boundary checks `before`/`after` at one of its occurrences.

    `str.find` and two character checks per occurrence: a regex with look-arounds over a
    history of hundreds of thousands of characters costs a hundred times more.
    """
    start = text.find(needle)
    while start != -1:
        if before(text, start) and after(text, start + len(needle)):
            return True
        start = text.find(needle, start + 1)
    return False


def _path_candidates(path: str) -> list[str]:
    """The path, then each suffix that keeps at least one directory and the file name."""
    segments = [s for s in path.split("/") if s]
    return list(dict.fromkeys([path] + ["/".join(segments[i:]) for i in range(len(segments) - 1)]))


def present(item: Item, text: str | Haystack) -> bool:
    """Whether `item` occurs in `text` under the rules of its kind (see the module docstring)."""
    hay = text if isinstance(text, Haystack) else Haystack(text)
    if item.kind == "url":
        return item.text.lower() in hay.lower
    if item.kind == "command":
        return item.text in hay.normalised
    if item.kind == "path":
        return any(_occurs(c, hay.text, _path_before, _path_after) for c in _path_candidates(item.text))
    if item.kind == "number":  # `3.11` is not kept by `3.11.2`, nor `956` by `1956`; `v3.11` counts
        return _occurs(item.text, hay.text, _number_before, _number_after)
    return _occurs(item.text, hay.text)  # identifier, error: whole tokens


