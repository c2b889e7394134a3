"""Validity against behaviour: did the agent have to get back what the metric says was lost?

At a real compaction the recorded continuation is what the agent really did next. An item the
preservation metric (`compactlab.scoring.preservation`) marks LOST by the production summary was really gone
only if the agent had to get it back before using it: it arrived again in a tool result or a user
message, or the agent re-read, re-searched or re-ran something naming it (a tool call), between
the compaction and the first of the next k steps that uses it. Items marked KEPT should need that
less often. So, at each real compaction, the share of lost items re-acquired before use is set
against the same share for kept items, with the counts; the lost items never re-acquired are
listed, since they are where the metric and the agent disagree.

A step's own tool call counts as the use, not as re-acquisition: the agent needed the item to
make that call. The compacted context is the replay's (summary and Claude Code's re-attachments).

A lost item used before any message could bring it back (`lost_at_once`: no tool call, tool
result or user message between the compaction and its use; typically the first step after an
auto-compaction) cannot be re-acquired: the agent had it, so the real compacted context held
something the replay's lacks (at m-claude 3af9b1a7, files the agent says Claude Code's reminders
showed it and the session never shows read), or the agent named it from nothing. Those are
counted apart: they measure the replay's reconstruction of the real context, not the metric.

The lost items are also counted by recoverability (`compactlab.scoring.recoverability`), with how
many of each were re-acquired: recoverable items are what the agent can and should fetch again,
unrecoverable ones what it could only ask again, re-derive or do without.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import pandas as pd

from compactlab.scoring.general_items import UBIQUITOUS_SHARE
from compactlab.scoring.matching import Haystack, Item, present
from compactlab.scoring.preservation import preservation_at
from compactlab.scoring.recoverability import LABELS, classify, use_positions
from compactlab.sessions.model import Message, ToolCallPart


@dataclass(frozen=True)
class Reacquisition:
    at_message: int
    lost: int
    lost_reacquired: int
    kept: int
    kept_reacquired: int
    lost_not_reacquired: tuple[str, ...]  # "kind:text"
    lost_at_once: int = 0  # lost items used before any message could bring them back
    # The lost items by `compactlab.scoring.recoverability`'s label, and of each how many were re-acquired.
    lost_recoverable: int = 0
    lost_recoverable_reacquired: int = 0
    lost_unrecoverable: int = 0
    lost_unrecoverable_reacquired: int = 0
    lost_unknown: int = 0
    lost_unknown_reacquired: int = 0

    @property
    def lost_share(self) -> float | None:
        return self.lost_reacquired / self.lost if self.lost else None

    @property
    def kept_share(self) -> float | None:
        return self.kept_reacquired / self.kept if self.kept else None


def reacquisition_at(
    messages: Sequence[Message], index: int, compacted: Sequence[Message], k: int = 5, ubiquitous: float = UBIQUITOUS_SHARE
) -> Reacquisition:
    """Re-acquisition of the items the next `k` steps after `messages[index]` need, lost or kept by
    `compacted`; `ubiquitous`: the preservation metric's share of the history above which an item
    is not needed (`compactlab.scoring.general_items`)."""
    score = preservation_at(messages, index, compacted, (k,), ubiquitous)[k]
    use = use_positions(messages, index, k)
    lost_back = [item for item in score.lost if _reacquired(messages, index, use(item), item)]
    kept_back = [item for item in score.kept if _reacquired(messages, index, use(item), item)]
    at_once = [item for item in score.lost if not any(_acquiring_part(m) for m in messages[index : use(item)])]
    # The lost items by recoverability (`compactlab.scoring.recoverability`), and how many of each came back.
    labels = {item: classify(messages, index, item, use(item)).label for item in score.lost}
    by_label = {}
    for label in LABELS:
        of_label = [item for item in score.lost if labels[item] == label]
        by_label[f"lost_{label}"] = len(of_label)
        by_label[f"lost_{label}_reacquired"] = sum(1 for item in of_label if item in lost_back)
    return Reacquisition(
        index,
        len(score.lost),
        len(lost_back),
        len(score.kept),
        len(kept_back),
        tuple(f"{i.kind}:{i.text}" for i in score.lost if i not in lost_back),
        len(at_once),
        **by_label,
    )


def reacquisition_json(messages: Sequence[Message], index: int, compacted: Sequence[Message], k: int = 5) -> dict:
    """`reacquisition_at` as a compaction row holds it (JSON-ready)."""
    found = reacquisition_at(messages, index, compacted, k)
    return {
        **{name: value for name, value in asdict(found).items() if name != "at_message"},
        "lost_not_reacquired": list(found.lost_not_reacquired),
        "k": k,
    }


COUNTS = (
    "lost",
    "lost_reacquired",
    "kept",
    "kept_reacquired",
    "lost_at_once",
    *(f"lost_{label}{back}" for label in LABELS for back in ("", "_reacquired")),
)


def reacquisition_summary(compactions: pd.DataFrame) -> dict:
    """summary.json's `trust.reacquisition`: every real compaction's counts (the rows that carry
    them: the `recorded` strategy's), their totals and the two shares over the totals (null when
    there is nothing to share: no real compaction, or no item lost or kept)."""
    rows = []
    if not compactions.empty and "reacquisition" in compactions:
        for row in compactions[compactions["reacquisition"].map(lambda v: isinstance(v, dict))].itertuples():
            found = row.reacquisition
            rows.append(
                {
                    "session": row.session,
                    "setting": row.setting,
                    "call": int(row.call),
                    "message_index": int(row.message_index),
                    **{name: int(found.get(name, 0)) for name in COUNTS},  # older rows lack the later counts
                    "lost_not_reacquired": list(found["lost_not_reacquired"]),
                    "k": found.get("k"),
                }
            )
    totals = {name: sum(r[name] for r in rows) for name in COUNTS}
    return {
        "compactions": rows,
        **totals,
        "lost_share": totals["lost_reacquired"] / totals["lost"] if totals["lost"] else None,
        "kept_share": totals["kept_reacquired"] / totals["kept"] if totals["kept"] else None,
        # Per recoverability label: of the lost items so labelled, the share re-acquired before use.
        **{
            f"{label}_share": totals[f"lost_{label}_reacquired"] / totals[f"lost_{label}"] if totals[f"lost_{label}"] else None
            for label in LABELS
        },
    }


def _reacquired(messages: Sequence[Message], start: int, use: int, item: Item) -> bool:
    """Whether `item` came back between the compaction and its use: in a tool result or user
    message, or in a tool call that fetched it again."""
    between = [_acquiring_part(m) for m in messages[start:use]]
    return present(item, Haystack.of([m for m in between if m is not None]))


def _acquiring_part(message: Message) -> Message | None:
    if message.role in ("tool", "user"):
        return message
    calls = tuple(p for p in message.parts if isinstance(p, ToolCallPart) and not p.from_text)
    return Message(role="assistant", parts=calls) if calls else None
