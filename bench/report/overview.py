"""The overview of a run report: which strategy to use, what it costs, and how sure that is.

Numbers come from the run's summary.json (leaderboard with bootstrap CIs, Holm-adjusted pairwise
comparisons) and from `run_data.strategy_points` (preservation with untouched transcripts counted
as kept, the measure the recommendation and the Pareto plot use).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from bench.metrics import compression_label
from bench.run_failures import failure_ranks
from bench.report.run_data import MIN_PRESERVATION, Choice, RunData, ranked_rows
from bench.statistics import pareto_frontier, recommend

# Relative cost offset of transcripts no strategy touched above which the report warns.
COST_NOISE_WARNING = 0.005


def pct(value: Any, digits: int = 1, signed: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    text = f"{100 * value:+.{digits}f}%" if signed else f"{100 * value:.{digits}f}%"
    return text.replace("-", "−")


def dollars(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    # A word joiner keeps the sign and the dollar sign on one line with the number.
    return f"{value:+.{digits}f}".replace("-", "−").replace("+", "+\u2060$").replace("−", "−\u2060$")


def ci_text(low: Any, high: Any, fmt) -> str:
    if low is None or high is None or (isinstance(low, float) and math.isnan(low)):
        return ""
    return f"[{fmt(low)}, {fmt(high)}]"


def number(value: Any) -> str:
    """A plain machine-readable number for the sorting script ('' sorts after numbers)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return repr(float(value))


def overview_context(run: RunData, points: pd.DataFrame, choice: Choice | None) -> dict[str, Any]:
    board = {row["config"]: row for row in run.summary.get("leaderboard", [])}
    by_point = points.set_index("config")
    rows_ranked = ranked_rows(run)
    costs = rows_ranked.groupby("config")["cost_full"].mean()
    totals = rows_ranked.groupby("config")[["over_window_calls", "calls"]].sum()
    rows = []
    for label in by_point.index:
        lead, point = board.get(label, {}), by_point.loc[label]
        base = costs.get(label, math.nan)
        rows.append({
            "label": label,
            "recommended": choice is not None and label == choice.config,
            "reference": bool(point["reference"]),
            "frontier": choice is not None and label in choice.frontier,
            "removed": lead.get("compression") or compression_label(point["tokens_saved"]),
            "removed_value": number(point["tokens_saved"]), "removed_pct": pct(point["tokens_saved"]),
            "ratio": _times(point["tokens_saved"]),
            "over": pct(totals.at[label, "over_window_calls"] / totals.at[label, "calls"]) if label in totals.index else "–",
            "over_value": number(totals.at[label, "over_window_calls"] / totals.at[label, "calls"]) if label in totals.index else "",
            "removed_ci": ci_text(point["saved_low"], point["saved_high"], pct),
            "kept": pct(point["preservation"]), "kept_value": number(point["preservation"]),
            "kept_ci": ci_text(point["preservation_low"], point["preservation_high"], pct),
            "k1": pct(lead.get("preservation_k1_mean")), "k1_value": number(lead.get("preservation_k1_mean")),
            "k1_n": lead.get("preservation_k1_n", 0),
            "k5": pct(lead.get("preservation_k5_mean")), "k5_value": number(lead.get("preservation_k5_mean")),
            "compactions": f"{lead.get('compactions_mean', math.nan):.2f}", "compactions_value": number(lead.get("compactions_mean")),
            "compacted_in": int(point["compacted_in"]), "transcripts": int(point["transcripts"]),
            "cost": dollars(lead.get("cost_change_mean")), "cost_value": number(lead.get("cost_change_mean")),
            "cost_ci": ci_text(lead.get("cost_change_low"), lead.get("cost_change_high"), dollars),
            "cost_pct": pct(_ratio(lead.get("cost_change_mean"), base), signed=True),
            "cost_pct_value": number(_ratio(lead.get("cost_change_mean"), base)),
        })
    rows.sort(key=lambda r: (not r["recommended"], r["reference"], -float(r["removed_value"] or 0)))
    return {
        "headline": _headline(run, rows, choice),
        "rows": rows,
        "versus": _versus(run, choice),
        "significant": _significant(run),
        "pairs_tested": sum(len(v) for v in run.summary.get("comparisons", {}).values()),
        "setting": _setting(run),
        "cost_noise": _cost_noise(run),
        "min_preservation": pct(MIN_PRESERVATION, 0),
    }


def _times(removed: float) -> str:
    return "" if removed is None or math.isnan(removed) or removed >= 1 else f"{1 / (1 - removed):.3g}×"


def _ratio(change: Any, base: Any) -> float:
    if change is None or base is None or not base or (isinstance(base, float) and math.isnan(base)):
        return math.nan
    return change / base


def _headline(run: RunData, rows: list[dict], choice: Choice | None) -> dict[str, Any] | None:
    if choice is None:
        return None
    row = next((r for r in rows if r["label"] == choice.config), None)
    return {
        "config": choice.config, "row": row, "reason": choice.reason, "source": choice.source,
        "ties": list(choice.ties), "strategy": run.strategy_of(choice.config), "often": _if_compacting_often(rows, choice),
    }


def _if_compacting_often(rows: list[dict], choice: Choice) -> dict[str, Any] | None:
    """The same rule with facts kept averaged only where a strategy compacted, when it picks another setting.

    Most sessions never reach the trigger, so counting them as 100% kept lifts every strategy
    towards 100%; a reader whose sessions are long sees the strategy as it acts where it compacts.
    """
    frame = pd.DataFrame([
        {"config": r["label"], "tokens_saved": float(r["removed_value"]), "preservation": float(r["k1_value"])}
        for r in rows if not r["reference"] and r["removed_value"] and r["k1_value"]
    ])
    if frame.empty:
        return None
    other = recommend(pareto_frontier(frame, ("tokens_saved", "preservation")), MIN_PRESERVATION).row["config"]
    if other == choice.config:
        return None
    return next(r for r in rows if r["label"] == other)


def _setting(run: RunData) -> dict[str, Any]:
    window = run.config.get("window") or 0
    frame = ranked_rows(run)
    everything = run.transcripts
    return {
        "window": f"{window:,}" if window else "",
        "transcripts": frame["transcript"].nunique(),
        "replayed": everything["transcript"].nunique(),
        "damaged": int(everything.loc[everything["damaged"].astype(bool), "transcript"].nunique()) if "damaged" in everything else 0,
        # (strategies left out for failed compactions are listed apart: bench/run_failures.py)
        "unranked": sorted(set(everything["config"]) - set(frame["config"]) - set(failure_ranks(run.summary, ranked=False))),
        "labels": frame["config"].nunique(),
        "datasets": ", ".join(run.config.get("datasets") or []) or "all bundled datasets",
        "calls": int(frame.drop_duplicates("transcript")["calls"].sum()),
        "ever_compacted": int(frame[frame["removed_share"] > 0]["transcript"].nunique()),
    }


def _cost_noise(run: RunData) -> dict[str, str] | None:
    """The cost change of replays in which nothing was compacted: the cost model's own offset (should be 0)."""
    frame = ranked_rows(run)
    untouched = frame[(frame["compactions"] == 0) & (frame["failed_compactions"] == 0)]
    if untouched.empty or not untouched["cost_full"].sum():
        return None
    change = (untouched["total_cost"] - untouched["cost_full"]).sum() / untouched["cost_full"].sum()
    if abs(change) < COST_NOISE_WARNING:
        return None
    return {"share": pct(change, signed=True), "replays": f"{len(untouched):,}"}


def _versus(run: RunData, choice: Choice | None) -> list[dict[str, Any]]:
    """The recommended setting against every other: differences (recommended − other) with Holm-adjusted p."""
    if choice is None:
        return []
    found: dict[str, dict[str, Any]] = {}
    for metric, records in run.summary.get("comparisons", {}).items():
        for record in records:
            a, b = record["strategy_a"], record["strategy_b"]
            if choice.config not in (a, b):
                continue
            other, sign = (b, 1) if a == choice.config else (a, -1)
            low, high = (record["low"], record["high"]) if sign == 1 else (-record["high"] if record["high"] is not None else None, -record["low"] if record["low"] is not None else None)
            diff = None if record["mean_diff"] is None else sign * record["mean_diff"]
            found.setdefault(other, {"label": other})[metric] = {
                "diff": _pp(diff), "value": number(diff), "ci": ci_text(low, high, _pp), "n": record["n"],
                "p": _p(record.get("p_holm")), "significant": bool(record.get("significant")),
            }
    return [found[k] for k in sorted(found)]


def _pp(value: Any) -> str:
    """A difference of two shares, in percentage points."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{100 * value:+.1f} pp".replace("-", "−")


def _p(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def _significant(run: RunData) -> list[dict[str, Any]]:
    rows = []
    names = {"removed_share": "tokens removed", "preservation_k1": "next-step facts kept (k=1, compacted transcripts)"}
    for metric, records in run.summary.get("comparisons", {}).items():
        for record in records:
            if not record.get("significant"):
                continue
            better, worse = (record["strategy_a"], record["strategy_b"]) if record["mean_diff"] > 0 else (record["strategy_b"], record["strategy_a"])
            rows.append({
                "metric": names.get(metric, metric), "higher": better, "lower": worse,
                "diff": _pp(abs(record["mean_diff"])), "value": number(abs(record["mean_diff"])),
                "n": record["n"], "p": _p(record["p_holm"]), "p_value": number(record["p_holm"]),
            })
    return sorted(rows, key=lambda r: (r["metric"], -float(r["value"] or 0)))


