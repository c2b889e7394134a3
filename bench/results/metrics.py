"""From replayed rows to metrics: tokens removed, cache-aware cost, next-step preservation.

Everything is a pandas DataFrame, one row per call, per compaction, or per session × setting.

Cost model (per replayed call, `compactlab.results.call_costs`): the part of the prompt identical to
the previous call's prompt is read from the provider's cache, as long as the cache still holds it
(`compactlab.replay.prompt_cache`); the rest is new. Claude models bill new prompt tokens as cache
writes (Claude Code marks the prompt for caching); other providers cache automatically and bill
new tokens as plain input. A compaction changes the prompt from the summary on, so it pays for
writing the compacted prompt again: the model charges that, which is why a compaction can cost
more than it saves on a short remainder of a session. Output tokens are the recorded ones. Each
call's cost is also split into its parts, and what it did to the cache is counted (`call_costs`).
The same model is applied to the uncompacted session (the baseline) and checked against what the
source recorded where it recorded cache splits or costs (`cost_model_check`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from compactlab.contract import fell_back as fell_back_note
from compactlab.llm.prices import PriceTable
from compactlab.replay.replay import CallColumns, CompactionRow
from compactlab.results.call_costs import cache_costs, cache_telemetry, cost_parts
from compactlab.results.catalogue import METRICS
from compactlab.results.compaction_values import SCORED, flattened
from compactlab.results.fidelity_figures import summary_sha
from compactlab.results.metric import Metric
from compactlab.scoring.drift import drift_counts


def rows_of_each(coded: tuple[np.ndarray, list]) -> dict[str, np.ndarray]:
    """Each text's row positions in a coded column (codes into its distinct texts, as
    `pd.factorize` or `compactlab.runs.text_codes` give them; rows without a text, code -1 or None, in none)."""
    codes, distinct = coded
    return {value: np.flatnonzero(codes == code) for code, value in enumerate(distinct) if isinstance(value, str)}


def _dicts(rows: list) -> list[dict]:
    # Rows come as `CompactionRow`s from a replay, or as dicts read back from a run's files.
    return [r if isinstance(r, dict) else r.values() for r in rows]


def calls_frame(
    rows: CallColumns | dict[str, object] | list[dict],
    prices: PriceTable | None = None,
    rows_by_model: dict[str, np.ndarray] | None = None,
) -> pd.DataFrame:
    """The call rows of replays (as `Replayed.calls` columns, as arrays with the text columns
    joined by `coded_text`, or as dicts read back from a run). `rows_by_model`: each model's row
    positions, when the caller has them (`rows_of_each`), else found from the model column."""
    # No copy: the columns are made for this frame, so stacking them into one block is wasted work.
    frame = pd.DataFrame(rows, copy=False)
    if frame.empty:
        return frame
    return with_columns(frame, derived_call_columns(frame, prices, rows_by_model))


def derived_call_columns(
    frame: pd.DataFrame, prices: PriceTable | None, rows_by_model: dict[str, np.ndarray] | None = None
) -> dict[str, object]:
    """The columns `calls_frame` adds to the call rows, in their order; each made from the rows' own
    columns only (so all are made before any is added: a frame grown a column at a time copied its
    index and blocks some 30 times per session, a quarter of a run's per-session results)."""
    added: dict[str, object] = {"removed_tokens": frame["full_tokens"] - frame["context_tokens"]}
    if rows_by_model is None:
        # Positions per model, on plain arrays, found once for both costs: selecting rows of the
        # whole frame per model copied every column (hundreds of thousands of rows in a sweep).
        rows_by_model = rows_of_each(pd.factorize(frame["model"].to_numpy()))  # a call without a model: no cost
    for name, prompt, cached in (("cost_full", "full_tokens", "full_prefix_tokens"), ("cost", "context_tokens", "prefix_tokens")):
        total, parts = cost_parts(frame, rows_by_model, prompt, cached, prices)
        added["cost_context" if name == "cost" else name] = total
        for kind, values in parts.items():
            added[f"{name}_{kind}"] = values
    telemetry = cache_telemetry(frame)
    return {**added, **telemetry, **cache_costs(frame, rows_by_model, telemetry, prices)}


def with_columns(frame: pd.DataFrame, added: dict[str, object]) -> pd.DataFrame:
    """`frame` with the columns `added` after its own, in their order, as adding them one by one
    (`frame[name] = values`) would give it; a name it has already is replaced where it stands."""
    if any(name in frame for name in added):
        frame = frame.copy()
        for name, values in added.items():
            frame[name] = values
        return frame
    return pd.concat([frame, pd.DataFrame(added, index=frame.index)], axis=1)


def compactions_frame(rows: list[CompactionRow] | list[dict]) -> pd.DataFrame:
    """The compaction rows as a frame, their scores flattened into one column per scored metric of the
    catalogue (`compactlab.results.compaction_values.flattened`) and summary drift's counts."""
    records = []
    rows = _dicts(rows)
    for record, drift in zip(rows, drift_counts(rows)):
        record = dict(record)
        # Summary drift (compactlab.scoring.drift): facts the previous summary carried and this one dropped.
        record["drift_carried"], record["drift_dropped"] = drift if drift is not None else (None, None)
        record.update(flattened(record.pop("preservation", None) or {}))
        records.append(record)
    frame = pd.DataFrame(records)
    # None where not applicable: numbers with NaN, not objects (also in one session's rows, where every score may be None).
    for column in ("drift_carried", "drift_dropped", *SCORED):
        if column in frame:
            frame[column] = pd.to_numeric(frame[column], errors="coerce")
    return frame


def recorded_fidelity(compactions: pd.DataFrame, calls: pd.DataFrame | None = None) -> pd.DataFrame:
    """Real compactions: the replay's predicted prompt of the first call after it vs the recorded one,
    with the model of that call (from `calls`, the call rows) and a hash of the summary, which tell
    the family a figure belongs to and a compaction saved twice (`compactlab.results.fidelity_figures`)."""
    if compactions.empty or "fidelity_recorded" not in compactions:
        return pd.DataFrame()
    rows = compactions[compactions["fidelity_recorded"].notna()]
    frame = rows[["session", "setting", "call", "fidelity_predicted", "fidelity_recorded"]].copy()
    frame["relative_error"] = (frame["fidelity_predicted"] - frame["fidelity_recorded"]) / frame["fidelity_recorded"]
    frame["summary_sha"] = [summary_sha(text) for text in rows.get("summary", pd.Series([None] * len(rows), index=rows.index))]
    frame["model"] = None
    if calls is not None and not calls.empty and not frame.empty:
        frame["model"] = [_model_at(calls, *key) for key in zip(frame["session"], frame["setting"], frame["call"])]
    return frame.reset_index(drop=True)


def _model_at(calls: pd.DataFrame, session: str, setting: str, number: int) -> str | None:
    """The model of call `number` of a replay, else of its last call before (a real compaction checked
    against a `/context` reading has no call after it)."""
    rows = calls[(calls["session"] == session) & (calls["setting"] == setting) & (calls["call"] <= number)]
    return None if rows.empty else rows.loc[rows["call"].idxmax(), "model"]


# The per-session table's columns by where they come from, each in the catalogue's order.
CALL_METRICS = tuple(m for m in METRICS if m.in_table and m.source == "calls")
COMPACTION_METRICS = tuple(m for m in METRICS if m.in_table and m.source == "compactions")
SESSION_METRICS = tuple(m for m in METRICS if m.in_table and m.source == "sessions")
TABLE_COLUMNS = ("session", "setting", *(m.name for m in (*CALL_METRICS, *COMPACTION_METRICS, *SESSION_METRICS)))
_MEASURED = list(TABLE_COLUMNS[: len(TABLE_COLUMNS) - len(SESSION_METRICS)])  # (the others are computed from them)
# pandas' grouped aggregation of each per-session rule ("total", "sum_known" and "ratio" also count).
_PANDAS = {"size": "size", "sum": "sum", "mean": "mean", "max": "max", "min": "min", "count": "count", "total": "sum"}
_PANDAS |= {"sum_known": "sum"}


def session_summary(
    calls: pd.DataFrame, compactions: pd.DataFrame, groups: tuple[np.ndarray, list[tuple[str, str]]] | None = None
) -> pd.DataFrame:
    """One row per session × setting: the numbers the statistics and the report compare, each the
    catalogue entry's rule over the session's rows (`compactlab.results.metric.Metric`): the plain
    definition, which `compactlab.results.summary_arrays` computes faster and must equal to the bit.
    `groups`: the rows' session × setting as `summary_groups` numbers them, when the caller has them."""
    if calls.empty:
        return pd.DataFrame()
    keys = ["session", "setting"] if groups is None else groups[0]
    calls = calls.assign(floor_tokens=smallest_prompts(calls, keys))
    summary = _aggregated(calls.groupby(keys, sort=True), CALL_METRICS, "call")
    if groups is not None:  # grouped by number: the index back to session × setting
        summary.index = pd.MultiIndex.from_tuples([groups[1][number] for number in summary.index], names=["session", "setting"])
    summary = summary.reset_index()
    if not compactions.empty:
        failed = compactions["failed"].notna()
        # Done, but by a fallback after a step failed (compactlab.contract.FALLBACK_MARK): counted apart.
        # (astype: with every compaction failed, the done rows are empty and an empty object mask would select columns)
        fell_back = ~failed & compactions["note"].map(fell_back_note).astype(bool)
        for rows, mask in (("done", ~failed), ("failed", failed), ("fell_back", fell_back)):
            entries = tuple(m for m in COMPACTION_METRICS if m.rows == rows)
            per = _aggregated(compactions[mask].groupby(["session", "setting"]), entries, "call")
            summary = summary.join(per, on=["session", "setting"])
    for entry in COMPACTION_METRICS:  # a session without such rows: 0 where it counts, else no value
        if entry.when_none is not None:
            summary[entry.name] = summary.get(entry.name, pd.Series(0, index=summary.index)).fillna(0).astype(int)
        elif entry.name not in summary:
            summary[entry.name] = float("nan")
    return derived_plain(summary[_MEASURED])


def _aggregated(grouped, entries: tuple[Metric, ...], any_column: str) -> pd.DataFrame:
    """Each entry's per-session rule over the grouped rows, as pandas computes it."""
    named: dict[str, tuple[str, str]] = {" rows": (any_column, "size")}
    for entry in entries:
        if entry.per_session == "ratio":
            numerator, denominator = entry.ratio_columns
            named |= {entry.name: (numerator, "sum"), f"{entry.name} of": (denominator, "sum")}
            named[f"{entry.name} known"] = (denominator, "count")
            continue
        column = any_column if entry.per_session == "size" else entry.column
        named[entry.name] = (column, _PANDAS[entry.per_session])
        if entry.per_session in ("total", "sum_known"):
            named[f"{entry.name} known"] = (column, "count")
    table = grouped.agg(**named)
    rows = table.pop(" rows")
    for entry in entries:
        if entry.per_session == "total":  # unknown when any row's is (a call of a model without a price)
            table[entry.name] = table[entry.name].where(table.pop(f"{entry.name} known") == rows)
        elif entry.per_session == "sum_known":  # no known value (no priced LLM summarizer call): unknown, not 0
            table[entry.name] = table[entry.name].where(table.pop(f"{entry.name} known") > 0)
        elif entry.per_session == "ratio":
            table[entry.name] = (table[entry.name] / table.pop(f"{entry.name} of")).where(table.pop(f"{entry.name} known") > 0)
    return table


def smallest_prompts(calls: pd.DataFrame, keys) -> pd.Series:
    """Per call, the smallest prompt any strategy could send there: the session's smallest prompt (it
    holds the system prompt, instructions and task, which every strategy keeps verbatim, and the tools
    the provider counted) plus the newest step (what the prompt grew by past every earlier prompt: the
    previous reply and what answered it), which must reach the model whole. Measured against the
    largest earlier prompt, not the previous one: recorded counts dip (a Codex rollout logs a
    40,056-token call between two of 165,562 and 163,847), and a dip is no step. A session whose
    largest such floor is over the window overflows it under every setting
    (`compactlab.results.unfit_sessions`)."""
    by_session = calls.groupby(keys, sort=False)["full_tokens"]
    before = by_session.transform(lambda s: s.cummax().shift(1))
    step = (calls["full_tokens"] - before).clip(lower=0).fillna(0)
    return by_session.transform("min") + step


def with_derived(summary: pd.DataFrame) -> pd.DataFrame:
    """The per-session columns computed from the others (the catalogue's entries of source "sessions",
    in its order). Always computed from the others wherever a table is made or read back
    (`compactlab.runs.run_format`), so they cannot disagree with the columns they come from.
    `derived_plain` is the definition; this makes each column once and adds them together (a frame
    assigned a column at a time was copied for each: a fifth of a run's per-session results)."""
    if any(entry.name in summary for entry in SESSION_METRICS):  # read back with them: replaced where they stand
        return derived_plain(summary)
    made: dict[str, pd.Series] = {}
    columns = _Columns(summary, made)
    for entry in SESSION_METRICS:  # in order: an entry may read one made before it (as assign lets it)
        value = entry.value
        made[entry.name] = value(columns) if callable(value) else value
    return with_columns(summary, made)


def derived_plain(summary: pd.DataFrame) -> pd.DataFrame:
    """The definition of `with_derived`: the entries assigned in order, each seeing those before it."""
    return summary.assign(**{entry.name: entry.value for entry in SESSION_METRICS})


class _Columns:
    """A table's columns, and those made from them so far, by name (what an entry's `value` reads)."""

    def __init__(self, table: pd.DataFrame, made: dict[str, pd.Series]) -> None:
        self.table, self.made = table, made

    def __getitem__(self, name: str) -> pd.Series:
        return self.made[name] if name in self.made else self.table[name]


def compression_label(removed_share: float) -> str:
    """'98.6% removed, 71× smaller': the share removed, and how many times smaller the kept part is
    where that helps (from 2×: '1.03× smaller' only restates '3% removed', less clearly)."""
    if removed_share >= 1:
        return "100% removed"
    times = 1 / (1 - removed_share)
    return f"{100 * removed_share:.1f}% removed" + (f", {times:.3g}× smaller" if times >= 2 else "")


def cost_model_check(calls: pd.DataFrame, sessions) -> pd.DataFrame:
    """The cost model on the uncompacted session against what the source recorded.

    Per session with recorded cache splits (Claude Code, mini-swe-agent/DeepSeek): the mean
    absolute error of the modelled cache-read tokens relative to the prompt, and, where the source
    recorded a cost per call, the relative error of the modelled total cost. `sessions`: the
    sessions, or what a run kept of them (`compactlab.sessions.loading.ReadSession`): their recorded calls.
    (`compactlab.results.summary_arrays.cost_model_check_arrays` makes the same from arrays.)
    """
    baseline = calls.drop_duplicates(["session", "call"])
    groups = [
        (session_id, group["full_prefix_tokens"].to_numpy(), group["cost_full"].tolist())
        for session_id, group in baseline.groupby("session")
    ]
    return cost_model_rows(groups, sessions)


def cost_model_rows(groups, sessions) -> pd.DataFrame:
    """`cost_model_check`'s rows from each session's uncompacted calls: (session, modelled cache
    reads, modelled costs), in session order."""
    rows = []
    recorded = {t.id: list(t.calls) for t in sessions}
    for session_id, modelled_read, modelled_costs in groups:
        real = recorded.get(session_id, [])
        if len(real) != len(modelled_read):
            continue
        recorded_read = [c.cache_read_tokens for c in real]
        prompts = [c.prompt_tokens for c in real]
        read_error = sum(abs(m - r) / p for m, r, p in zip(modelled_read, recorded_read, prompts) if p) / len(real)
        recorded_costs = [c.cost_usd for c in real]
        cost_error = None
        if all(c is not None for c in recorded_costs) and all(c is not None for c in modelled_costs) and sum(recorded_costs):
            cost_error = (sum(modelled_costs) - sum(recorded_costs)) / sum(recorded_costs)
        rows.append(
            {
                "session": session_id,
                "calls": len(real),
                "cache_read_mean_abs_error_share": read_error,
                "recorded_cost": sum(recorded_costs) if cost_error is not None else None,
                "modelled_cost": sum(modelled_costs) if cost_error is not None else None,
                "cost_relative_error": cost_error,
            }
        )
    return pd.DataFrame(rows)
