"""Every offline score of one compaction, made after the replay from what it kept.

The replay records each compaction (the context before it and the context it produced); the scores
are computed afterwards from those, as the model judge scores them (`compactlab.scoring.judge`),
so a new score is one more scorer in `SCORERS`, not state the replay's walk must carry:
- preservation of what the next k steps need (`compactlab.scoring.preservation`), with the
  summary's recall (`compactlab.scoring.summary_recall`) and, for the widest k, the lost items by
  recoverability (`compactlab.scoring.recoverability`);
- for a real compaction (the production agent's), what the agent re-acquired after it
  (`compactlab.scoring.reacquisition`).

The scores depend only on the session, the position and the two contexts, so they are made once per
distinct (session, position, context before, context after): the settings of a sweep that reach the
same compaction (a shared one, `compactlab.replay.shared_compactions`, or one made alike from the
same messages) each get a copy of the same scores (`compaction_scores` is `scored_fast` remembered).

`scored_afresh` is the definition of the scores; `scored_fast` gives the same with each scorer's
fast equal where it has one (`FAST`: preservation and summary recall on the contexts' positions,
`compactlab.scoring.fast_scores`), which tests/scoring/test_fast_scores.py holds equal to it on
every compaction of the bundled datasets.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence

from compactlab.memo import IdentityMemo
from compactlab.scoring.fast_scores import loss_split_at, preservation_and_recall
from compactlab.scoring.preservation import StepScore, preservation_at
from compactlab.scoring.reacquisition import reacquisition_json
from compactlab.scoring.recoverability import LossSplit, loss_json, loss_split
from compactlab.scoring.summary_recall import RecallScore, recall_json, summary_recall_at
from compactlab.sessions.model import Message

K_STEPS = (1, 5)

Scores = tuple[dict[str, dict], dict | None]
Scorer = Callable[[Sequence[Message], int, Sequence[Message], Sequence[Message]], dict[str, dict]]
Scored = tuple[Sequence[Message], Sequence[Message], Scores]  # (before, compacted, their scores)

# By the identity of the session and of both contexts' end messages, then of every message on a hit
# (each setting's walk builds its own context tuples, of the same message objects): a key of every
# message's id would hold thousands of ids per entry. The entries hold what their keys name, so no id
# can be reused while they live; a run forgets them between sessions (`compactlab.memo.forget`).
_SCORED: IdentityMemo[list[Scored]] = IdentityMemo(1024)


def compaction_scores(
    messages: Sequence[Message], index: int, before: Sequence[Message], compacted: Sequence[Message], real: bool
) -> Scores:
    """`scored_afresh`'s scores (by `scored_fast`), made once per distinct session, position and contexts (see the
    module docstring); each caller gets its own copy of the dicts, which rows hold and may change."""
    ends = (messages, *before[:1], *before[-1:], *compacted[:1], *compacted[-1:])
    alike = _SCORED.get(ends, (index, len(before), len(compacted), real), list)
    found = next((s for b, c, s in alike if all(map(operator.is_, b, before)) and all(map(operator.is_, c, compacted))), None)
    if found is None:
        found = scored_fast(messages, index, before, compacted, real)
        alike.append((before, compacted, found))
    scores, reacquired = found
    return {k: dict(v) for k, v in scores.items()}, None if reacquired is None else dict(reacquired)


def step_scores(
    messages: Sequence[Message], index: int, before: Sequence[Message], compacted: Sequence[Message]
) -> dict[str, dict]:
    """The preservation of what the next k steps need ({"k1": {...}, "k5": {...}}), each with the
    summary's recall and, for the widest k, the lost items by recoverability and what getting them
    back would cost."""
    found = preservation_at(messages, index, compacted, K_STEPS)
    recalls = summary_recall_at(messages, index, before, compacted, K_STEPS)
    widest = max(K_STEPS)
    return _step_json(found, recalls, loss_split(messages, index, found[widest].lost, widest))


def step_scores_fast(
    messages: Sequence[Message], index: int, before: Sequence[Message], compacted: Sequence[Message]
) -> dict[str, dict]:
    """`step_scores`, with preservation and summary recall found on the contexts' positions and the
    use positions of the lost items found once per session and position (`compactlab.scoring.fast_scores`)."""
    found, recalls = preservation_and_recall(messages, index, before, compacted, K_STEPS)
    widest = max(K_STEPS)
    return _step_json(found, recalls, loss_split_at(messages, index, found[widest].lost, widest))


def _step_json(found: dict[int, StepScore], recalls: dict[int, RecallScore], split: LossSplit) -> dict[str, dict]:
    scores = {f"k{k}": _score_json(score) | recall_json(recalls[k]) for k, score in found.items()}
    scores[f"k{max(K_STEPS)}"] |= loss_json(split)
    return scores


# Each scorer gives its keys of a compaction's scores (the row's `preservation` column), which the
# metric catalogue's entries read (`compactlab.results.metric`): a new score is its scorer, named here.
SCORERS: tuple[Scorer, ...] = (step_scores,)
# A scorer's fast equal, where it has one: what `scored_fast` asks instead.
FAST: dict[Scorer, Scorer] = {step_scores: step_scores_fast}


def scored_afresh(
    messages: Sequence[Message], index: int, before: Sequence[Message], compacted: Sequence[Message], real: bool
) -> Scores:
    """The scores of a compaction before `messages[index]` that turned the context `before` into
    `compacted`: every scorer's (`SCORERS`) and, when it is `real` (the production agent's), what the
    recorded continuation re-acquired: what was really gone."""
    scores: dict[str, dict] = {}
    for scorer in SCORERS:
        scores |= scorer(messages, index, before, compacted)
    return scores, reacquisition_json(messages, index, compacted) if real else None


def scored_fast(
    messages: Sequence[Message], index: int, before: Sequence[Message], compacted: Sequence[Message], real: bool
) -> Scores:
    """`scored_afresh`'s scores, each scorer's by its fast equal where it has one (`FAST`)."""
    scores: dict[str, dict] = {}
    for scorer in SCORERS:
        scores |= FAST.get(scorer, scorer)(messages, index, before, compacted)
    return scores, reacquisition_json(messages, index, compacted) if real else None


def _score_json(score: StepScore) -> dict:
    return {
        "score": score.score,
        "needed": [f"{i.kind}:{i.text}" for i in score.needed],
        "lost": [f"{i.kind}:{i.text}" for i in score.lost],
    }
