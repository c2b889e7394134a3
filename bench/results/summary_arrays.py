"""`session_summary` on arrays: the same rows, to the bit, without a pandas groupby or join.

`compactlab.results.metrics.session_summary` is the definition (a groupby with its aggregations,
a second one over the compactions, three joins); a worker computes it for every session it
replays, where the frames are small and pandas' machinery costs more than the arithmetic. This
computes the same table from the columns' arrays: rows ordered by session × setting once
(stable, so each group keeps its row order), then every aggregation as one pass over the
ordered arrays. Float sums and means are made as pandas' grouped `sum` and `mean` make them, so the
figures agree to the last bit: where the rows come grouped already (group numbers never decrease)
and no value is NaN, `np.add.reduceat` over each group; otherwise compensated (Kahan) sums in row
order skipping NaN. `tests/results/test_summary_arrays.py` holds the two to equality on real replays.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from compactlab.contract import fell_back
from compactlab.results.metrics import LOSS_COLUMNS, with_derived

# The means over a setting's compactions, by column of the sessions table and of the compactions frame.
_MEANS = {
    "preservation_k1": "k1_score",
    "preservation_k5": "k5_score",
    "summary_recall_k1": "k1_recall",
    "summary_recall_k5": "k5_recall",
    **{column: column for column in LOSS_COLUMNS},
}


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
    full, context = calls["full_tokens"].to_numpy(), calls["context_tokens"].to_numpy()
    table: dict[str, object] = {
        "session": [p[0] for p in pairs],
        "setting": [p[1] for p in pairs],
        "calls": by.sizes.astype(np.int64),
        "noop_compactions": by.reduce(np.add, calls["noop_before"].to_numpy()),
        "peak_full": by.reduce(np.maximum, full),
        "peak_context": by.reduce(np.maximum, context),
        "billed_full": by.reduce(np.add, full),
        "billed_context": by.reduce(np.add, context),
        "over_window_calls": by.reduce(np.add, calls["over_window"].to_numpy().astype(np.int64)),
        "fixed_tokens": by.reduce(np.minimum, full),
        "floor_tokens": by.reduce(np.maximum, _floors(by, full)),
        "window": by.reduce(np.maximum, calls["window"].to_numpy()),
    }
    for column in ("cost_full", "cost_context"):
        total, known = by.sum_and_count(calls[column].to_numpy())
        table[column] = np.where(known == by.sizes, total, np.nan)  # unknown when any call's is
    if not compactions.empty:
        table.update(_compaction_columns(compactions, {pair: number for number, pair in enumerate(pairs)}, len(pairs)))
    else:
        for column in ("compactions", "failed_compactions", "fallback_compactions"):
            table[column] = np.zeros(len(pairs), dtype=np.int64)
        for column in ("summarizer_input_tokens", "summarizer_output_tokens", "summary_pairs"):
            table[column] = np.zeros(len(pairs), dtype=np.int64)
        for column in ("summarizer_cost", "preservation_k1", "preservation_k5", "summary_recall_k1", "summary_recall_k5"):
            table[column] = np.full(len(pairs), np.nan)
        table["summary_drift"] = np.full(len(pairs), np.nan)
        for column in LOSS_COLUMNS:
            table[column] = np.full(len(pairs), np.nan)
    summary = pd.DataFrame(table)
    summary["removed_share"] = 1 - summary["billed_context"] / summary["billed_full"]
    summary["kept_ratio"] = summary["billed_full"] / summary["billed_context"]
    summary["total_cost"] = summary["cost_context"] + summary["summarizer_cost"].fillna(0)
    return with_derived(summary)


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
    """The compaction figures of each session × setting, in `session_summary`'s column order
    (a group without a compaction row gets what its joins leave there: NaN, or 0 where it counts)."""
    rows = np.fromiter(
        (number[pair] for pair in zip(compactions["session"].tolist(), compactions["setting"].tolist())), dtype=np.intp
    )
    failed = compactions["failed"].notna().to_numpy()
    done = ~failed
    done_groups = _Groups(rows[done], count)  # (a group without rows sums to 0 of 0 values)
    present = done_groups.sizes > 0  # groups the joined groupby holds

    def counted(mask: np.ndarray) -> np.ndarray:
        return np.bincount(rows[mask], minlength=count).astype(np.int64)

    def sums(column: str) -> tuple[np.ndarray, np.ndarray]:
        values = pd.to_numeric(compactions[column], errors="coerce").to_numpy(dtype=float)[done]
        return done_groups.sum_and_count(values)

    columns: dict[str, np.ndarray] = {"compactions": counted(done)}
    for column in ("summarizer_input_tokens", "summarizer_output_tokens"):
        total, _ = sums(column)
        columns[column] = total.astype(np.int64)
    total, known = sums("summarizer_cost_usd")
    columns["summarizer_cost"] = np.where(present & (known > 0), total, np.nan)
    if compactions["summarizer_cost_usd"].dtype == object:  # no cost anywhere (None): pandas' sum keeps the objects
        columns["summarizer_cost"] = columns["summarizer_cost"].astype(object)
    for name, column in _MEANS.items():
        total, known = sums(column)
        with np.errstate(invalid="ignore", divide="ignore"):
            columns[name] = np.where(known > 0, total / np.maximum(known, 1), np.nan)
        if name == "preservation_k5":
            _, applicable = sums("k1_score")
            columns["preservation_applicable"] = applicable if present.all() else np.where(present, applicable, np.nan)
    carried, pairs = sums("drift_carried")
    dropped, _ = sums("drift_dropped")
    columns["summary_pairs"] = pairs
    with np.errstate(invalid="ignore", divide="ignore"):
        columns["summary_drift"] = np.where(present & (pairs > 0), dropped / carried, np.nan)
    columns["failed_compactions"] = counted(failed)
    fallbacks = done & compactions["note"].map(fell_back).to_numpy(dtype=bool)
    columns["fallback_compactions"] = counted(fallbacks)
    return columns
