"""Next-step preservation and summary recall of one compaction, found on its contexts' positions.

`compactlab.scoring.preservation.preservation_at` and `compactlab.scoring.summary_recall.summary_recall_at`
are the definitions. They ask `SessionText.in_context` four times per compaction (the compacted
context; what it kept, dropped and added), each a Python pass over a context of hundreds of
messages, and summary recall splits the two contexts with four more passes over sets of ids. Here
both contexts' session positions are found once, on arrays (`compactlab.scoring.context_positions`),
the splits are masks over them, and each item is asked of a mask (`held`): the same answers, which
`tests/scoring/test_fast_scores.py` holds equal on every compaction of the bundled datasets.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from compactlab.memo import IdentityMemo
from compactlab.scoring.context_positions import ItemTable, Selection, item_table, positions, selection
from compactlab.scoring.matching import Item, SessionText
from compactlab.scoring.preservation import StepScore, needed_items, session_text, step_scores_of
from compactlab.scoring.recoverability import LossSplit, classify, use_positions
from compactlab.scoring.summary_recall import RecallScore, recall_scores_of
from compactlab.sessions.model import Message


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
    table = _TABLES.get((text, needed_by_k), index, lambda: item_table(text, items, index))
    after_at = positions(text, compacted)
    present = dict(zip(items, table.held(text, selection(text, compacted, after_at))))
    return step_scores_of(needed_by_k, present), _recalls(text, table, needed_by_k, before, compacted, after_at, present)


# Each position's table of its needed items' occurrences (`item_table`), by the identity of the
# session's text and of the needed items (`needed_items`' own, which its memo keeps).
_TABLES: IdentityMemo[ItemTable] = IdentityMemo(1024)


def _recalls(
    text: SessionText,
    table: ItemTable,
    needed_by_k: dict[int, tuple[Item, ...] | None],
    before: Sequence[Message],
    after: Sequence[Message],
    after_at: np.ndarray,
    in_after: dict[Item, bool],
) -> dict[int, RecallScore]:
    """`summary_recall_at`'s scores: what was kept, dropped and new, as masks over the session's
    messages and lists of the other messages (one set of ids each side). `in_after`: which items
    the context after holds (preservation's answers)."""
    before_at = positions(text, before)
    in_before = np.zeros(len(text.messages), dtype=bool)
    in_before[before_at[before_at >= 0]] = True
    after_mask = np.zeros(len(text.messages), dtype=bool)
    after_mask[after_at[after_at >= 0]] = True
    before_others = [before[i] for i in np.flatnonzero(before_at < 0).tolist()]
    after_others = [after[i] for i in np.flatnonzero(after_at < 0).tolist()]
    before_ids, after_ids = set(map(id, before_others)), set(map(id, after_others))
    # (The whole lists are made only for a command or a text with a line break no kept message holds.)
    kept = Selection(
        in_before & after_mask,
        [m for m in after_others if id(m) in before_ids],
        lambda: _among(after, before, True),
    )
    dropped = Selection(
        in_before & ~after_mask,
        [m for m in before_others if id(m) not in after_ids],
        lambda: _among(before, after, False),
    )
    # What the context after lacks, neither its kept nor its new messages hold: not searched for there. (Not
    # so for a command or a text with a line break, which may straddle messages that only the parts put side by side.)
    maybe = {i for i in table.items if in_after[i] or i.kind == "command" or "\n" in i.text}
    in_kept = dict(zip(table.items, table.held(text, kept, maybe)))
    # Only an item the kept messages lack can be a candidate: the others are not searched for in the dropped ones.
    in_dropped = dict(zip(table.items, table.held(text, dropped, {i for i in table.items if not in_kept[i]})))
    candidates = [i for i in table.items if in_dropped[i] and not in_kept[i]]
    in_new: dict[Item, bool] = {}
    if candidates:
        new = Selection(
            after_mask & ~in_before,
            [m for m in after_others if id(m) not in before_ids],
            lambda: _among(after, before, False),
        )
        asked = set(candidates)
        in_new = {i: held for i, held in zip(table.items, table.held(text, new, asked & maybe)) if i in asked}
    return recall_scores_of(needed_by_k, in_new)


def _among(messages: Sequence[Message], others: Sequence[Message], inside: bool) -> list[Message]:
    """The messages that are (`inside`) or are not among `others`, by identity, in order."""
    ids = set(map(id, others))
    return [m for m in messages if (id(m) in ids) is inside]


# Where each item is first used, by session and position: the same for every compaction there.
_USES: IdentityMemo[Callable[[Item], int]] = IdentityMemo(1024)


def loss_split_at(messages: Sequence[Message], index: int, lost: Sequence[Item], k: int = 5) -> LossSplit:
    """`compactlab.scoring.recoverability.loss_split`, with the use positions found once per session and position."""
    use = _USES.get((messages,), (index, k), lambda: use_positions(messages, index, k))
    return LossSplit(tuple(classify(messages, index, item, use(item)) for item in lost))
