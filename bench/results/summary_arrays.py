"""`session_summary` on arrays: the same rows, to the bit, without a pandas groupby or join.

`compactlab.results.metrics.session_summary` is the definition (each catalogue entry's rule as a
groupby aggregation, over the calls and over the compactions, and joins); a worker computes it for every session it
replays, where the frames are small and pandas' machinery costs more than the arithmetic. This
computes the same table from the columns' arrays: rows ordered by session × setting once
(stable, so each group keeps its row order), then every aggregation as one pass over the
ordered arrays. Float sums and means are made as pandas' grouped `sum` and `mean` make them, so the
figures agree to the last bit: where the rows come grouped already (group numbers never decrease)
and no value is NaN, `np.add.reduceat` over each group; otherwise compensated (Kahan) sums in row
order skipping NaN. Both are made from the same entries (`compactlab.results.metric.Metric`), so a
new metric needs no line here; `tests/results/test_summary_arrays.py` holds the two to equality on
real replays.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from compactlab.contract import fell_back
from compactlab.results.metric import Metric
from compactlab.results.metrics import _MEASURED, CALL_METRICS, COMPACTION_METRICS, cost_model_rows, with_derived

_REDUCE = {"sum": np.add, "max": np.maximum, "min": np.minimum}


class _Groups:
    """Rows of a frame by group: numbered 0..n-1 in the order the pairs sort, each group's rows in their order."""

    def __init__(self, numbers: np.ndarray, count: int) -> None:
        self.grouped = bool(np.all(numbers[1:] >= numbers[:-1]))  # rows already in group order
        self.order = np.argsort(numbers, kind="stable")
        self.count = count
        self.sizes = np.bincount(numbers, minlength=count)
        self.starts = np.concatenate(([0], np.cumsum(self.sizes)[:-1]))

    def ordered(self, values: np.ndarray) -> np.ndarray:
        return values[self.order]

    def reduce(self, ufunc: np.ufunc, values: np.ndarray) -> np.ndarray:
        """`ufunc` over each group (for groups that all have rows: reduceat cannot reduce an empty one)."""
        return ufunc.reduceat(self.ordered(values), self.starts)

    def sum_and_count(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each group's sum of its values that are not NaN, and how many those are, as pandas' grouped
        sum makes it (see the module docstring; an empty group sums to 0)."""
        ordered = self.ordered(values.astype(float))
        nan = np.isnan(ordered)
        if self.grouped and not nan.any():
            total = np.zeros(self.count)
            has = self.sizes > 0
            if has.any():
                total[has] = np.add.reduceat(ordered, self.starts[has])
            return total, self.sizes.astype(np.int64)
        total, compensation = np.zeros(self.count), np.zeros(self.count)
        counts = np.zeros(self.count, dtype=np.int64)
        positions = np.arange(self.count)
        for step in range(int(self.sizes.max()) if self.count else 0):
            live = positions[self.sizes > step]
            value = ordered[self.starts[live] + step]
            known = ~np.isnan(value)
            live, value = live[known], value[known]
            y = value - compensation[live]
            t = total[live] + y
            correction = (t - total[live]) - y
            compensation[live] = np.where(np.isnan(correction), 0.0, correction)  # (an infinite value: pandas' GH#53606)
            total[live] = t
            counts[live] += 1
        return total, counts


def summary_from_arrays(
    calls: pd.DataFrame, compactions: pd.DataFrame, groups: tuple[np.ndarray, list[tuple[str, str]]] | None = None
) -> pd.DataFrame:
    """`compactlab.results.metrics.session_summary(calls, compactions, groups)`, computed on arrays."""
    if calls.empty:
        return pd.DataFrame()
    numbers, pairs = groups if groups is not None else _numbered(calls["session"], calls["setting"])
    by = _Groups(np.asarray(numbers), len(pairs))
    table: dict[str, object] = {"session": [p[0] for p in pairs], "setting": [p[1] for p in pairs]}
    floors = {"floor_tokens": _floors(by, calls["full_tokens"].to_numpy())}  # (the per-call floor of session_summary)
    for entry in CALL_METRICS:
        if entry.per_session == "size":
            table[entry.name] = by.sizes.astype(np.int64)
            continue
        values = floors[entry.column] if entry.column in floors else calls[entry.column].to_numpy()
        if entry.per_session == "total":
            total, known = by.sum_and_count(values)
            table[entry.name] = np.where(known == by.sizes, total, np.nan)  # unknown when any call's is
        else:
            table[entry.name] = by.reduce(_REDUCE[entry.per_session], values.astype(np.int64) if values.dtype == bool else values)
    if not compactions.empty:
        table.update(_compaction_columns(compactions, {pair: number for number, pair in enumerate(pairs)}, len(pairs)))
    else:
        for entry in COMPACTION_METRICS:  # no compaction: 0 where it counts, else no value
            none = entry.when_none
            table[entry.name] = np.full(len(pairs), np.nan) if none is None else np.full(len(pairs), none, dtype=np.int64)
    return with_derived(pd.DataFrame(table)[_MEASURED])


def _numbered(sessions: pd.Series, settings: pd.Series) -> tuple[np.ndarray, list[tuple[str, str]]]:
    """Each row's session × setting numbered in the order the pairs sort (as a groupby sorts its keys)."""
    keys = list(zip(sessions.tolist(), settings.tolist()))
    pairs = sorted(set(keys))
    number = {pair: n for n, pair in enumerate(pairs)}
    return np.fromiter((number[k] for k in keys), dtype=np.intp, count=len(keys)), pairs


def _floors(by: _Groups, full: np.ndarray) -> np.ndarray:
    """`compactlab.results.metrics.smallest_prompts`, in the rows' order: the session's smallest prompt
    plus how far each call's prompt grew past every earlier prompt of its group."""
    ordered = by.ordered(full).astype(float)
    floors = np.empty(len(ordered))
    for start, size in zip(by.starts.tolist(), by.sizes.tolist()):
        own = ordered[start : start + size]
        before = np.maximum.accumulate(own)[:-1]
        step = np.concatenate(([0.0], np.clip(own[1:] - before, 0, None)))
        floors[start : start + size] = own.min() + step
    result = np.empty(len(ordered))
    result[by.order] = floors
    return result


def _compaction_columns(compactions: pd.DataFrame, number: dict[tuple[str, str], int], count: int) -> dict[str, np.ndarray]:
    """The compaction figures of each session × setting (a group without such compaction rows gets what
    `session_summary`'s joins leave there: NaN, or 0 where it counts)."""
    rows = np.fromiter(
        (number[pair] for pair in zip(compactions["session"].tolist(), compactions["setting"].tolist())), dtype=np.intp
    )
    failed = compactions["failed"].notna().to_numpy()
    masks = {"done": ~failed, "failed": failed}
    masks["fell_back"] = ~failed & compactions["note"].map(fell_back).to_numpy(dtype=bool)
    columns: dict[str, np.ndarray] = {}
    for kind, mask in masks.items():
        entries = [entry for entry in COMPACTION_METRICS if entry.rows == kind]
        if entries:
            columns.update(_columns_of(compactions, entries, rows, mask, count))
    return columns


def _columns_of(
    compactions: pd.DataFrame, entries: list[Metric], rows: np.ndarray, mask: np.ndarray, count: int
) -> dict[str, np.ndarray]:
    """The `entries`' figures over the compaction rows `mask` selects."""
    groups = _Groups(rows[mask], count)  # (a group without rows sums to 0 of 0 values)
    present = groups.sizes > 0  # groups the joined groupby holds

    def sums(column: str) -> tuple[np.ndarray, np.ndarray]:
        values = pd.to_numeric(compactions[column], errors="coerce").to_numpy(dtype=float)[mask]
        return groups.sum_and_count(values)

    columns: dict[str, np.ndarray] = {}
    for entry in entries:
        name, rule = entry.name, entry.per_session
        if rule == "size":
            columns[name] = groups.sizes.astype(np.int64)
        elif rule == "ratio":
            numerator, denominator = entry.ratio_columns
            (dropped, _), (carried, known) = sums(numerator), sums(denominator)
            with np.errstate(invalid="ignore", divide="ignore"):
                columns[name] = np.where(present & (known > 0), dropped / carried, np.nan)
        else:
            total, known = sums(entry.column)
            if rule == "mean":
                with np.errstate(invalid="ignore", divide="ignore"):
                    columns[name] = np.where(known > 0, total / np.maximum(known, 1), np.nan)
            elif rule == "sum_known":
                columns[name] = np.where(present & (known > 0), total, np.nan)
                if compactions[entry.column].dtype == object:  # no value anywhere (None): pandas' sum keeps the objects
                    columns[name] = columns[name].astype(object)
            elif rule == "count" and entry.when_none is None:
                columns[name] = known if present.all() else np.where(present, known, np.nan)
            elif rule == "count":
                columns[name] = known
            elif rule == "sum" and entry.when_none is not None:
                columns[name] = total.astype(np.int64)
            else:
                raise ValueError(f"metric {name!r}: no array rule for {rule!r} over compactions (add one beside the plain one)")
    return columns


class Columns:
    """Call rows as columns of arrays, read as a frame's columns are (each a `pd.Series` over the
    array, made when asked, without a copy): what `summary_from_arrays`, `derived_call_columns` and
    `cost_model_check_arrays` read, so a session's rows need no frame unless a real compaction's
    figures look rows up (`compactlab.runs.session_results`)."""

    def __init__(self, arrays: dict[str, object]) -> None:
        self.arrays = arrays

    def __getitem__(self, name: str) -> pd.Series:
        return pd.Series(self.arrays[name], copy=False)

    def __contains__(self, name: object) -> bool:
        return name in self.arrays

    def __len__(self) -> int:
        return len(self.arrays["call"])  # type: ignore[arg-type]

    @property
    def empty(self) -> bool:
        return not len(self)


def cost_model_check_arrays(calls: Columns, sessions: tuple[np.ndarray, list], sessions_read) -> pd.DataFrame:
    """`compactlab.results.metrics.cost_model_check(frame, sessions_read)` from the columns, the
    session column as codes into its names: its baseline (each session × call's first row) found on
    the codes, not by a frame's drop_duplicates and groupby. `cost_model_check` is the definition."""
    codes, names = sessions
    call = np.asarray(calls.arrays["call"], dtype=np.int64)
    if not len(call):
        return pd.DataFrame()
    first = first_rows(np.asarray(codes), call)  # the rows drop_duplicates keeps
    read = np.asarray(calls.arrays["full_prefix_tokens"])[first]
    cost = np.asarray(calls.arrays["cost_full"])[first]
    of_session = np.asarray(codes)[first]
    groups = []
    for name in sorted(set(names)):  # by session, as groupby sorts them
        rows = np.flatnonzero(of_session == names.index(name))
        if len(rows):
            groups.append((name, read[rows], cost[rows].tolist()))
    return cost_model_rows(groups, sessions_read)


def first_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The positions of the first row of each distinct (a, b) pair, in row order (the rows a frame's
    `drop_duplicates` keeps); `a` and `b`: non-negative integers (codes, call numbers)."""
    key = a.astype(np.int64) * (int(b.max(initial=0)) + 1) + b.astype(np.int64)
    return np.sort(np.unique(key, return_index=True)[1])
