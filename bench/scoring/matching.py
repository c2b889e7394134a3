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

import threading
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from functools import cached_property, lru_cache
from typing import Literal, NamedTuple

from compactlab.memo import IdentityMemo
from compactlab.sessions.model import Message, TextPart, ThinkingPart, ToolCallPart, ToolResultPart

Kind = Literal["path", "identifier", "command", "url", "error", "number"]


class Item(NamedTuple):
    """Something a next step relies on: a path, identifier, command, URL, error name or number.

    (A named tuple, not a frozen dataclass: a sweep hashes items for every compaction it scores,
    and a tuple's hash is computed in C where a dataclass's runs Python code.)"""

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


# Each message's searchable text, made once, and its whitespace-normalised copy when a command
# asks: a sweep searches the same messages in thousands of contexts, and would otherwise decode
# tool-call arguments (or split a long context's text) again each time.
class _MessageText:
    __slots__ = ("text", "normalised")

    def __init__(self, message: Message) -> None:
        self.text = "\n".join(_searchable(message))
        self.normalised: str | None = None


_MESSAGE_TEXT: IdentityMemo[_MessageText] = IdentityMemo(200_001)


def _message_text(message: Message) -> str:
    return _MESSAGE_TEXT.of(message, _MessageText).text


def _message_normalised(message: Message) -> str:
    entry = _MESSAGE_TEXT.of(message, _MessageText)
    if entry.normalised is None:
        entry.normalised = " ".join(entry.text.split())
    return entry.normalised


class Haystack:
    """The joined text of some messages, built once and searched for many items."""

    def __init__(self, text: str, messages: Sequence[Message] | None = None) -> None:
        self.text = text  # normalised and lower-cased copies are made only if a command or URL asks
        self.messages = messages  # the messages `text` joins, when made from them

    @classmethod
    def of(cls, messages: Sequence[Message]) -> Haystack:
        return cls("\n".join(_message_text(message) for message in messages), messages)

    @cached_property
    def normalised(self) -> str:
        if self.messages is not None:  # the same text, from each message's normalised copy
            return " ".join(filter(None, map(_message_normalised, self.messages)))
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


@lru_cache(maxsize=1 << 14)  # every compaction's new text is searched for the same paths
def _path_candidates(path: str) -> tuple[str, ...]:
    """The path, then each suffix that keeps at least one directory and the file name."""
    segments = [s for s in path.split("/") if s]
    return tuple(dict.fromkeys([path] + ["/".join(segments[i:]) for i in range(len(segments) - 1)]))


@lru_cache(maxsize=1 << 14)  # a sweep searches each path item again as its compactions ask further
def _covering_candidates(path: str) -> tuple[str, ...]:
    """The fewest path candidates whose occurrences find the same messages as all of them: a
    candidate ending in `/` + a shorter one occurs only where that one occurs too (a `/` before
    it passes the path boundary check), so searching the shorter one suffices."""
    candidates = _path_candidates(path)
    return tuple(c for c in candidates if not any(c.endswith("/" + other) for other in candidates))


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


class SessionText:
    """Where items occur in one message list, for scoring many compactions of the same session.

    The list's joined text is searched once per item: the result is the messages the item occurs
    in. Then "in the history before message i" is "in a message before i", and "in a compacted
    context" is "in one of its messages kept from the list, or in its new ones" (summaries,
    masked outputs), with no haystack built per compaction. An item cannot straddle two messages
    in the joined text (items hold no newline), except a command in the whitespace-normalised
    text, which `in_context` checks against the context's whole text when no single message has it.

    One is shared by every setting of a session (`compactlab.scoring.preservation` keeps it by the
    session's identity), and a run scores those settings side by side in threads
    (`compactlab.runs.concurrent_replays`): extending an item's search is one step under a lock.
    """

    def __init__(self, messages: Sequence[Message]) -> None:
        self.messages = messages
        self.index_of = {id(m): i for i, m in reversed(list(enumerate(messages)))}
        self._occurring: dict[Item, list] = {}  # [the messages found (sorted), how far they were searched]
        # Without it, two threads asking about one item both search from where it was searched to,
        # and both append: the messages twice and out of order, so `history_count` (a bisection)
        # counted wrong and an item's ubiquity, hence a preservation score, followed which thread
        # finished first (the concurrent run's rows differed from the serial run's in one digit).
        self._searching = threading.Lock()
        self._command_end: dict[str, int] = {}  # where a command first ends in the normalised text (-1: nowhere)

    @cached_property
    def texts(self) -> list[str]:
        return [_message_text(m) for m in self.messages]

    @cached_property
    def text(self) -> str:
        return "\n".join(self.texts)

    @cached_property
    def starts(self) -> list[int]:
        return _starts(self.texts, 1)

    @cached_property
    def lower(self) -> tuple[str, list[int]]:
        texts = [t.lower() for t in self.texts]
        return "\n".join(texts), _starts(texts, 1)

    @cached_property
    def normalised(self) -> tuple[str, list[int]]:
        """The text with whitespace runs as one space (what commands are matched in), and where each
        message's part starts (messages without text take no room)."""
        texts = [_message_normalised(m) for m in self.messages]
        return " ".join(t for t in texts if t), _starts(texts, 1, skip_empty=True)

    def occurring(self, item: Item, before: int | None = None) -> list[int]:
        """The indexes of the messages `item` occurs in, whole, by the rules of its kind (sorted):
        all of those before message `before` (default: the end), and maybe some after it.

        The text is searched only as far as asked, and on from there when asked further: a
        compaction's items are asked about before its position, so most of a session's text
        after the items a sweep needs is never searched."""
        before = len(self.messages) if before is None else before
        with self._searching:
            entry = self._occurring.get(item)
            if entry is None:
                entry = self._occurring[item] = [[], 0]  # the messages found, and how far they were searched
            if before > entry[1]:
                entry[0] += sorted(self._search(item, entry[1], before))
                entry[1] = before
            return entry[0]  # later searches only append messages from `before` on

    def _search(self, item: Item, first: int, end: int) -> set[int]:
        """The messages from `first` to before `end` that `item` occurs in."""
        if item.kind == "url":
            text, starts = self.lower
            return _messages_with(item.text.lower(), text, starts, first, end)
        if item.kind == "command":
            text, starts = self.normalised
            return _messages_with(item.text, text, starts, first, end)
        if item.kind == "path":
            found: set[int] = set()
            for candidate in _covering_candidates(item.text):
                found |= _messages_with(candidate, self.text, self.starts, first, end, _path_before, _path_after)
            return found
        if item.kind == "number":
            return _messages_with(item.text, self.text, self.starts, first, end, _number_before, _number_after)
        return _messages_with(item.text, self.text, self.starts, first, end, _plain_before, _plain_after)  # identifier, error

    def in_history(self, item: Item, index: int) -> bool:
        """Whether `item` occurs in the messages before `index` (their joined text, as `present`)."""
        if "\n" in item.text:
            return present(item, Haystack.of(self.messages[:index]))
        if item.kind == "command":  # it may straddle messages: where does it first end?
            end = self._command_end.get(item.text)
            if end is None:
                text, _ = self.normalised
                first = text.find(item.text)
                end = self._command_end[item.text] = -1 if first == -1 else first + len(item.text)
            return end != -1 and end <= self.normalised[1][index] - 1
        found = self.occurring(item, index)
        return bool(found) and found[0] < index

    def in_context(self, items: Sequence[Item], context: Sequence[Message]) -> list[bool]:
        """For each item, whether it occurs in `context` (its joined text, as `present`)."""
        kept = bytearray(len(self.messages))
        kept_end = 0  # the kept messages are all before this one
        new: list[Message] = []
        for message in context:
            position = self.index_of.get(id(message))
            if position is not None and self.messages[position] is message:
                kept[position] = 1
                if position >= kept_end:
                    kept_end = position + 1
            else:
                new.append(message)
        new_text: Haystack | None = None
        whole: Haystack | None = None
        answers = []
        for item in items:
            if "\n" not in item.text and any(kept[i] for i in reversed(self.occurring(item, kept_end))):
                answers.append(True)
            elif item.kind == "command" or "\n" in item.text:
                whole = whole or Haystack.of(context)
                answers.append(present(item, whole))
            else:
                new_text = new_text or Haystack.of(new)
                answers.append(present(item, new_text))
        return answers


def _starts(texts: list[str], separator: int, skip_empty: bool = False) -> list[int]:
    """Where each text starts in `texts` joined by a separator of that length, plus the end (+ separator)."""
    starts, position = [], 0
    for text in texts:
        starts.append(position)
        if text or not skip_empty:
            position += len(text) + separator
    starts.append(position)
    return starts


def _messages_with(needle: str, text: str, starts: list[int], first: int, end: int, before=None, after=None) -> set[int]:
    """The messages from `first` to before `end` (by `starts`) holding an occurrence of `needle`
    that passes the boundary checks and lies inside the message; after a hit the search skips to
    the next message."""
    found: set[int] = set()
    stop = starts[end] - 1  # the messages before `end` lie in text[:stop]
    if stop <= starts[first]:  # none, or none with text
        return found
    find, length, message = text.find, len(needle), first  # (local names: this loop is hot)
    start = find(needle, starts[first], stop)
    while start != -1:
        message = bisect_right(starts, start, message) - 1  # hits come in order: search from the last one on
        finish = start + length
        if finish <= starts[message + 1] - 1 and (before is None or (before(text, start) and after(text, finish))):
            found.add(message)
            start = find(needle, starts[message + 1], stop)
        else:
            start = find(needle, start + 1, stop)
    return found
