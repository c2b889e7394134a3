"""Next-step preservation and summary recall of one compaction, found on its contexts' positions.

`compactlab.scoring.preservation.preservation_at` and `compactlab.scoring.summary_recall.summary_recall_at`
are the definitions. They ask `SessionText.in_context` four times per compaction (the compacted
context; what it kept, dropped and added), each a Python pass over a context of hundreds of
messages and over each item's occurrences, and summary recall splits the two contexts with four
more passes over sets of ids. Here both contexts' session positions are found once, on arrays
(`compactlab.scoring.context_positions`); each message of the session gets its class (before only,
after only, both), and one pass over the position's table of item occurrences gives, for every
item, the classes it occurs in: the four answers for the session's messages at once. What those
leave open is searched in the contexts' other messages as the definition searches them, and only
where the answer can matter (`_recalls`). `tests/scoring/test_fast_scores.py` holds the scores
equal to the definitions' on every compaction of the bundled datasets.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cached_property

import numpy as np

from compactlab.memo import IdentityMemo
from compactlab.scoring.context_positions import ItemTable, held, item_table, positions
from compactlab.scoring.matching import Item
from compactlab.scoring.preservation import StepScore, needed_items, preservation_at, session_text, step_scores_of
from compactlab.scoring.recoverability import LossSplit, classify_newest_first, use_positions
from compactlab.scoring.summary_recall import RecallScore, recall_scores_of, summary_recall_at
from compactlab.sessions.model import Message

# Each message of the session, by which of the two contexts hold it: `1 << class` marks the class in `ItemTable.where`.
DROPPED, NEW, KEPT = 1, 2, 3  # before only, after only, both (0: neither)
IN_AFTER = 1 << NEW | 1 << KEPT


def preservation_and_recall(
    messages: Sequence[Message], index: int, before: Sequence[Message], compacted: Sequence[Message], ks: tuple[int, ...]
) -> tuple[dict[int, StepScore], dict[int, RecallScore]]:
    """`(preservation_at(messages, index, compacted, ks), summary_recall_at(messages, index, before, compacted, ks))`."""
    text = session_text(messages)
    needed_by_k = needed_items(messages, index, ks)
    items = list(dict.fromkeys(i for needed in needed_by_k.values() if needed for i in needed))
    if not items:
        return {k: StepScore(k, needed or (), (), (), None) for k, needed in needed_by_k.items()}, {
            k: RecallScore(k, (), (), None) for k in ks
        }
    before_at, after_at = positions(text, before), positions(text, compacted)
    if max(before_at.max(initial=-1), after_at.max(initial=-1)) >= index:  # a context past the compaction (none so far)
        return preservation_at(messages, index, compacted, ks), summary_recall_at(messages, index, before, compacted, ks)
    table = _TABLES.get((text, needed_by_k), index, lambda: item_table(text, items, index))
    classes = np.zeros(len(messages), dtype=np.uint8)
    classes[before_at[before_at >= 0]] = DROPPED
    classes[after_at[after_at >= 0]] += NEW  # (one message twice in the context after: still one +NEW)
    where = table.where(classes)
    others = _Others(before, compacted, before_at, after_at)
    present = dict(zip(items, held(items, [w & IN_AFTER > 0 for w in where], lambda: others.after, lambda: compacted)))
    return step_scores_of(needed_by_k, present), _recalls(table, needed_by_k, where, others, present)


# Each position's table of its needed items' occurrences (`item_table`), by the identity of the
# session's text and of the needed items (`needed_items`' own, which its memo keeps).
_TABLES: IdentityMemo[ItemTable] = IdentityMemo(1024)


class _Others:
    """The two contexts' messages the session does not hold (summaries, masked outputs), split as
    summary recall splits contexts, made only when an item is searched for in them."""

    def __init__(self, before: Sequence[Message], after: Sequence[Message], before_at: np.ndarray, after_at: np.ndarray):
        self.before_context, self.after_context = before, after
        self.before_at, self.after_at = before_at, after_at

    @cached_property
    def before(self) -> list[Message]:
        return [self.before_context[i] for i in np.flatnonzero(self.before_at < 0).tolist()]

    @cached_property
    def after(self) -> list[Message]:
        return [self.after_context[i] for i in np.flatnonzero(self.after_at < 0).tolist()]

    def kept(self) -> list[Message]:
        return _among(self.after, self.before, True)

    def dropped(self) -> list[Message]:
        return _among(self.before, self.after, False)

    def new(self) -> list[Message]:
        return _among(self.after, self.before, False)


def _recalls(
    table: ItemTable,
    needed_by_k: dict[int, tuple[Item, ...] | None],
    where: list[int],
    others: _Others,
    in_after: dict[Item, bool],
) -> dict[int, RecallScore]:
    """`summary_recall_at`'s scores, from the classes of the session's messages each item occurs in
    (`where`), searching the other messages only for what the classes leave open. `in_after`:
    which items the context after holds (preservation's answers)."""
    items = table.items
    before, after = others.before_context, others.after_context
    # (The whole lists are made only for a command or a text with a line break no kept message holds.)
    # What the context after lacks, neither its kept nor its new messages hold: not searched for there. (Not
    # so for a command or a text with a line break, which may straddle messages that only the parts put side by side.)
    maybe = {i for i in items if in_after[i] or i.kind == "command" or "\n" in i.text}
    in_kept = held(items, [w >> KEPT & 1 == 1 for w in where], others.kept, lambda: _among(after, before, True), maybe)
    # Only an item the kept messages lack can be a candidate: the others are not searched for in the dropped ones.
    lacking = {i for i, kept in zip(items, in_kept) if not kept}
    in_dropped = held(
        items, [w >> DROPPED & 1 == 1 for w in where], others.dropped, lambda: _among(before, after, False), lacking
    )
    candidates = [i for i, kept, dropped in zip(items, in_kept, in_dropped) if dropped and not kept]
    in_new: dict[Item, bool] = {}
    if candidates:
        asked = set(candidates)
        new = held(items, [w >> NEW & 1 == 1 for w in where], others.new, lambda: _among(after, before, False), asked & maybe)
        in_new = {i: found for i, found in zip(items, new) if i in asked}
    return recall_scores_of(needed_by_k, in_new)


def _among(messages: Sequence[Message], others: Sequence[Message], inside: bool) -> list[Message]:
    """The messages that are (`inside`) or are not among `others`, by identity, in order."""
    ids = set(map(id, others))
    return [m for m in messages if (id(m) in ids) is inside]


# Where each item is first used, by session and position: the same for every compaction there.
_USES: IdentityMemo[Callable[[Item], int]] = IdentityMemo(1024)


def loss_split_at(messages: Sequence[Message], index: int, lost: Sequence[Item], k: int = 5) -> LossSplit:
    """`compactlab.scoring.recoverability.loss_split`, with the use positions found once per session
    and position and each item's sources judged newest first, up to the first recoverable one."""
    use = _USES.get((messages,), (index, k), lambda: use_positions(messages, index, k))
    return LossSplit(tuple(classify_newest_first(messages, index, item, use(item)) for item in lost))
