"""The overview of a run report: which strategy to use, what it costs, and how sure that is.

Every figure is the run's summary.json as `compactlab.results.leaderboard.setting_figures` computed it, under
its label in `compactlab.results.catalogue`; the recommendation, its rule (stated in full) and the frontier are
`compactlab.results.recommendation`'s; the significance table is the recommended setting against each other
setting, Holm-adjusted over those n − 1 tests (every pair only when asked for).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import pandas as pd

from compactlab.report.first_screen import cost_coverage, cost_partial, stress_line, verdict_window
from compactlab.report.run_data import RunData, ranked_rows
from compactlab.results.catalogue import REPORTED, metric
from compactlab.results.recommendation import Recommendation
from compactlab.results.run_failures import failure_ranks
from compactlab.results.same_by_construction import SameGroup, one_note, one_row_each, same_groups
from compactlab.runs.run_config import strategies_of_run
from compactlab.runs.verdict_window import SCALED
from compactlab.strategies.registry import describe_all

# Relative cost offset of sessions no strategy touched above which the report warns.
COST_NOISE_WARNING = 0.005
# The leaderboard's figures with their 95% intervals shown under them.
WITH_INTERVALS = ("removed_share", "preservation_or_untouched", "cost_change")


def pct(value: Any, digits: int = 1, signed: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    text = f"{100 * value:+.{digits}f}%" if signed else f"{100 * value:.{digits}f}%"
    return text.replace("-", "−")


def ci_text(low: Any, high: Any, fmt) -> str:
    if low is None or high is None or (isinstance(low, float) and math.isnan(low)):
        return ""
    return f"[{fmt(low)}, {fmt(high)}]"


def number(value: Any) -> str:
    """A plain machine-readable number for the sorting script ('' sorts after numbers)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return repr(float(value))


def figure_text(name: str, value: Any, signed: bool = False) -> str:
    """A figure as the catalogue formats it, with the report's typography (a true minus; the dollar
    sign kept on one line with the number)."""
    text = metric(name).format(value, signed).replace("-", "−")
    if metric(name).kind == "dollars" and text != "–":
        text = (text if text[0] in "+−" else "+" + text).replace("+", "+\u2060$").replace("−", "−\u2060$")
    return text


def overview_context(
    run: RunData, figures: pd.DataFrame, recommendation: Recommendation, all_pairs: dict | None = None
) -> dict[str, Any]:
    groups = _same_groups(run, figures)
    # Settings identical by construction are one row naming them all (summary.json keeps each one's figures).
    shown, merged = one_row_each(figures, groups, recommendation.setting)
    rows = [_row(r, recommendation, merged.get(r["setting"]), run.strategy_of(r["setting"])) for _, r in shown.iterrows()]
    rows.sort(key=lambda r: (not r["recommended"], r["not_recommendable"] != "", -float(r["cells"][0]["value"] or 0)))
    versus, pairs = _versus(run.summary.get("comparisons") or {}, recommendation)
    # The versus table too: one row per result; the recommended setting is not compared with itself under another name.
    hidden = {label for group in merged.values() for label in group.labels[1:]}
    versus = [
        {**v, "label": " = ".join(merged[v["label"]].labels)} if v["label"] in merged else v
        for v in versus
        if v["label"] not in hidden
    ]
    headline = _headline(run, rows, recommendation)
    headline["ties_why"] = _ties_why(headline, groups)
    return {
        "headline": headline,
        "rule": recommendation.rule.text,
        "labels": {name: metric(name).label for name in REPORTED},
        "columns": [{"label": metric(name).label, "title": metric(name).description} for name in REPORTED],
        "rows": rows,
        "versus": versus,
        "versus_tests": pairs,
        "versus_same": list(merged[recommendation.setting].labels[1:]) if recommendation.setting in merged else [],
        "versus_labels": {name: metric(name).label for name in ("removed_share", "preservation_or_untouched")},
        "significant": _significant(all_pairs) if all_pairs is not None else None,
        "pairs_tested": sum(len(v) for v in (all_pairs or {}).get("metrics", {}).values()),
        "setting": _setting(run),
        "cost_noise": _cost_noise(run),
        "same_by_construction": [{"labels": list(g.labels), "why": g.why} for g in merged.values()],
        "same_note": one_note(list(merged.values())),
        "summarizer_configured": bool(run.config.get("summarizer")),
        # What each strategy of the leaderboard is, beside its name: its one line and its source.
        "strategies": [strategy_about(name) for name in sorted({r["strategy"] for r in rows})],
    }


def _ties_why(headline: dict[str, Any], groups: list[SameGroup]) -> str:
    """Why the recommended setting ties with others: by construction, when one group holds them all."""
    tied = {headline["setting"], *headline["ties"]}
    return next((g.why for g in groups if tied <= set(g.labels)), "") if headline["ties"] else ""


def _same_groups(run: RunData, figures: pd.DataFrame) -> list[SameGroup]:
    """The ranked settings identical by construction (`compactlab.results.same_by_construction`)."""
    ranked = set(figures["setting"]) if not figures.empty else set()
    try:
        groups = same_groups(
            [c for c in strategies_of_run(run.config) if c.label in ranked], run.config.get("estimator") or "hybrid"
        )
    except (KeyError, TypeError, ValueError, FileNotFoundError):  # a strategy this install cannot build: no claim
        return []
    return groups


def _row(row: pd.Series, recommendation: Recommendation, same: SameGroup | None = None, strategy: str = "") -> dict[str, Any]:
    """A leaderboard row; `same`: the settings identical by construction it stands for (it is their first);
    `strategy`: the registered strategy it replays."""
    label = row["setting"]
    labels = list(same.labels) if same is not None else [label]
    cells = []
    for name in REPORTED:
        entry = metric(name)
        value = row.get(f"{name}_total" if entry.aggregate == "sum" else f"{name}_mean")
        cell = {"text": figure_text(name, value), "value": number(value), "ci": "", "extra": ""}
        if name in WITH_INTERVALS:
            cell["ci"] = ci_text(row.get(f"{name}_low"), row.get(f"{name}_high"), lambda v, n=name: figure_text(n, v))
        if name == "removed_share":
            cell["extra"] = _times(value)
        elif name in ("preservation_k1", "preservation_k5"):
            cell["extra"] = f"n={int(row.get(f'{name}_n') or 0)}"
        elif name == "compactions":
            cell["extra"] = f"in {int(row['compacted_in'])} of {int(row['sessions'])}"
        elif name == "cost_change":
            cell["extra"] = pct(_ratio(value, row.get("cost_full_mean")), signed=True)
        cells.append(cell)
    return {
        "label": label,
        "labels": labels,
        "strategy": strategy,
        "same_why": same.why if same is not None else "",
        "recommended": label == recommendation.setting,
        "frontier": bool(set(labels) & set(recommendation.frontier)),
        "not_recommendable": recommendation.not_recommendable.get(label, ""),
        "cells": cells,
        "by_name": dict(zip(REPORTED, cells)),
        "compacted_in": int(row["compacted_in"]),
        "sessions": int(row["sessions"]),
    }


def _times(removed: float) -> str:
    """How many times smaller the kept prompt is, only from 2× (below, the share removed says it better)."""
    return "" if removed is None or math.isnan(removed) or removed >= 1 or removed < 0.5 else f"{1 / (1 - removed):.3g}×"


def _ratio(change: Any, base: Any) -> float:
    if change is None or base is None or not base or (isinstance(base, float) and math.isnan(base)):
        return math.nan
    return change / base


def _headline(run: RunData, rows: list[dict], recommendation: Recommendation) -> dict[str, Any]:
    row = next((r for r in rows if r["recommended"]), None)
    window = run.config.get("window") or 0
    strategy = run.strategy_of(recommendation.setting) if recommendation.setting else None
    return {
        # What the verdict rests on (compactlab.results.recommendation): a clear pick, no clear winner, or too few compactions.
        "verdict": "use"
        if recommendation.clear or recommendation.compactions is None
        else "tied"
        if recommendation.tied
        else "tentative",
        "evidence": recommendation.evidence(),
        "tied": list(recommendation.tied),
        "unfit": sorted(recommendation.unfit.items()),
        "about": strategy_about(strategy) if strategy else None,
        "cost_includes": _cost_includes(run),
        "windows": verdict_window(run.config, run.summary),
        "windows_every_model": verdict_window(run.config, run.summary, every_model=True),
        "cost_coverage": cost_coverage(run.summary),
        "cost_partial": cost_partial(run.summary),
        "failures": len(run.summary.get("failures") or []),
        # Nothing compacted anywhere: there is no strategy to recommend, only a setting to change.
        "nothing": row is not None and not row["compacted_in"] and not float(row["by_name"]["removed_share"]["value"] or 0),
        "window": f"simulated {window:,}-token window" if window else "models' real windows",
        "setting": recommendation.setting,
        "row": row,
        "reason": recommendation.reason,
        "ties": list(recommendation.ties),
        "strategy": strategy,
        "not_recommendable": sorted(recommendation.not_recommendable.items()),
        # The dead ends' next commands, the second verdict at a simulated window, the rescaled triggers
        # (summary.json, written by `compactlab run` / `sweep`; absent from a run made by the API alone).
        "next_steps": run.summary.get("next_steps") or [],
        "stress": stress_line(run.summary),
        "scaled": (run.summary.get("windows") or {}).get("scaled_rules") or [],
        "scaled_why": SCALED,
    }


def _cost_includes(run: RunData) -> str:
    """What the cost figures count, said where the verdict is: offline, the summarizer writes for free."""
    if run.config.get("summarizer"):
        return "the modelled bill of the replayed prompts (cache reads and writes, output) plus the LLM summarizer's own calls"
    return (
        "the modelled bill of the replayed prompts (cache reads and writes, output) only: this run's summaries were written "
        "by the offline extractive summarizer, which costs nothing, so an LLM summarizer's calls are not in it"
    )


def strategy_about(name: str) -> dict[str, str]:
    """A strategy's one-line description and source, as `compactlab strategies` lists them ('' for one
    given by path that the registry does not know)."""
    found = _registered_descriptions().get(name, {})
    return {"name": name, "description": found.get("description", ""), "source": found.get("source", "")}


@functools.cache
def _registered_descriptions() -> dict[str, dict[str, str]]:
    return {entry["name"]: {"description": entry["description"], "source": entry["source"]} for entry in describe_all()}


def _setting(run: RunData) -> dict[str, Any]:
    window = run.config.get("window") or 0
    frame = ranked_rows(run)
    everything = run.sessions
    return {
        "window": f"{window:,}" if window else "",
        "sessions": frame["session"].nunique(),
        "replayed": everything["session"].nunique(),
        "damaged": int(everything.loc[everything["damaged"].astype(bool), "session"].nunique()) if "damaged" in everything else 0,
        # (strategies left out for failed compactions are listed apart: bench/results/run_failures.py)
        "unranked": sorted(set(everything["setting"]) - set(frame["setting"]) - set(failure_ranks(run.summary, ranked=False))),
        "labels": frame["setting"].nunique(),
        "datasets": ", ".join(run.config.get("datasets") or []) or "all bundled datasets",
        "calls": int(frame.drop_duplicates("session")["calls"].sum()),
        "ever_compacted": int(frame[frame["removed_share"] > 0]["session"].nunique()),
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


def _versus(comparisons: dict, recommendation: Recommendation) -> tuple[list[dict[str, Any]], int]:
    """The recommended setting against every other: differences (recommended − other) with p
    Holm-adjusted over those n − 1 tests; and how many tests that is per metric."""
    if recommendation.setting is None or comparisons.get("against") != recommendation.setting:
        return [], 0
    found: dict[str, dict[str, Any]] = {}
    tests = 0
    for name, records in comparisons.get("metrics", {}).items():
        tests = max(tests, len(records))
        for record in records:  # strategy_a is the other setting, strategy_b the recommended one
            other = record["strategy_a"]
            flip = lambda v: None if v is None else -v  # noqa: E731 - recommended − other
            found.setdefault(other, {"label": other})[name] = {
                "diff": _pp(flip(record["mean_diff"])),
                "value": number(flip(record["mean_diff"])),
                "ci": ci_text(flip(record["high"]), flip(record["low"]), _pp),
                "n": record["n"],
                "p": _p(record.get("p_holm")),
                "significant": bool(record.get("significant")),
            }
    return [found[k] for k in sorted(found)], tests


def _pp(value: Any) -> str:
    """A difference of two shares, in percentage points."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{100 * value:+.1f} pp".replace("-", "−")


def _p(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def _significant(all_pairs: dict) -> list[dict[str, Any]]:
    """The significant differences among every pair of settings (Holm over all pairs)."""
    rows = []
    for name, records in all_pairs.get("metrics", {}).items():
        for record in records:
            if not record.get("significant"):
                continue
            better, worse = (
                (record["strategy_a"], record["strategy_b"])
                if record["mean_diff"] > 0
                else (record["strategy_b"], record["strategy_a"])
            )
            rows.append(
                {
                    "metric": metric(name).label,
                    "higher": better,
                    "lower": worse,
                    "diff": _pp(abs(record["mean_diff"])),
                    "value": number(abs(record["mean_diff"])),
                    "n": record["n"],
                    "p": _p(record["p_holm"]),
                    "p_value": number(record["p_holm"]),
                }
            )
    return sorted(rows, key=lambda r: (r["metric"], -float(r["value"] or 0)))
