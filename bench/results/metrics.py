"""From replayed rows to metrics: tokens removed, cache-aware cost, next-step preservation.

Everything is a pandas DataFrame, one row per call, per compaction, or per session × setting.

Cost model (per replayed call): the part of the prompt identical to the previous call's prompt is
read from the provider's cache; the rest is new. Claude models bill new prompt tokens as cache
writes (Claude Code marks the prompt for caching); other providers cache automatically and bill
new tokens as plain input. A compaction changes the prompt from the summary on, so it pays for
writing the compacted prompt again: the model charges that, which is why a compaction can cost
more than it saves on a short remainder of a session. Output tokens are the recorded ones.
The same model is applied to the uncompacted session (the baseline) and checked against what the
source recorded where it recorded cache splits or costs (`cost_model_check`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from compactlab.contract import fell_back
from compactlab.llm.prices import PriceTable, price_for
from compactlab.replay.replay import CallColumns, CompactionRow
from compactlab.results.fidelity_figures import summary_sha
from compactlab.scoring.drift import drift_counts
from compactlab.tokens.calibration import model_family


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
    frame["removed_tokens"] = frame["full_tokens"] - frame["context_tokens"]
    if rows_by_model is None:
        # Positions per model, on plain arrays, found once for both costs: selecting rows of the
        # whole frame per model copied every column (hundreds of thousands of rows in a sweep).
        rows_by_model = rows_of_each(pd.factorize(frame["model"].to_numpy()))  # a call without a model: no cost
    frame["cost_full"] = _costs(frame, rows_by_model, "full_tokens", "full_prefix_tokens", prices)
    frame["cost_context"] = _costs(frame, rows_by_model, "context_tokens", "prefix_tokens", prices)
    return frame


def _costs(
    frame: pd.DataFrame, rows_by_model: dict[str, np.ndarray], prompt_column: str, cached_column: str, prices: PriceTable | None
) -> pd.Series:
    """Modelled cost per row, vectorised per model (a run has few models and many calls).

    The same rules as `compactlab.llm.prices.cost_of`: a long-context tier replaces every price above
    its threshold, and tokens of a kind the model has no price for make the cost unknown (NaN).
    """
    all_prompts = frame[prompt_column].to_numpy(dtype=float)
    all_cached = np.minimum(frame[cached_column].to_numpy(dtype=float), all_prompts)
    all_outputs = frame["output_tokens"].to_numpy(dtype=float)
    costs = np.full(len(frame), np.nan)
    for model, rows in rows_by_model.items():
        price = price_for(model, prices)
        if price is None:
            continue
        prompt, cached = all_prompts[rows], all_cached[rows]
        new = prompt - cached
        claude = model_family(model) == "claude"
        parts = {
            "input": 0 * new if claude else new,
            "cache_read": cached,
            "cache_write": new if claude else 0 * new,
            "output": all_outputs[rows],
        }
        total = _priced(price, parts)
        if price.long_context is not None and price.long_context_threshold is not None:
            total = np.where(prompt <= price.long_context_threshold, total, _priced(price.long_context, parts))
        costs[rows] = total
    return pd.Series(costs, index=frame.index)


def _priced(price, parts: dict[str, np.ndarray]) -> np.ndarray:
    total = 0 * parts["input"]
    for kind, tokens in parts.items():
        rate = getattr(price, kind)
        if rate is None:
            total = np.where(tokens == 0, total, np.nan)
        else:
            total = total + tokens * rate
    return total / 1_000_000


def compactions_frame(rows: list[CompactionRow] | list[dict]) -> pd.DataFrame:
    records = []
    rows = _dicts(rows)
    for record, drift in zip(rows, drift_counts(rows)):
        record = dict(record)
        # Summary drift (compactlab.scoring.drift): facts the previous summary carried and this one dropped.
        record["drift_carried"], record["drift_dropped"] = drift if drift is not None else (None, None)
        scores = record.pop("preservation")
        for key in ("k1", "k5"):
            found = scores.get(key, {})
            record[f"{key}_score"] = found.get("score")
            record[f"{key}_needed"] = len(found.get("needed", []))
            record[f"{key}_lost"] = found.get("lost", [])
            record[f"{key}_recall"] = found.get("summary_recall")  # compactlab.scoring.summary_recall
            record[f"{key}_summary_lost"] = found.get("summary_lost", [])
        # Lost items by recoverability (compactlab.scoring.recoverability), on k5.
        record.update(loss_values(scores.get("k5", {})))
        records.append(record)
    frame = pd.DataFrame(records)
    # None where not applicable: numbers with NaN, not objects (also in one session's rows, where every score may be None).
    for column in ("k1_score", "k5_score", "k1_recall", "k5_recall", "drift_carried", "drift_dropped", *LOSS_COLUMNS):
        if column in frame:
            frame[column] = pd.to_numeric(frame[column], errors="coerce")
    return frame


LOSS_COLUMNS = ("unrecoverable_loss", "reacquisition_tokens", "reacquisition_calls")


def loss_values(found: dict) -> dict[str, float | None]:
    """One compaction's recoverability figures from its k5 score (`compactlab.scoring.recoverability`):
    the share of the needed items lost for good (unrecoverable), and the tokens and tool calls that
    getting the recoverable lost items back would cost. None where nothing was needed (not
    applicable, as preservation) or the row predates the split."""
    needed = len(found.get("needed", []))
    if not needed or "lost_unrecoverable" not in found:
        return dict.fromkeys(LOSS_COLUMNS)
    return {
        "unrecoverable_loss": len(found["lost_unrecoverable"]) / needed,
        "reacquisition_tokens": float(found["reacquisition_tokens"]),
        "reacquisition_calls": float(found["reacquisition_calls"]),
    }


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


def session_summary(
    calls: pd.DataFrame, compactions: pd.DataFrame, groups: tuple[np.ndarray, list[tuple[str, str]]] | None = None
) -> pd.DataFrame:
    """One row per session × setting: the numbers the statistics and the report compare.
    `groups`: the rows' session × setting as `summary_groups` numbers them, when the caller has them."""
    if calls.empty:
        return pd.DataFrame()
    keys = ["session", "setting"] if groups is None else groups[0]
    calls = calls.assign(floor_tokens=smallest_prompts(calls, keys))
    grouped = calls.groupby(keys, sort=True)
    summary = grouped.agg(
        calls=("call", "size"),
        noop_compactions=("noop_before", "sum"),
        peak_full=("full_tokens", "max"),
        peak_context=("context_tokens", "max"),
        billed_full=("full_tokens", "sum"),
        billed_context=("context_tokens", "sum"),
        over_window_calls=("over_window", "sum"),
        fixed_tokens=("full_tokens", "min"),
        floor_tokens=("floor_tokens", "max"),
        window=("window", "max"),
        cost_full=("cost_full", "sum"),
        cost_context=("cost_context", "sum"),
        cost_full_known=("cost_full", "count"),
        cost_context_known=("cost_context", "count"),
    )
    if groups is not None:  # grouped by number: the index back to session × setting
        summary.index = pd.MultiIndex.from_tuples([groups[1][number] for number in summary.index], names=["session", "setting"])
    summary = summary.reset_index()
    # A session's cost is unknown when any of its calls' is (a model without a price).
    for column in ("cost_full", "cost_context"):
        known = summary.pop(f"{column}_known")
        summary[column] = summary[column].where(known == summary["calls"])
    if not compactions.empty:
        done = compactions[compactions["failed"].isna()]
        per = done.groupby(["session", "setting"]).agg(
            compactions=("call", "size"),
            summarizer_input_tokens=("summarizer_input_tokens", "sum"),
            summarizer_output_tokens=("summarizer_output_tokens", "sum"),
            summarizer_cost=("summarizer_cost_usd", "sum"),
            summarizer_cost_known=("summarizer_cost_usd", "count"),
            preservation_k1=("k1_score", "mean"),
            preservation_k5=("k5_score", "mean"),
            preservation_applicable=("k1_score", "count"),
            summary_recall_k1=("k1_recall", "mean"),
            summary_recall_k5=("k5_recall", "mean"),
            unrecoverable_loss=("unrecoverable_loss", "mean"),
            reacquisition_tokens=("reacquisition_tokens", "mean"),
            reacquisition_calls=("reacquisition_calls", "mean"),
            summary_pairs=("drift_carried", "count"),
            drift_carried=("drift_carried", "sum"),
            drift_dropped=("drift_dropped", "sum"),
        )
        per["summary_drift"] = (per.pop("drift_dropped") / per.pop("drift_carried")).where(per["summary_pairs"] > 0)
        # No LLM summarizer call with a price: the cost is unknown, not zero.
        per["summarizer_cost"] = per["summarizer_cost"].where(per.pop("summarizer_cost_known") > 0)
        failed = compactions[compactions["failed"].notna()].groupby(["session", "setting"]).size().rename("failed_compactions")
        # Done, but by a fallback after a step failed (compactlab.contract.FALLBACK_MARK): counted apart.
        # (astype: with every compaction failed, `done` is empty and an empty object mask would select columns)
        fallbacks = (
            done[done["note"].map(fell_back).astype(bool)].groupby(["session", "setting"]).size().rename("fallback_compactions")
        )
        summary = (
            summary.join(per, on=["session", "setting"])
            .join(failed, on=["session", "setting"])
            .join(fallbacks, on=["session", "setting"])
        )
    for column in (
        "compactions",
        "failed_compactions",
        "fallback_compactions",
        "summarizer_input_tokens",
        "summarizer_output_tokens",
        "summary_pairs",
    ):
        summary[column] = summary.get(column, pd.Series(0, index=summary.index)).fillna(0).astype(int)
    for column in (
        "summarizer_cost",
        "preservation_k1",
        "preservation_k5",
        "summary_recall_k1",
        "summary_recall_k5",
        "summary_drift",
        *LOSS_COLUMNS,
    ):
        if column not in summary:
            summary[column] = float("nan")
    summary["removed_share"] = 1 - summary["billed_context"] / summary["billed_full"]
    summary["kept_ratio"] = summary["billed_full"] / summary["billed_context"]
    summary["total_cost"] = summary["cost_context"] + summary["summarizer_cost"].fillna(0)
    return with_derived(summary)


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
    """The per-session columns computed from the others (`compactlab.results.catalogue` describes each). Always
    computed from the others wherever a table is made or upgraded (`compactlab.runs.run_format`), so they
    cannot disagree with the columns they come from."""
    derived = {
        # A session the setting never compacted lost nothing: without this a setting that never
        # fires would have no score at all, and could look best.
        "preservation_or_untouched": lambda s: s["preservation_k1"].where(s["compactions"] > 0, 1.0),
        "over_window_share": lambda s: s["over_window_calls"] / s["calls"],
        # Over-window calls of a session where the setting tried and every attempt removed nothing: it
        # could not act there (e.g. prune at a window smaller than the tool output it protects), which
        # the loop guard's no-ops would otherwise hide behind "0.0% removed".
        "over_window_unacted_calls": lambda s: s["over_window_calls"].where(
            (s["compactions"] == 0) & (s.get("noop_compactions", 0) > 0), 0
        ),
        "cost_change": lambda s: s["total_cost"] - s["cost_full"],
    }
    return summary.assign(**derived)


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
    """
    rows = []
    recorded = {t.id: list(t.calls) for t in sessions}
    baseline = calls.drop_duplicates(["session", "call"])
    for session_id, group in baseline.groupby("session"):
        real = recorded.get(session_id, [])
        if len(real) != len(group):
            continue
        modelled_read = group["full_prefix_tokens"].to_numpy()
        recorded_read = [c.cache_read_tokens for c in real]
        prompts = [c.prompt_tokens for c in real]
        read_error = sum(abs(m - r) / p for m, r, p in zip(modelled_read, recorded_read, prompts) if p) / len(real)
        recorded_costs = [c.cost_usd for c in real]
        modelled_costs = group["cost_full"].tolist()
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
