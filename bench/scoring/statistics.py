"""Uncertainty for strategy comparisons: bootstrap intervals, paired tests, Pareto frontier.

(The recommendation rule that reads them is `compactlab.results.recommendation`.)

The unit of every resample is the session. Calls and compaction events inside one session are
strongly correlated, so resampling them would pretend to far more evidence than there is; rows
that share a session are averaged first. Everything is deterministic given `seed` (numpy's
`default_rng`) and vectorised: one matrix of resampled session indices serves all resamples.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from itertools import combinations

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

# Most elements in one (resamples × n) index block: memory stays bounded however many sessions.
_BLOCK_ELEMENTS = 4_000_000


@dataclass(frozen=True)
class Interval:
    """A mean with its percentile-bootstrap interval over `n` values; `dropped` NaN values were left out."""

    mean: float
    low: float
    high: float
    n: int
    dropped: int = 0


@dataclass(frozen=True)
class PairedResult:
    """Mean of a−b over `n` shared sessions, its interval and two-sided bootstrap p-value."""

    mean_diff: float
    low: float
    high: float
    p_value: float
    n: int
    dropped: int = 0


def _resampled_means(values: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Means of `resamples` with-replacement resamples of the rows of `values` (shape n, or n × k).

    All k columns share the same resampled sessions, so one draw serves many paired comparisons.
    """
    n = values.shape[0]
    rows = max(1, _BLOCK_ELEMENTS // n)
    blocks = []
    for start in range(0, resamples, rows):
        idx = rng.integers(0, n, size=(min(rows, resamples - start), n))
        if values.ndim == 1:
            blocks.append(values[idx].mean(axis=1))
        else:  # how often each session was drawn, then one matrix product for all k columns
            counts = np.bincount((idx + n * np.arange(len(idx))[:, None]).ravel(), minlength=idx.size)
            blocks.append(counts.reshape(idx.shape) @ values / n)
    return np.concatenate(blocks)


def _means_by_length(vectors: Sequence[np.ndarray], resamples: int, seed: int) -> list[np.ndarray | None]:
    """Resample means of each vector: exactly what it would get alone from `default_rng(seed)`.

    The draw of session positions depends only on the seed and the length, so vectors of equal
    length share one draw and one matrix product: 20 strategies or 190 pairs cost a few draws, not
    hundreds. None for vectors shorter than 2: there is nothing to resample.
    """
    out: list[np.ndarray | None] = [None] * len(vectors)
    by_length: dict[int, list[int]] = {}
    for i, v in enumerate(vectors):
        if len(v) >= 2:
            by_length.setdefault(len(v), []).append(i)
    for members in by_length.values():
        stacked = vectors[members[0]] if len(members) == 1 else np.column_stack([vectors[i] for i in members])
        means = _resampled_means(stacked, resamples, np.random.default_rng(seed))
        for j, i in enumerate(members):
            out[i] = means if means.ndim == 1 else means[:, j]
    return out


def _check(resamples: int, confidence: float) -> None:
    if resamples < 1 or not 0 < confidence < 1:
        raise ValueError(f"need resamples ≥ 1 and 0 < confidence < 1, got {resamples} and {confidence}")


def bootstrap_ci(values: ArrayLike, resamples: int = 10_000, confidence: float = 0.95, seed: int = 0) -> Interval:
    """Percentile-bootstrap interval of the mean of per-session `values`.

    NaN values are dropped and counted in `Interval.dropped`. With fewer than two values there is
    no spread to resample: low = high = mean (all three NaN when nothing is left).
    """
    _check(resamples, confidence)
    x = np.asarray(values, dtype=float).ravel()
    kept = x[~np.isnan(x)]
    return _interval(kept, _means_by_length([kept], resamples, seed)[0], len(x) - len(kept), confidence)


def _interval(x: np.ndarray, means: np.ndarray | None, dropped: int, confidence: float) -> Interval:
    """The Interval of NaN-free `x` from its resample means (None when len(x) < 2)."""
    if len(x) == 0:
        return Interval(np.nan, np.nan, np.nan, 0, dropped)
    mean = float(x.mean())
    if means is None:
        return Interval(mean, mean, mean, len(x), dropped)
    # Percentile interval: the central `confidence` share of the resample means.
    low, high = np.quantile(means, [(1 - confidence) / 2, (1 + confidence) / 2])
    return Interval(mean, float(low), float(high), len(x), dropped)


def paired_bootstrap(
    a: ArrayLike, b: ArrayLike, resamples: int = 10_000, seed: int = 0, confidence: float = 0.95
) -> PairedResult:
    """Paired bootstrap of mean(a − b), where a[i] and b[i] are two strategies on session i.

    Pairs with a NaN on either side are dropped and counted. Session indices are resampled
    with replacement, so each session's own difficulty cancels out of every difference.
    The p-value is the standard two-sided bootstrap test of "mean difference is zero"
    (Efron & Tibshirani, ch. 16): shift the differences to mean zero (d − mean(d)), resample,
    p = (#{|resampled mean| ≥ |observed mean|} + 1) / (resamples + 1). The shifted resample means
    are the ordinary resample means minus mean(d), so one set of resamples serves both the
    interval and the test. With fewer than two pairs nothing can be tested: p is NaN.
    """
    _check(resamples, confidence)
    x, y = np.asarray(a, dtype=float).ravel(), np.asarray(b, dtype=float).ravel()
    if x.shape != y.shape:
        raise ValueError(f"a and b must be aligned per session, got lengths {len(x)} and {len(y)}")
    keep = ~(np.isnan(x) | np.isnan(y))
    d = x[keep] - y[keep]
    return _paired_result(d, _means_by_length([d], resamples, seed)[0], int((~keep).sum()), confidence)


def _paired_result(d: np.ndarray, means: np.ndarray | None, dropped: int, confidence: float) -> PairedResult:
    """Interval and p-value from the differences `d` and their resample means (None when len(d) < 2)."""
    ci = _interval(d, means, dropped, confidence)
    if means is None:  # fewer than two pairs: no test
        return PairedResult(ci.mean, ci.low, ci.high, np.nan, ci.n, dropped)
    # Tiny relative slack: a resample that ties |observed| must count even after rounding noise.
    extreme = np.abs(means - ci.mean) >= abs(ci.mean) * (1 - 1e-9)
    p = (int(extreme.sum()) + 1) / (len(means) + 1)
    return PairedResult(ci.mean, ci.low, ci.high, p, ci.n, dropped)


def holm_adjust(p_values: ArrayLike) -> np.ndarray:
    """Holm–Bonferroni adjusted p-values (same order as given; NaN stays NaN and is not counted).

    The k-th smallest of m p-values is multiplied by (m − k + 1), then made non-decreasing and
    capped at 1. Rejecting where adjusted p < α keeps the chance of any false "significant"
    among all m comparisons at most α, which plain p < α does not once many pairs are tested.
    """
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    valid = np.flatnonzero(~np.isnan(p))
    order = valid[np.argsort(p[valid], kind="stable")]
    m = len(order)
    scaled = p[order] * (m - np.arange(m))
    out[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
    return out


def _per_unit(frame: pd.DataFrame, columns: Sequence[str], strategy_col: str, unit_col: str) -> pd.DataFrame:
    """One row per (strategy, session): several rows of one session are averaged, not resampled apart.

    Strategies stay in order of first appearance; sessions are sorted by id, because resamples
    pick rows by position and the result must not depend on the order of the input rows.
    """
    missing = [c for c in (strategy_col, unit_col, *columns) if c not in frame.columns]
    if missing:
        raise ValueError(f"missing columns: {', '.join(missing)}")
    keys = [strategy_col, unit_col]
    if not frame.duplicated(keys).any():  # one row per unit: its mean is its value, so read as numbers it is the same
        frame = _as_numbers(frame, columns)
    units = frame.groupby(keys, sort=False)[list(columns)].mean().reset_index()
    rank = {name: i for i, name in enumerate(units[strategy_col].unique())}
    by = [strategy_col, unit_col]
    return units.sort_values(by, key=lambda c: c.map(rank) if c.name == strategy_col else c, kind="stable")


def _as_numbers(frame: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """`frame` with its object `columns` of numbers and None as floats: pandas averages an object
    column group by group in Python (a sweep's cost columns, None where a model has no price, took
    a second of its statistics); with one row per group the floats' means are the same values."""
    converted = {}
    for column in columns:
        if frame[column].dtype == object:
            try:
                converted[column] = frame[column].astype(float)
            except (TypeError, ValueError):  # not numbers: left for pandas to refuse as it would
                continue
    return frame.assign(**converted) if converted else frame


def summarize_by_strategy(
    frame: pd.DataFrame,
    value_columns: Sequence[str],
    strategy_col: str = "strategy",
    unit_col: str = "session",
    resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per strategy (in order of appearance): `<col>_mean`, `<col>_low`, `<col>_high`
    and `<col>_n` (sessions with a value) for each value column, plus `sessions`.

    Each cell equals `bootstrap_ci` of that strategy's per-session values with the same seed.
    """
    _check(resamples, confidence)
    units = _per_unit(frame, value_columns, strategy_col, unit_col)
    groups = list(units.groupby(strategy_col, sort=False))
    # Every (strategy, column) at once, so that those of equal length share one resampling.
    cells = [group[col].to_numpy(dtype=float) for _, group in groups for col in value_columns]
    kept = [x[~np.isnan(x)] for x in cells]
    means = _means_by_length(kept, resamples, seed)
    intervals = iter([_interval(k, m, len(x) - len(k), confidence) for x, k, m in zip(cells, kept, means)])
    rows = []
    for strategy, group in groups:
        row: dict = {strategy_col: strategy, "sessions": len(group)}
        for col in value_columns:
            ci = next(intervals)
            row |= {f"{col}_mean": ci.mean, f"{col}_low": ci.low, f"{col}_high": ci.high, f"{col}_n": ci.n}
        rows.append(row)
    return pd.DataFrame(rows)


def pairwise_comparisons(
    frame: pd.DataFrame,
    value_column: str,
    baseline: str | None = None,
    strategy_col: str = "strategy",
    unit_col: str = "session",
    resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """Paired comparisons on the sessions both strategies share: every pair, or each vs `baseline`.

    Columns: strategy_a, strategy_b, mean_diff (a − b), low, high, p_value, p_holm, n, dropped
    (sessions only one of the two has), significant. `significant` is p_holm < alpha: with
    20 strategies there are 190 pairs, and raw p < 0.05 would flag about 10 of them by chance alone.
    Each row equals `paired_bootstrap` of the two strategies alone with the same seed.
    """
    _check(resamples, confidence)
    units = _per_unit(frame, [value_column], strategy_col, unit_col)
    wide = units.pivot(index=unit_col, columns=strategy_col, values=value_column)
    strategies = list(units[strategy_col].unique())
    if baseline is None:
        pairs = list(combinations(strategies, 2))
    elif baseline not in strategies:
        raise ValueError(f"baseline {baseline!r} is not among the strategies: {', '.join(map(str, strategies))}")
    else:
        pairs = [(s, baseline) for s in strategies if s != baseline]
    diffs, dropped = [], []
    for first, second in pairs:  # each pair on the sessions both strategies have a value for
        x, y = wide[first].to_numpy(dtype=float), wide[second].to_numpy(dtype=float)
        keep = ~(np.isnan(x) | np.isnan(y))
        diffs.append(x[keep] - y[keep])
        dropped.append(int((~keep).sum()))
    means = _means_by_length(diffs, resamples, seed)
    rows = [
        {"strategy_a": first, "strategy_b": second, **asdict(_paired_result(d, m, k, confidence))}
        for (first, second), d, m, k in zip(pairs, diffs, means, dropped)
    ]
    columns = ["strategy_a", "strategy_b", "mean_diff", "low", "high", "p_value", "n", "dropped"]
    result = pd.DataFrame(rows, columns=columns)
    result.insert(6, "p_holm", holm_adjust(result["p_value"].to_numpy()))
    result["significant"] = result["p_holm"] < alpha  # NaN (too few shared sessions) → False
    return result


def pareto_frontier(points: pd.DataFrame, maximize: Sequence[str] = ("tokens_removed", "preservation")) -> pd.DataFrame:
    """The rows no other row dominates (≥ on every objective, > on one), ascending by the first objective.

    Identical rows do not dominate each other, so duplicates are all kept. Rows with NaN in an
    objective are never on the frontier; their index labels are in `result.attrs["nan_rows"]`.
    The original index is kept, so frontier rows can be traced back to `points`.
    """
    objectives = list(maximize)
    missing = [c for c in objectives if c not in points.columns]
    if not objectives or missing:
        raise ValueError(f"objectives must be columns of points; missing: {', '.join(missing) or 'none given'}")
    values = points[objectives].to_numpy(dtype=float)
    has_nan = np.isnan(values).any(axis=1)
    v = values[~has_nan]
    # [i, j] is True where row j is ≥ row i on every objective and > on at least one: j dominates i.
    dominates = (v[None, :, :] >= v[:, None, :]).all(axis=2) & (v[None, :, :] > v[:, None, :]).any(axis=2)
    frontier = points[~has_nan][~dominates.any(axis=1)].sort_values(objectives[0], kind="stable")
    frontier.attrs["nan_rows"] = list(points.index[has_nan])
    return frontier


@dataclass(frozen=True)
class SessionValues:
    """One session's per-compaction values in two runs: `at` names each compaction's point (its
    message index), so the same points pair up; `old` and `new` are aligned with their `at`s."""

    old_at: tuple[int, ...]
    old: np.ndarray
    new_at: tuple[int, ...]
    new: np.ndarray


@dataclass(frozen=True)
class TwoLevelResult:
    """mean over sessions of (mean new − mean old) over each session's compactions, with two intervals.

    `low`/`high`: across sessions, two levels: sessions resampled, then the compactions of each
    drawn session. `within_low`/`within_high`: within sessions: the sessions held fixed, their
    compactions resampled; it asks whether the change is consistent at the compactions of the
    sessions it touched, however few they are."""

    mean_diff: float
    low: float
    high: float
    within_low: float
    within_high: float
    n: int  # sessions
    compactions: int  # compactions of the new run over those sessions


def _session_draws(session: SessionValues, resamples: int, rng: np.random.Generator, epsilon: float) -> np.ndarray:
    """`resamples` resampled values of one session's mean(new) − mean(old): the paired differences
    resampled together where both runs compacted at the same points, else each run's own."""
    if session.old_at == session.new_at:
        d = session.new - session.old
        d = np.where(np.abs(d) <= epsilon * np.maximum(1.0, np.abs(session.old)), 0.0, d)
        if not d.any():  # unchanged: no spread to draw
            return np.zeros(resamples)
        return d[rng.integers(0, len(d), size=(resamples, len(d)))].mean(axis=1)
    draws = [
        values[rng.integers(0, len(values), size=(resamples, len(values)))].mean(axis=1) for values in (session.new, session.old)
    ]
    return draws[0] - draws[1]


def two_level_bootstrap(
    sessions: Sequence[SessionValues], resamples: int = 10_000, seed: int = 0, confidence: float = 0.95, epsilon: float = 1e-12
) -> TwoLevelResult:
    """The two-level (hierarchical) percentile bootstrap of a change measured per compaction.

    A session's figure is the mean over its compactions, and a setting's the mean over sessions, so
    both levels vary: which sessions the suite holds, and which compaction points each one had.
    Each session gets `resamples` draws of its own mean change (its compactions resampled with
    replacement; paired where both runs compacted at the same points). Within sessions: the r-th
    resample is the mean over sessions of their r-th draws. Across sessions: the sessions are
    resampled too, and each session drawn takes its own draw (row r + position, so one session
    drawn twice in a resample gets two draws). Sessions need values on both sides."""
    _check(resamples, confidence)
    sessions = [s for s in sessions if len(s.old) and len(s.new)]
    n = len(sessions)
    if n == 0:
        return TwoLevelResult(np.nan, np.nan, np.nan, np.nan, np.nan, 0, 0)
    observed = float(np.mean([s.new.mean() - s.old.mean() for s in sessions]))
    rng = np.random.default_rng(seed)
    draws = np.column_stack([_session_draws(s, resamples, rng, epsilon) for s in sessions])  # resamples × sessions
    quantiles = [(1 - confidence) / 2, (1 + confidence) / 2]
    within_low, within_high = np.quantile(draws.mean(axis=1), quantiles)
    picked = rng.integers(0, n, size=(resamples, n))
    rows = (np.arange(resamples)[:, None] + np.arange(n)[None, :]) % resamples
    low, high = np.quantile(draws[rows, picked].mean(axis=1), quantiles) if n > 1 else (within_low, within_high)
    return TwoLevelResult(
        observed, float(low), float(high), float(within_low), float(within_high), n, int(sum(len(s.new) for s in sessions))
    )
