"""`compactlab sweep`: a grid of settings, its Pareto frontier, and a recommended setting.

The grid is strategies × trigger thresholds × keep-recent budgets (the budget applies to
strategies that have a `keep_recent_tokens` setting). Each point is replayed like any run, and its
figures are those of any run (`bench.leaderboard.setting_figures`): tokens removed and next-step
facts kept (k=1), averaged over transcripts, a transcript it never compacted counting as kept.
The recommendation and the frontier are those of the one rule, `bench.recommendation` (with
`--min-preservation` as its threshold), stated in full in the output and in sweep.json.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pandas as pd

from bench.engine import Trigger
from bench.leaderboard import json_records
from bench.recommendation import Recommendation
from bench.replay import StrategyConfig
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
    points: pd.DataFrame  # the settings' figures, with their strategy, threshold and keep budget
    recommendation: Recommendation

    @property
    def frontier(self) -> pd.DataFrame:
        """The Pareto frontier of the recommendable settings, by tokens removed."""
        order = {label: i for i, label in enumerate(self.recommendation.frontier)}
        return self.points[self.points["config"].isin(order)].sort_values("config", key=lambda c: c.map(order))


def analyse(figures: pd.DataFrame, configs: list[StrategyConfig], recommendation: Recommendation) -> SweepResult:
    """The grid's settings' figures (`setting_figures`) labelled with what each setting is."""
    by_label = {c.label: c for c in configs}
    points = figures[figures["config"].isin(by_label)].copy()
    points["strategy"] = points["config"].map(lambda label: by_label[label].strategy)
    points["threshold"] = points["config"].map(lambda label: by_label[label].trigger.fraction)
    points["keep_recent_tokens"] = points["config"].map(lambda label: dict(by_label[label].settings).get("keep_recent_tokens"))
    return SweepResult(points.reset_index(drop=True), recommendation)


def format_sweep(result: SweepResult) -> str:
    lines = ["Pareto frontier of the recommendable settings (tokens removed vs next-step facts kept, k=1):"]
    for _, row in result.frontier.iterrows():
        lines.append(f"  {row['config']:40} removed {100 * row['removed_share_mean']:5.1f}%  "
                     f"kept {100 * row['preservation_or_untouched_mean']:5.1f}%  compactions {row['compactions_mean']:.2f}")
    if result.frontier.empty:
        lines.append("  (none: no setting is recommendable)")
    lines += ["", result.recommendation.summary()]
    lines += [f"  ✗ {config}: {why}" for config, why in result.recommendation.not_recommendable.items()]
    return "\n".join(lines)


def sweep_document(result: SweepResult) -> dict:
    return {
        "points": json_records(result.points),
        "frontier": json_records(result.frontier),
        "recommendation": result.recommendation.as_json(),
    }
