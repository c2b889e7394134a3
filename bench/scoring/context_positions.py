"""Whether contexts hold a position's needed items, found on arrays: the fast half of matching a context.

`SessionText.in_context` (`compactlab.scoring.matching`) is the definition of "does this context
hold the item": each message of the context is looked up in the session by identity, then each
item's occurrences are checked against the messages found, one Python step each, and an item no
kept message holds is searched in the context's other messages (summaries, masked outputs). A
sweep asks it four times per compaction (the compacted context; what it kept, dropped and added)
for the same items at every compaction of a position, under every setting.

Here the needed items of a position get one table (`ItemTable`): every item's occurrences in the
session before the position, one array, found once per session and position whatever the setting;
a context's messages' positions in the session are found on arrays, by their ids (`positions`);
the classes of the messages each item occurs in are read off the table for all items at once
(`ItemTable.where`); only the items no session message of the context holds are searched in its
other messages, as `in_context` searches them (`held`). `tests/scoring/test_fast_scores.py` holds the answers equal to `in_context`'s,
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
class ItemTable:
    """Where some items occur in a session (`SessionText.occurring`), complete before message
    `end`: item i's messages are `occurrences[starts[i]:starts[i + 1]]` (none for an item with a
    line break, which no single message is searched for)."""

    items: tuple[Item, ...]
    occurrences: np.ndarray
    starts: np.ndarray
    end: int

    def where(self, classes: np.ndarray) -> list[int]:
        """For each item, the classes of the messages it occurs in: the OR of `1 << classes[m]` over
        its messages m (`classes`: one small number per message of the session; 0: none)."""
        bits = np.zeros(len(self.occurrences) + 1, dtype=np.uint8)  # (one more: reduceat reads past an empty last item)
        bits[:-1] = np.left_shift(1, classes[self.occurrences])
        found = np.bitwise_or.reduceat(bits, self.starts[:-1]) if len(self.items) else bits[:0]
        found[self.starts[:-1] == self.starts[1:]] = 0  # an item without occurrences: reduceat gave its neighbour's
        return found.tolist()


def item_table(text: SessionText, items: Sequence[Item], end: int) -> ItemTable:
    """The table of `items`' occurrences in the session, complete before message `end`."""
    # (copies: another thread may extend an item's list while the table is made, `SessionText.occurring`)
    found = [tuple(text.occurring(item, end)) if "\n" not in item.text else () for item in items]
    starts = np.zeros(len(found) + 1, dtype=np.int64)
    starts[1:] = np.cumsum([len(f) for f in found])
    occurrences = np.fromiter((at for f in found for at in f), dtype=np.int64, count=int(starts[-1]))
    return ItemTable(tuple(items), occurrences, starts, end)


def held(
    items: Sequence[Item],
    in_session: Sequence[bool],
    foreign: Callable[[], Sequence[Message]],
    whole: Callable[[], Sequence[Message]],
    asked: set[Item] | None = None,
) -> list[bool]:
    """`SessionText.in_context(items, context)`, given which items the context's session messages
    hold (`in_session`): the others are searched as the definition searches them, a command or a
    text with a line break in the context's whole text (`whole()`, in order), any other item in the
    context's messages the session does not hold (`foreign()`, in order). With `asked`, only those
    items are searched for (the others: False)."""
    new_text: Haystack | None = None
    whole_text: Haystack | None = None
    answers = []
    for item, found in zip(items, in_session):
        if found:
            answers.append(True)
        elif asked is not None and item not in asked:
            answers.append(False)
        elif item.kind == "command" or "\n" in item.text:
            whole_text = whole_text or Haystack.of(whole())
            answers.append(present(item, whole_text))
        else:
            new_text = new_text or Haystack.of(foreign())
            answers.append(present(item, new_text))
    return answers
