"""Whether contexts hold a position's needed items, found on arrays: the fast half of matching a context.

`SessionText.in_context` (`compactlab.scoring.matching`) is the definition of "does this context
hold the item": each message of the context is looked up in the session by identity, then each
item's occurrences are checked against the messages found, one Python step each, and an item no
kept message holds is searched in the context's other messages (summaries, masked outputs). A
sweep asks it four times per compaction (the compacted context; what it kept, dropped and added)
for the same items at every compaction of a position, under every setting.

Here the needed items of a position get one table (`ItemTable`): every item's occurrences in the
session before the position, one array, found once per session and position whatever the setting;
a context is a mask over the session's messages (`Selection`: its messages' positions found on
arrays, by their ids); the items held are the table's occurrences looked up in the mask, all at
once; only the items no kept message holds are searched in the other messages, as `in_context`
searches them. `tests/scoring/test_fast_scores.py` holds the answers equal to `in_context`'s,
through `compactlab.scoring.fast_scores`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from compactlab.memo import IdentityMemo
from compactlab.scoring.matching import Haystack, Item, SessionText, present
from compactlab.sessions.model import Message


def _ids(messages: Sequence[Message]) -> np.ndarray:
    # Addresses of live objects: each fits in 64 bits, unsigned.
    return np.fromiter(map(id, messages), dtype=np.uint64, count=len(messages))


@dataclass(frozen=True)
class _SessionIds:
    """A session's message ids, sorted, and the first position of each (`SessionText.index_of`)."""

    ids: np.ndarray
    first: np.ndarray


def _session_ids(text: SessionText) -> _SessionIds:
    ids, first = np.unique(_ids(text.messages), return_index=True)
    return _SessionIds(ids, first)


_SESSION_IDS: IdentityMemo[_SessionIds] = IdentityMemo(8)


def positions(text: SessionText, context: Sequence[Message]) -> np.ndarray:
    """Each message's position in the session, as `SessionText.in_context` finds it (-1: not one of
    its messages). By id: two live objects never share one, so an equal id is the same message."""
    session = _SESSION_IDS.of(text, _session_ids)
    ids = _ids(context)
    if not len(session.ids):
        return np.full(len(ids), -1, dtype=np.int64)
    found = np.minimum(np.searchsorted(session.ids, ids), len(session.ids) - 1)
    return np.where(session.ids[found] == ids, session.first[found], -1)


@dataclass(frozen=True)
class Selection:
    """Some messages as `in_context` sees them: the session's (a mask over its messages), the others
    (`foreign`, in order), and the messages themselves in order (`whole`, made only if asked)."""

    mask: np.ndarray  # bool, one per message of the session
    foreign: Sequence[Message]
    whole: Callable[[], Sequence[Message]]

    @property
    def end(self) -> int:
        """The session's messages held are all before this one."""
        held = np.flatnonzero(self.mask)
        return int(held[-1]) + 1 if len(held) else 0


def selection(text: SessionText, context: Sequence[Message], at: np.ndarray | None = None) -> Selection:
    """The context `context`, whose messages' positions are `at` (found if not given)."""
    at = positions(text, context) if at is None else at
    mask = np.zeros(len(text.messages), dtype=bool)
    mask[at[at >= 0]] = True
    return Selection(mask, [context[i] for i in np.flatnonzero(at < 0).tolist()], lambda: context)


@dataclass(frozen=True)
class ItemTable:
    """Where some items occur in a session (`SessionText.occurring`), complete before message
    `end`: item i's messages are `occurrences[starts[i]:starts[i + 1]]` (none for an item with a
    line break, which no single message is searched for)."""

    items: tuple[Item, ...]
    occurrences: np.ndarray
    starts: np.ndarray
    end: int

    def held(self, text: SessionText, chosen: Selection, asked: set[Item] | None = None) -> list[bool]:
        """`text.in_context(self.items, context)` for the context `chosen` is; with `asked`, only
        those items are searched for outside the kept messages (the others: False)."""
        if chosen.end <= self.end:  # every item's kept occurrences at once
            kept = np.concatenate(([0], np.cumsum(chosen.mask[self.occurrences])))
            in_kept = (kept[self.starts[1:]] > kept[self.starts[:-1]]).tolist()
        else:  # a kept message past the table's end (none so far): item by item, as the definition
            mask, end = chosen.mask.tobytes(), chosen.end
            in_kept = ["\n" not in i.text and any(map(mask.__getitem__, reversed(text.occurring(i, end)))) for i in self.items]
        new_text: Haystack | None = None
        whole: Haystack | None = None
        answers = []
        for item, found in zip(self.items, in_kept):
            if found:
                answers.append(True)
            elif asked is not None and item not in asked:
                answers.append(False)
            elif item.kind == "command" or "\n" in item.text:
                whole = whole or Haystack.of(chosen.whole())
                answers.append(present(item, whole))
            else:
                new_text = new_text or Haystack.of(chosen.foreign)
                answers.append(present(item, new_text))
        return answers


def item_table(text: SessionText, items: Sequence[Item], end: int) -> ItemTable:
    """The table of `items`' occurrences in the session, complete before message `end`."""
    found = [text.occurring(item, end) if "\n" not in item.text else [] for item in items]
    starts = np.zeros(len(found) + 1, dtype=np.int64)
    np.cumsum([len(f) for f in found], out=starts[1:])
    occurrences = np.fromiter((at for f in found for at in f), dtype=np.int64, count=int(starts[-1]))
    return ItemTable(tuple(items), occurrences, starts, end)
