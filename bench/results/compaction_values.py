"""A compaction's scores flattened into the catalogue's per-row values: the one place they are read.

A compaction row holds its scores as the scorers made them (`preservation`: {"k1": {...}, "k5":
{...}}, `compactlab.scoring.compaction_scores`); every metric of the catalogue whose per-row value is a
function of them (`Metric.scored`) reads its value there, through its entry. The compaction frame
(`compactlab.results.metrics.compactions_frame`) gets one column per such metric (`flattened`); the
CI gate (`compactlab.gate.gate`) keeps each per-compaction value with the items it counts as lost
(`compaction_values`), so that it can resample the compactions within each session as well as the
sessions, and list the facts a regressed setting lost. Failed compactions and compactions where the
metric is not applicable give no value.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from compactlab.results.catalogue import METRICS


@dataclass(frozen=True)
class CompactionValue:
    """One per-compaction value of a metric, where it was made, and the items it counts as lost."""

    session: str
    setting: str
    at: int  # the message index the compaction happened before: the same point in another run
    metric: str
    value: float
    lost: tuple[str, ...]  # the items ("kind:text") the metric counts as lost at this compaction


# The metrics whose per-row value a compaction's scores give: the frame's columns (those of the
# per-session table), and the gate's values (every mean over compactions).
SCORED = tuple(m.name for m in METRICS if m.scored and m.in_table)
_FLATTENED = tuple(m for m in METRICS if m.scored and m.in_table)
_PER_COMPACTION = tuple(m for m in METRICS if m.scored and m.per_compaction)


def flattened(scores: Mapping[str, Any]) -> dict[str, float | None]:
    """One compaction's value of each scored metric of the per-session table (None: not applicable)."""
    return {entry.name: entry.value(scores) for entry in _FLATTENED}  # type: ignore[operator,misc]


def compaction_values(rows: Iterable[dict]) -> Iterator[CompactionValue]:
    """The per-compaction values of every metric that is a mean over compactions, in these compaction rows."""
    for row in rows:
        if row.get("failed"):
            continue
        where = (row["session"], row["setting"], int(row["message_index"]))
        scores = row.get("preservation") or {}
        for entry in _PER_COMPACTION:
            value = entry.value(scores)  # type: ignore[operator,misc]
            if value is not None:
                lost = tuple(entry.lost(scores)) if entry.lost is not None else ()
                yield CompactionValue(*where, entry.name, float(value), lost)
