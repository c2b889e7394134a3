"""The regression rule of the CI gate: a suite's run compared with its baseline.

`check` runs the same suite and compares it with the baseline, per strategy and metric, on the
sessions both hold a value for. The regression rule, for a metric with tolerance t:

    d_i  = new_i − baseline_i for each shared session i, signed so that positive is better
           (−d_i for metrics where lower is better)
    [lo, hi] = the paired percentile-bootstrap interval of mean(d) (`paired_bootstrap`: the
           session is the resampled unit; `[gate]` confidence, resamples, seed)
    t_abs = t, or t × |baseline mean| when the metric is `relative`; with a `relative_tolerance` r
           too, the stricter: min(t_abs, r × |baseline mean|)
    regression   ⇔  hi < −t_abs    (the whole interval is worse than the tolerance)
    improvement  ⇔  lo > +t_abs

For a metric measured per compaction (`Metric.per_compaction`: next-step preservation, summary
recall) the baseline also keeps each compaction's value, and the interval is two-level
(`two_level_bootstrap`): sessions resampled, then the compactions within each drawn one. A
second interval holds the sessions and resamples only their compactions ("within sessions"):

    regression   ⇔  hi < −t_abs  or  hi_within < −t_abs
    improvement  ⇔  lo > +t_abs  or  lo_within > +t_abs      (when not a regression)

The within-sessions interval is what makes a change confined to a few long sessions visible: with
7 of 10 sessions unchanged, a resample of sessions draws none of the other 3 about 3% of the
time, so an interval over sessions alone always reaches 0 at 95%, however consistent the loss
at every compaction of those 3 sessions.

A metric where higher is better that falls to 0 from a non-zero baseline mean is a regression
whatever its tolerance and interval (`fell_to_zero`).

So a change that helps some sessions and hurts others by chance does not fail a build, and
neither does a consistent change smaller than the tolerance. A metric that had values in the
baseline and has none now (e.g. a strategy stopped compacting) also fails. Values within 1e-12
(relative) of the baseline count as unchanged, so float noise across platforms is no change.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from compactlab.gate.suite import MetricSpec, Suite
from compactlab.results.catalogue import BY_NAME
from compactlab.results.compaction_values import CompactionValue
from compactlab.scoring.statistics import SessionValues, paired_bootstrap, two_level_bootstrap

MAX_FLIPS_SHOWN = 10
EPSILON = 1e-12  # float noise below which two values are the same


@dataclass(frozen=True)
class Flip:
    session: str
    baseline: float
    new: float
    worse: bool


@dataclass(frozen=True)
class Comparison:
    label: str
    metric: MetricSpec
    baseline: float  # means over the shared sessions
    new: float
    change: float  # mean(new − baseline)
    low: float
    high: float
    n: int
    verdict: str  # regression | no values | worse | better | improved | ok | unchanged | n/a
    flips: tuple[Flip, ...] = ()
    missing: int = 0  # baseline sessions with a value that have none in the new run
    # Per-compaction metrics: the within-sessions interval (NaN otherwise) and the compactions compared.
    within_low: float = math.nan
    within_high: float = math.nan
    compactions: int = 0
    # Per flipped session (worse ones): the facts lost at its compactions that the baseline kept.
    lost_facts: tuple[tuple[str, tuple[str, ...]], ...] = ()


@dataclass
class Report:
    comparisons: list[Comparison]
    notes: list[str] = field(default_factory=list)
    suite: str = ""
    baseline: str = ""
    sessions: int = 0
    scope: list[str] = field(default_factory=list)  # what the check could and could not detect
    unmeasured: list[str] = field(default_factory=list)  # why it is no result (`compactlab.gate.measured`)
    power: list[str] = field(default_factory=list)  # what losses the suite detects (`compactlab.gate.power`)
    cannot_tell: list[str] = field(default_factory=list)  # prompt changes no guarded figure saw

    @property
    def regressions(self) -> list[Comparison]:
        return [c for c in self.comparisons if c.verdict in ("regression", "no values")]


def compaction_document(suite: Suite, values: list[CompactionValue]) -> dict:
    """label -> metric -> session -> [[at, value, [lost items]], ...] for the guarded per-compaction metrics."""
    guarded = {m.name for m in suite.metrics if BY_NAME[m.name].per_compaction}
    document: dict = {s.label: {name: {} for name in sorted(guarded)} for s in suite.config.strategies}
    for v in sorted(values, key=lambda v: (v.setting, v.metric, v.session, v.at)):
        if v.metric in guarded and v.setting in document:
            document[v.setting][v.metric].setdefault(v.session, []).append([v.at, v.value, sorted(v.lost)])
    return document


def compare(suite: Suite, baseline: dict, table: pd.DataFrame, values: list[CompactionValue] | None = None) -> Report:
    """The suite's run (`table`, and `values`: its per-compaction values) against the baseline.
    Per-compaction metrics get the two-level rule where both sides have compaction values (a
    baseline written before they were kept gets the rule over sessions alone)."""
    report = Report([], suite=str(suite.path), sessions=int(table["session"].nunique()) if not table.empty else 0)
    new_compactions = compaction_document(suite, values or [])
    for strategy in suite.config.strategies:
        rows = table[table["setting"] == strategy.label].set_index("session") if not table.empty else pd.DataFrame()
        for metric in suite.metrics:
            old = {t: v for t, v in baseline["values"][strategy.label][metric.name].items() if v is not None}
            new = {t: _number(v) for t, v in rows[metric.name].items()} if metric.name in rows else {}
            new = {t: v for t, v in new.items() if v is not None}
            old_points = baseline.get("compactions", {}).get(strategy.label, {}).get(metric.name)
            new_points = new_compactions.get(strategy.label, {}).get(metric.name)
            points = (old_points, new_points) if old_points is not None and values is not None else None
            report.comparisons.append(_compare(strategy.label, metric, old, new, suite, points))
    return report


def _compare(
    label: str, metric: MetricSpec, old: dict, new: dict, suite: Suite, points: tuple[dict, dict] | None = None
) -> Comparison:
    shared = sorted(set(old) & set(new))
    missing = len(set(old) - set(new))
    if not shared:
        verdict = "no values" if old else "n/a"
        return Comparison(
            label, metric, mean_of(old.values()), mean_of(new.values()), math.nan, math.nan, math.nan, 0, verdict, (), missing
        )
    b = np.array([old[t] for t in shared])
    a = np.array([new[t] for t in shared])
    a = np.where(np.abs(a - b) <= EPSILON * np.maximum(1.0, np.abs(b)), b, a)  # float noise is no change
    paired = paired_bootstrap(a, b, resamples=suite.resamples, seed=suite.seed, confidence=suite.confidence)
    low, high, within, compactions = paired.low, paired.high, (math.nan, math.nan), 0
    if points is not None:
        sessions = [_session(points[0].get(t, []), points[1].get(t, [])) for t in shared]
        two = two_level_bootstrap(
            sessions, resamples=suite.resamples, seed=suite.seed, confidence=suite.confidence, epsilon=EPSILON
        )
        if two.n == len(shared):  # every shared session has its compactions on both sides
            low, high, within, compactions = two.low, two.high, (two.within_low, two.within_high), two.compactions
    allowed = metric.allowed(float(b.mean()))
    intervals = [sorted((metric.gain(low), metric.gain(high)))]
    if not math.isnan(within[0]):
        intervals.append(sorted((metric.gain(within[0]), metric.gain(within[1]))))
    if np.array_equal(a, b):
        verdict = "unchanged"
    elif fell_to_zero(metric, float(b.mean()), float(a.mean())) or any(gains[1] < -allowed for gains in intervals):
        verdict = "regression"
    elif any(gains[0] > allowed for gains in intervals):
        verdict = "improved"
    elif any(gains[1] < 0 for gains in intervals):
        verdict = "worse"  # an interval excludes no change, but not the tolerance
    elif any(gains[0] > 0 for gains in intervals):
        verdict = "better"
    else:
        verdict = "ok"
    flips = []
    for session, x, y in zip(shared, a, b):
        change = x - y
        if change != 0 and abs(change) > metric.allowed(y):
            flips.append(Flip(session, float(y), float(x), worse=metric.gain(change) < 0))
    flips.sort(key=lambda f: metric.gain(f.new - f.baseline))  # worst first
    # The rule judges per-session means; a metric the catalogue adds up is shown as its total, as everywhere.
    scale = len(shared) if BY_NAME[metric.name].aggregate == "sum" else 1
    lost = (
        tuple((f.session, _newly_lost(points[0].get(f.session, []), points[1].get(f.session, []))) for f in flips if f.worse)
        if points is not None
        else ()
    )
    return Comparison(
        label,
        metric,
        scale * float(b.mean()),
        scale * float(a.mean()),
        scale * paired.mean_diff,
        scale * low,
        scale * high,
        paired.n,
        verdict,
        tuple(flips),
        missing,
        scale * within[0],
        scale * within[1],
        compactions,
        tuple((t, items) for t, items in lost if items),
    )


def fell_to_zero(metric: MetricSpec, baseline: float, new: float) -> bool:
    """A metric where higher is better that fell to 0 from a non-zero baseline: lost whatever it held,
    a regression whatever the tolerance (and however few the sessions)."""
    return metric.direction == "higher" and baseline > EPSILON and abs(new) <= EPSILON


def _session(old: list, new: list) -> SessionValues:
    """A session's compaction values on both sides (`compaction_document` entries)."""
    return SessionValues(
        tuple(p[0] for p in old),
        np.array([p[1] for p in old], dtype=float),
        tuple(p[0] for p in new),
        np.array([p[1] for p in new], dtype=float),
    )


def _newly_lost(old: list, new: list) -> tuple[str, ...]:
    """The facts lost at the new run's compactions that the baseline did not lose at the same point
    (at any of its points, where the points differ)."""
    before = {p[0]: set(p[2]) for p in old}
    anywhere = set().union(*before.values()) if before else set()
    found = [item for at, _, items in new for item in items if item not in before.get(at, anywhere)]
    return tuple(dict.fromkeys(found))


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) or math.isinf(number) else number


def mean_of(values) -> float:
    values = [v for v in values if v is not None]
    return float(np.mean(values)) if values else math.nan


def fmt(value: float) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.4g}"
