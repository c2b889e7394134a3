"""Summary recall: of the facts the next steps need that a compaction dropped, the share its new
content carries.

Next-step preservation (`compactlab.scoring.preservation`) asks whether the compacted context still holds what
the next steps use. Most of that is often in the verbatim tail a strategy keeps, so it says little
about the summary itself: a one-line summary can score well when the tail carries the facts. Summary
recall isolates what the compaction wrote:

    before  = the context the strategy was given; after = the context it returned
    kept    = messages in both (the same objects); dropped = in before only; new = in after only
              (summaries, placeholders of masked outputs, re-attached files, archive pointers)
    only_dropped = the needed items (as preservation's: used by the next k steps, present in the
                   history) that occur in a dropped message and in no kept one
    recall  = |items of only_dropped found in the new messages| / |only_dropped|
              (None: the compaction dropped nothing the next steps need; not applicable)

Items that were already missing from the context before this compaction (an earlier one lost them)
are not this compaction's to carry, so they are left out. A message a strategy rewrote (a masked
tool output) is new: what it still says counts as carried by the compaction, what it no longer
says as lost. Matching is preservation's (`compactlab.scoring.matching`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from compactlab.scoring.matching import Item
from compactlab.scoring.preservation import needed_items, session_text
from compactlab.sessions.model import Message


@dataclass(frozen=True)
class RecallScore:
    k: int
    only_dropped: tuple[Item, ...]  # needed, and in the context before only in what was dropped
    lost: tuple[Item, ...]  # of those, what the compaction's new content does not hold
    score: float | None  # None: nothing needed was dropped (not applicable)


def summary_recall_at(
    messages: Sequence[Message], index: int, before: Sequence[Message], after: Sequence[Message], ks: Sequence[int] = (1, 5)
) -> dict[int, RecallScore]:
    """Summary recall of a compaction before `messages[index]` that turned the context `before` into
    `after`, for each k (see the module docstring)."""
    text = session_text(messages)
    needed_by_k = needed_items(messages, index, ks)
    items = list(dict.fromkeys(i for needed in needed_by_k.values() if needed for i in needed))
    scores = {k: RecallScore(k, (), (), None) for k in ks}
    if not items:
        return scores
    after_ids = {id(m) for m in after}
    before_ids = {id(m) for m in before}
    kept = [m for m in after if id(m) in before_ids]
    dropped = [m for m in before if id(m) not in after_ids]
    new = [m for m in after if id(m) not in before_ids]
    in_kept = dict(zip(items, text.in_context(items, kept)))
    in_dropped = dict(zip(items, text.in_context(items, dropped)))
    candidates = [i for i in items if in_dropped[i] and not in_kept[i]]
    in_new = dict(zip(candidates, text.in_context(candidates, new))) if candidates else {}
    return recall_scores_of(needed_by_k, in_new)


def recall_scores_of(needed_by_k: dict[int, tuple[Item, ...] | None], in_new: dict[Item, bool]) -> dict[int, RecallScore]:
    """The scores for each k, from what the next steps need and, for the items only dropped
    messages held (`in_new`'s keys), whether the compaction's new messages hold them."""
    scores = {}
    for k, needed in needed_by_k.items():
        only_dropped = tuple(i for i in needed or () if i in in_new)
        lost = tuple(i for i in only_dropped if not in_new[i])
        score = 1 - len(lost) / len(only_dropped) if only_dropped else None
        scores[k] = RecallScore(k, only_dropped, lost, score)
    return scores


def recall_json(score: RecallScore) -> dict:
    """What a compaction row keeps of a recall score, beside its preservation score."""
    return {
        "summary_recall": score.score,
        "only_dropped": [f"{i.kind}:{i.text}" for i in score.only_dropped],
        "summary_lost": [f"{i.kind}:{i.text}" for i in score.lost],
    }
