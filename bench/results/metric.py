"""What a metric of the catalogue declares (`compactlab.results.catalogue`), and the per-row values
its entries read from a compaction's scores.

An entry is executable (after lm-evaluation-harness's `register_metric` and pydantic_evals' evaluator
dataclass): besides its label, direction and tolerance it says where its per-session value comes
from, and everything that computes or reads a figure follows it:

- `source`: "calls" (the call rows of a replay), "compactions" (its compaction rows) or "sessions"
  (computed from the per-session table's other columns);
- `value`: for calls and compactions, the row column aggregated, or, for compactions, a function of
  the compaction's scores (the row's `preservation` dict, `compactlab.scoring.compaction_scores`)
  giving its value (None: not applicable); for sessions, a function of the table giving the column;
- `per_session`: how a session's rows make its value (`PER_SESSION`);
- `rows`: which compaction rows count ("done", "failed", or "fell_back": done by a fallback);
- `when_none`: a session without such rows gets 0 (a count) or, None, no value;
- `lost`: for a per-compaction score, the items it counts as lost at a compaction (the gate lists them).

The per-session table (`compactlab.results.metrics.session_summary`, and its fast twin
`compactlab.results.summary_arrays`), the compaction frame and the gate's per-compaction values
(`compactlab.results.compaction_values`) and an older run's table (`compactlab.runs.run_format`: a
column it lacks is read as empty) are all made from the entries.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# How a session's rows give its value. "total": the sum, unknown when any row's is unknown (a call
# without a price); "sum_known": the sum of the known values, unknown when none is; "ratio": the sum of
# `value[0]` over the sum of `value[1]`, unknown without a `value[1]`.
PER_SESSION = ("size", "sum", "mean", "max", "min", "count", "total", "sum_known", "ratio")
SOURCES = ("calls", "compactions", "sessions")
ROWS = ("done", "failed", "fell_back")

Scores = Mapping[str, Any]  # a compaction's scores: {"k1": {...}, "k5": {...}}
RowValue = Callable[[Scores], float | None]


@dataclass(frozen=True)
class Metric:
    """One figure: its per-session column, how it is computed, and how every surface shows it."""

    name: str  # the column of the per-session table
    label: str  # what every surface calls it
    direction: str  # "higher" or "lower" is better, or "neither"
    kind: str  # "share" (a fraction shown as %), "dollars", "tokens", "count" (whole) or "number"
    tolerance: float  # a per-session change within this counts as no change (diff; the suite's default)
    description: str
    aggregate: str = "mean"  # over a setting's sessions: "mean" or "sum"
    # A share of a small baseline: the default tolerance is also this share of the baseline mean, the
    # stricter of the two applying (so a fall to zero, or by half, is never within tolerance).
    relative_tolerance: float | None = None
    source: str = "sessions"  # see the module docstring
    value: str | tuple[str, str] | Callable[..., Any] | None = None
    per_session: str = "mean"
    rows: str = "done"
    when_none: int | None = None
    lost: Callable[[Scores], Sequence[str]] | None = None
    # False: not a column of the per-session table (the per-kind preservation: the gate computes it
    # from the compaction values, and no other surface shows it).
    in_table: bool = True

    def __post_init__(self) -> None:
        if self.source not in SOURCES or self.per_session not in PER_SESSION or self.rows not in ROWS:
            raise ValueError(f"metric {self.name!r}: source, per_session or rows not one of {SOURCES}, {PER_SESSION}, {ROWS}")
        if self.source != "sessions" and self.value is None and self.per_session != "size":
            raise ValueError(f"metric {self.name!r}: a metric of the {self.source} rows needs its `value`")

    @property
    def per_compaction(self) -> bool:
        """A mean of one value per compaction: the CI gate then resamples the compactions within each
        session as well as the sessions (`compactlab.results.compaction_values`)."""
        return self.source == "compactions" and self.per_session == "mean" and self.rows == "done"

    @property
    def scored(self) -> bool:
        """Its per-row value is a function of a compaction's scores (flattened into a column of its name)."""
        return self.source == "compactions" and callable(self.value)

    @property
    def column(self) -> str:
        """The row column a session's value is made from (a scored metric's: the flattened one, its name)."""
        return self.name if self.scored else self.value  # type: ignore[return-value]

    @property
    def ratio_columns(self) -> tuple[str, str]:
        """A "ratio" metric's numerator and denominator columns."""
        numerator, denominator = self.value  # type: ignore[misc,str-unpack]
        return numerator, denominator

    def format(self, value: object, signed: bool = False) -> str:
        """The figure as every text surface prints it ('–' when it cannot be computed)."""
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return "–"
        value = float(value)  # type: ignore[arg-type]
        sign = "+" if signed else ""
        if self.kind == "share":
            return f"{100 * value:{sign}.1f}" + (" pp" if signed else "%")
        if self.kind == "dollars":
            return f"{value:{sign}.4f}"
        if self.kind in ("tokens", "count"):
            return f"{value:{sign},.0f}"
        return f"{value:{sign}.2f}"


# The per-row values of the compaction scores (`compactlab.scoring.compaction_scores`).


def score_of(k: str, key: str = "score") -> RowValue:
    """A score of the next `k` steps (`score`, or `summary_recall`), None where not applicable."""
    return lambda scores: _number(scores.get(k, {}).get(key))


def items_of(k: str, key: str) -> Callable[[Scores], Sequence[str]]:
    """The items a score of the next `k` steps lists under `key` ("lost", "summary_lost", ...)."""
    return lambda scores: tuple(scores.get(k, {}).get(key, ()))


def loss_of(k: str, key: str) -> RowValue:
    """A recoverability figure of the next `k` steps (`compactlab.scoring.recoverability`): the share
    of the needed items lost for good, or what getting the recoverable ones back costs. None where
    nothing was needed (not applicable, as preservation) or the row predates the split."""

    def value(scores: Scores) -> float | None:
        found = scores.get(k, {})
        needed = len(found.get("needed", []))
        if not needed or "lost_unrecoverable" not in found:
            return None
        return len(found["lost_unrecoverable"]) / needed if key == "lost_unrecoverable" else float(found[key])

    return value


def kind_score_of(k: str, kind: str) -> RowValue:
    """The share of the `kind` items the next `k` steps needed that were kept (None: none needed)."""

    def value(scores: Scores) -> float | None:
        found = scores.get(k, {})
        needed = sum(1 for item in found.get("needed", []) if item.split(":", 1)[0] == kind)
        return 1 - len(kind_items_of(k, kind)(scores)) / needed if needed else None

    return value


def kind_items_of(k: str, kind: str) -> Callable[[Scores], Sequence[str]]:
    """The `kind` items the next `k` steps needed that a compaction lost."""
    return lambda scores: tuple(item for item in scores.get(k, {}).get("lost", []) if item.split(":", 1)[0] == kind)


def _number(value: object) -> float | None:
    return None if value is None else float(value)  # type: ignore[arg-type]
