"""The report's first screen (1400 × 900 pixels): the answer, the window it is at, what the cost covers,
and the Pareto plot with its key, before any scrolling.

Each of these is one function here, so that a surface that says the same thing in other words cannot
drift: `verdict_window` is the window the verdict is at, from config.json (`window`: 0 is each model's
real window, any other number a simulated window of that many tokens for every model); `cost_coverage`
is summary.json's `cost_coverage` as the command line prints it (`compactlab.results.cost_coverage`).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from compactlab.report.names import short_name
from compactlab.results.cost_coverage import format_cost_coverage
from compactlab.results.recommendation import Recommendation
from compactlab.runs.stress_verdict import second_verdict


def verdict_window(config: dict, summary: dict, every_model: bool = False) -> str:
    """The window the verdict is at, said as the user must read it: real or simulated, with the models'
    real windows (`every_model`: each model's, else grouped by size once there are more than three)."""
    window = config.get("window") or 0
    recorded = (summary.get("windows") or {}).get("recorded") or {}
    ordered = sorted(recorded.items(), key=lambda kv: (kv[1], kv[0]))
    if every_model or len(ordered) <= 3:
        real = ", ".join(f"{model} {tokens:,}" for model, tokens in ordered)
    else:
        sizes: dict[int, int] = {}
        for _, tokens in ordered:
            sizes[tokens] = sizes.get(tokens, 0) + 1
        real = ", ".join(f"{tokens:,} ({count} model{'s' if count > 1 else ''})" for tokens, count in sizes.items())
    if not window:
        return "each model's real window" + (f" ({real})" if real else "")
    return f"a simulated {window:,}-token window for every model (a stress test), not the models' own" + (
        f" (their real windows: {real})" if real else ""
    )


def stress_line(summary: dict) -> dict[str, str] | None:
    """The second verdict beside a real-window one on too few compactions (summary.json's `stress_verdict`):
    {why, verdict, folder}; None without one."""
    stress = summary.get("stress_verdict")
    if not stress:
        return None
    verdict = second_verdict(stress)  # a verdict says its window; a command or an error is given one
    if "recommendation" not in stress:
        verdict = f"at a simulated {stress['window']:,}-token window (a stress test): {verdict}"
    return {"why": stress["why"], "verdict": verdict, "folder": stress.get("out", "")}


def cost_coverage(summary: dict) -> str:
    """'over 10 of 27 sessions; unpriced: …', the command line's words ('' for a summary written before
    cost coverage was)."""
    coverage = summary.get("cost_coverage")
    if not coverage:
        return ""
    return format_cost_coverage(coverage).removeprefix("cost ")


def cost_partial(summary: dict) -> str:
    """'over 10 of 27 sessions' where the cost figures cover only the priced sessions, else ''."""
    coverage = summary.get("cost_coverage") or {}
    sessions, priced = coverage.get("sessions", 0), coverage.get("priced", 0)
    return f"over {priced} of {sessions} sessions" if sessions and priced < sessions else ""


def pareto_key_rows(
    key: list[tuple[str, list[str]]], figures: pd.DataFrame, recommendation: Recommendation, colours: dict[str, str]
) -> list[dict[str, Any]]:
    """The Pareto plot's key: each marker's number, colour, names (cut, whole in the tooltip) and figures."""
    by_label = figures.set_index("setting") if len(figures) else pd.DataFrame()
    rows = []
    for number, names in key:
        row = by_label.loc[names[0]]
        removed, kept = float(row["removed_share_mean"]), float(row["preservation_or_untouched_mean"])
        whole = " = ".join(names)
        rows.append(
            {
                "number": number,
                "colour": colours.get(names[0], "#999999"),
                "hollow": any(n in recommendation.not_recommendable for n in names),
                "recommended": recommendation.setting in names,
                "frontier": bool(set(names) & set(recommendation.frontier)),
                "name": short_name(whole, 34),
                "title": f"{whole}: {100 * removed:.1f}% of prompt tokens removed, {100 * kept:.1f}% of next-step facts kept",
            }
        )
    return rows
