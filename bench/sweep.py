"""`compactlab sweep`: a grid of settings, its Pareto frontier, and a recommended setting.

The grid is strategies × trigger thresholds × keep-recent budgets (the budget applies to
strategies that have a `keep_recent_tokens` setting). Each point is replayed like any run; then
each point gets two numbers, averaged over transcripts: the share of prompt tokens removed, and
next-step preservation (k=1). A transcript in which a setting never compacted lost nothing, so it
counts as full preservation there — otherwise a setting that never fires would look best by
having no score at all. Settings must also keep `min_preservation` averaged over the sessions
where they did compact, so one that loses much whenever it fires cannot win on the sessions it
never touched. The frontier holds the remaining settings no other beats on both; the
recommendation is the one saving the most while keeping at least `min_preservation`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pandas as pd

from bench.run_failures import INCOMPLETE
from bench.engine import Trigger
from bench.replay import StrategyConfig
from bench.statistics import Recommendation, pareto_frontier, recommend
from strategies.registry import get_strategy

DEFAULT_STRATEGIES = ("summarize", "iterative-merge", "observation-masking", "prune")
DEFAULT_THRESHOLDS = (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)
DEFAULT_KEEP = (8_000, 16_000, 32_000)


def grid(strategies, thresholds, keep_budgets) -> list[StrategyConfig]:
    configs = []
    for name in strategies:
        strategy = get_strategy(name)
        has_keep = dataclasses.is_dataclass(strategy) and "keep_recent_tokens" in {f.name for f in dataclasses.fields(strategy)}
        for threshold in thresholds:
            for keep in keep_budgets if has_keep else (None,):
                label = f"{name}@{threshold:g}" + (f"/keep={keep}" if keep is not None else "")
                settings = (("keep_recent_tokens", keep),) if keep is not None else ()
                configs.append(StrategyConfig(label, name, settings, Trigger(fraction=threshold)))
    return configs


@dataclass(frozen=True)
class SweepResult:
    points: pd.DataFrame
    frontier: pd.DataFrame
    recommendation: Recommendation


def analyse(transcripts: pd.DataFrame, configs: list[StrategyConfig], min_preservation: float = 0.9) -> SweepResult:
    by_label = {c.label: c for c in configs}
    frame = transcripts[transcripts["config"].isin(by_label)]
    if INCOMPLETE in frame and not frame[INCOMPLETE].all():  # failed too often: not ranked (bench/run_failures.py)
        frame = frame[~frame[INCOMPLETE]]
    frame = frame.copy()
    frame["preservation_or_untouched"] = frame["preservation_k1"].where(frame["compactions"] > 0, 1.0)
    points = frame.groupby("config").agg(
        tokens_saved=("removed_share", "mean"),
        preservation=("preservation_or_untouched", "mean"),
        kept_where_compacted=("preservation_k1", "mean"),
        compactions=("compactions", "mean"),
        transcripts=("transcript", "nunique"),
    ).reset_index()
    points["strategy"] = points["config"].map(lambda label: by_label[label].strategy)
    points["threshold"] = points["config"].map(lambda label: by_label[label].trigger.fraction)
    points["keep_recent_tokens"] = points["config"].map(lambda label: dict(by_label[label].settings).get("keep_recent_tokens"))
    # A setting that loses much wherever it compacts must not win on the sessions it never
    # touched: candidates keep `min_preservation` where they compacted too (when any does).
    fair = points["kept_where_compacted"].isna() | (points["kept_where_compacted"] >= min_preservation)
    candidates = points[fair] if fair.any() else points
    frontier = pareto_frontier(candidates, ("tokens_saved", "preservation"))
    return SweepResult(points, frontier, recommend(frontier, min_preservation))


def format_sweep(result: SweepResult) -> str:
    lines = ["Pareto frontier (tokens saved vs next-step preservation):"]
    for _, row in result.frontier.iterrows():
        lines.append(f"  {row['config']:40} saved {100 * row['tokens_saved']:5.1f}%  kept {100 * row['preservation']:5.1f}%  compactions {row['compactions']:.1f}")
    best = result.recommendation.row
    lines += ["", f"recommended: {best['config']} — {result.recommendation.reason}"]
    return "\n".join(lines)


def sweep_document(result: SweepResult) -> dict:
    from bench.leaderboard import json_records

    return {
        "points": json_records(result.points),
        "frontier": json_records(result.frontier),
        "recommendation": {"config": result.recommendation.row["config"], "reason": result.recommendation.reason},
    }
