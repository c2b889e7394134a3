"""One value per compaction for the metrics whose per-session value is a mean over compactions.

The catalogue marks them (`Metric.per_compaction`): next-step preservation (k=1, k=5, and per item
kind), summary recall, unrecoverable loss and re-acquisition cost. The per-session table averages these values; the CI gate (`compactlab.gate.gate`)
also keeps them, so that it can resample the compactions within each session as well as the
sessions, and list the facts a regressed setting lost. Read from a run's compaction rows (as
`compactions.jsonl` holds them): failed compactions and compactions where the metric is not
applicable give no value.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from compactlab.results.catalogue import BY_NAME, ITEM_KINDS
from compactlab.results.metrics import loss_values


@dataclass(frozen=True)
class CompactionValue:
    session: str
    setting: str
    at: int  # the message index the compaction happened before: the same point in another run
    metric: str
    value: float
    lost: tuple[str, ...]  # the items ("kind:text") the metric counts as lost at this compaction


PER_COMPACTION = tuple(m.name for m in BY_NAME.values() if m.per_compaction)


def compaction_values(rows: Iterable[dict]) -> Iterator[CompactionValue]:
    """The per-compaction values of every `PER_COMPACTION` metric in these compaction rows."""
    for row in rows:
        if row.get("failed"):
            continue
        where = (row["session"], row["setting"], int(row["message_index"]))
        for key, found in (row.get("preservation") or {}).items():
            if found.get("score") is not None:
                yield CompactionValue(*where, f"preservation_{key}", float(found["score"]), tuple(found.get("lost", ())))
            if found.get("summary_recall") is not None:
                yield CompactionValue(
                    *where, f"summary_recall_{key}", float(found["summary_recall"]), tuple(found.get("summary_lost", ()))
                )
            if key == "k5":  # recoverability is split on the widest k (compactlab.results.metrics.loss_values)
                for name, value in loss_values(found).items():
                    if value is not None:
                        lost = found["lost_unrecoverable"] if name == "unrecoverable_loss" else found["lost_recoverable"]
                        yield CompactionValue(*where, name, value, tuple(lost))
            needed = Counter(item.split(":", 1)[0] for item in found.get("needed", []))
            lost = found.get("lost", [])
            for kind in ITEM_KINDS:
                if needed[kind]:
                    of_kind = tuple(item for item in lost if item.split(":", 1)[0] == kind)
                    yield CompactionValue(*where, f"preservation_{key}_{kind}", 1 - len(of_kind) / needed[kind], of_kind)
