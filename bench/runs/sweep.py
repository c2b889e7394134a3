"""`compactlab sweep`: a grid of settings, its Pareto frontier, and a recommended setting.

The grid is strategies × trigger thresholds × keep-recent budgets (the budget applies to
strategies that have a `keep_recent_tokens` setting). Each point is replayed like any run, and its
figures are those of any run (`compactlab.results.leaderboard.setting_figures`): tokens removed and next-step
facts kept (k=1), averaged over sessions, a session it never compacted counting as kept.
The recommendation and the frontier are those of the one rule, `compactlab.results.recommendation` (with
`--min-preservation` as its threshold), stated in full in the output and in sweep.json.

A setting is labelled `strategy@F/keep=N`: it compacts when the context reaches F of the window
and keeps N tokens of recent history verbatim. The recommended setting is also printed as a
configuration (`compactlab.runs.config_toml`) that `compactlab run --config` replays to the same numbers, and
a pick at the edge of the grid comes with the next grid to try, as the best may lie beyond it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pandas as pd

from compactlab.contract import Trigger
from compactlab.replay.setting import Setting
from compactlab.results.leaderboard import json_records
from compactlab.results.recommendation import Recommendation
from compactlab.results.terminal_table import wrapped
from compactlab.runs.config_toml import run_config_toml
from compactlab.runs.next_command import CommandLine, from_config
from compactlab.runs.run_config import RunConfig
from compactlab.strategies.registry import settings_of

DEFAULT_STRATEGIES = ("summarize", "iterative-merge", "observation-masking", "prune", "evict")
DEFAULT_THRESHOLDS = (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)
DEFAULT_KEEP = (8_000, 16_000, 32_000)
KEEP = "keep_recent_tokens"
LABELS = (
    "@F: compacts when the context reaches F of the window; keep=N: keeps the newest N tokens of history verbatim; "
    "expired@F: also compacts from F of the window at a call made after the prompt cache expired"
)


def grid(strategies, thresholds, keep_budgets=None, strict_keep: bool = False, cache_expiry=(None,)) -> list[Setting]:
    """The settings to replay. `keep_budgets` (None: the defaults) go to the strategies that have a
    keep budget; with `strict_keep` (the user named the budgets), every strategy must have one: a
    budget it would silently ignore is an error. `cache_expiry`: the trigger's `on_cache_expiry`
    shares to sweep (None: without that rule), labelled `/expired@F`."""
    bad = [t for t in thresholds if not 0 < t <= 1]
    if bad:
        raise ValueError(
            f"--thresholds: {', '.join(f'{t:g}' for t in bad)} out of range: a threshold is a fraction of the window in (0, 1]"
        )
    bad = [t for t in cache_expiry if t is not None and not 0 < t <= 1]
    if bad:
        raise ValueError(
            f"--on-cache-expiry: {', '.join(f'{t:g}' for t in bad)} out of range: a share of the window in (0, 1] at which "
            "to compact once the prompt cache has expired"
        )
    if keep_budgets is not None:
        bad = [k for k in keep_budgets if k <= 0]
        if bad:
            raise ValueError(f"--keep: {', '.join(str(k) for k in bad)} out of range: a keep budget is a number of tokens > 0")
        without = [name for name in strategies if KEEP not in settings_of(name)]
        if without and strict_keep:
            having = [name for name in strategies if name not in without]
            raise ValueError(
                f"--keep: {', '.join(without)} {'has' if len(without) == 1 else 'have'} no setting {KEEP!r}, so the budgets would be "
                f"ignored for {'it' if len(without) == 1 else 'them'}; sweep "
                + (f"--strategy {' '.join(having)} with --keep and the others without it" if having else "them without --keep")
            )
    settings = []
    for name in dict.fromkeys(strategies):
        has_keep = KEEP in settings_of(name)
        budgets = (keep_budgets if keep_budgets is not None else DEFAULT_KEEP) if has_keep else (None,)
        for threshold in dict.fromkeys(thresholds):
            for keep in dict.fromkeys(budgets):
                for expired in dict.fromkeys(cache_expiry):
                    label = f"{name}@{threshold:g}" + (f"/keep={keep}" if keep is not None else "")
                    label += f"/expired@{expired:g}" if expired is not None else ""
                    parameters = ((KEEP, keep),) if keep is not None else ()
                    settings.append(Setting(label, name, parameters, Trigger(fraction=threshold, on_cache_expiry=expired)))
    return settings


@dataclass(frozen=True)
class SweepResult:
    points: pd.DataFrame  # the settings' figures, with their strategy, threshold and keep budget
    recommendation: Recommendation
    settings: tuple[Setting, ...] = ()
    config: RunConfig | None = None  # the run configuration the grid was replayed with
    edges: tuple[str, ...] = field(default=())  # warnings: the pick sits at the grid's edge

    @property
    def frontier(self) -> pd.DataFrame:
        """The Pareto frontier of the recommendable settings, by tokens removed."""
        order = {label: i for i, label in enumerate(self.recommendation.frontier)}
        return self.points[self.points["setting"].isin(order)].sort_values("setting", key=lambda c: c.map(order))

    @property
    def recommended(self) -> Setting | None:
        return next((c for c in self.settings if c.label == self.recommendation.setting), None)

    def recommended_toml(self) -> str | None:
        """A run configuration replaying the recommended setting as the sweep did; None without one."""
        if self.recommended is None or self.config is None:
            return None
        return run_config_toml(dataclasses.replace(self.config, strategies=(self.recommended,)))


def analyse(
    figures: pd.DataFrame,
    settings: list[Setting],
    recommendation: Recommendation,
    config: RunConfig | None = None,
    command: CommandLine | None = None,
) -> SweepResult:
    """The grid's settings' figures (`setting_figures`) labelled with what each setting is; `command`: the
    user's, which the next grid keeps but for its grid (default: the configuration's datasets and window)."""
    by_label = {c.label: c for c in settings}
    points = figures[figures["setting"].isin(by_label)].copy()
    points["strategy"] = points["setting"].map(lambda label: by_label[label].strategy)
    points["threshold"] = points["setting"].map(lambda label: _threshold(by_label[label]))
    points["keep_recent_tokens"] = points["setting"].map(lambda label: dict(by_label[label].settings).get(KEEP))
    points["on_cache_expiry"] = points["setting"].map(lambda label: getattr(by_label[label].trigger, "on_cache_expiry", None))
    picked = by_label.get(recommendation.setting) if recommendation.setting else None
    if picked is not None and not (points.loc[points["setting"] == picked.label, "removed_share_mean"].fillna(0) > 0).any():
        picked = None  # nothing compacted: no edge to go beyond (the next steps name a smaller window, lower triggers)
    if command is None:
        command = from_config("sweep", config.datasets if config else (), config.window if config else None)
    edges = edge_warnings(picked, settings, command)
    return SweepResult(points.reset_index(drop=True), recommendation, tuple(settings), config, edges)


def _threshold(setting: Setting) -> float:
    assert setting.trigger is not None, setting  # every setting of a sweep has its trigger
    return setting.trigger.fraction


def _keep(setting: Setting) -> int | None:
    value = dict(setting.settings).get(KEEP)
    assert value is None or isinstance(value, int), setting  # a sweep sets whole token counts
    return value


def edge_warnings(picked: Setting | None, settings: list[Setting], command: CommandLine) -> tuple[str, ...]:
    """Where the pick is the smallest or largest value its strategy was swept at, the next grid to try:
    `command` (the user's sweep: its datasets, window and configuration kept) with that grid."""
    if picked is None:
        return ()
    same = [c for c in settings if c.strategy == picked.strategy]
    thresholds = sorted({_threshold(c) for c in same})
    budgets = sorted({keep for c in same if (keep := _keep(c)) is not None})
    threshold, keep = _threshold(picked), _keep(picked)
    warnings = []
    suggestion_t = _next_thresholds(threshold, thresholds)
    suggestion_k = _next_budgets(keep, budgets) if keep is not None else None
    if suggestion_t is not None or suggestion_k is not None:
        where = []
        if suggestion_t is not None:
            where.append(f"threshold {threshold:g} is the {'lowest' if threshold == thresholds[0] else 'highest'} swept")
        if suggestion_k is not None:
            where.append(f"keep={keep} is the {'smallest' if keep == budgets[0] else 'largest'} swept")
        grid_next = command.with_flag("--strategy", picked.strategy).with_flag(
            "--thresholds", *(f"{t:g}" for t in suggestion_t or [threshold])
        )
        grid_next = grid_next.with_flag("--keep", *(suggestion_k or [keep])) if keep is not None else grid_next.without("--keep")
        warnings.append(
            f"the pick is at the edge of the grid ({'; '.join(where)}): a better setting may lie beyond it. "
            f"Next grid: {grid_next.into('next-grid').text}"
        )
    return tuple(warnings)


# The next grid goes beyond the edge and keeps the swept neighbour on the other side of the pick: a
# grid that ends at the pick would put it at the opposite edge, and the next warning would send the
# user back the way they came.
def _next_thresholds(value: float, swept: list[float]) -> list[float] | None:
    if value == swept[0] and value > 0.1 + 1e-9:
        beyond = [round(t, 2) for t in (value - 0.3, value - 0.2, value - 0.1) if t > 0.05]
        return [*beyond, value, *swept[1:2]]
    if value == swept[-1] and value < 1.0:
        return sorted({*swept[-2:-1], round(value, 2), round((value + 1) / 2, 3), 1.0})
    return None


def _next_budgets(value: int, swept: list[int]) -> list[int] | None:
    if value == swept[0] and value >= 1_000:
        return [value // 4, value // 2, value, *swept[1:2]]
    if value == swept[-1]:
        return [*swept[-2:-1], value, value * 2, value * 4]
    return None


def format_sweep(result: SweepResult, width: int | None = None) -> str:
    """The frontier (identical settings on one line), what never compacted, the pick and its configuration;
    `width`: a terminal's columns, which the prose is wrapped to (the configuration is left whole)."""
    lines = [f"Pareto frontier of the recommendable settings (tokens removed vs next-step facts kept, k=1); {LABELS}:"]
    frontier = result.frontier
    moved = frontier[frontier["removed_share_mean"] > 0]
    for labels, row in _identical(moved):
        lines.append(
            f"  removed {100 * row['removed_share_mean']:5.1f}%  kept {100 * row['preservation_or_untouched_mean']:5.1f}%  "
            f"compactions {row['compactions_mean']:5.2f}  {', '.join(labels)}"
        )
    if frontier.empty:
        lines.append("  (none: no setting is recommendable)")
    idle = result.points[(result.points["removed_share_mean"].fillna(0) <= 0)]
    if len(idle):
        lines.append(
            f"  {len(idle)} of {len(result.points)} settings removed nothing at this window (no trigger fired, or nothing they may remove): "
            f"{', '.join(idle['setting'].head(6))}{' …' if len(idle) > 6 else ''}"
        )
    lines += ["", result.recommendation.summary()]
    lines += [f"  ✗ {setting}: {why}" for setting, why in result.recommendation.not_recommendable.items()]
    lines += [f"warning: {text}" for text in result.edges]
    lines = lines if width is None else wrapped(lines, width)
    toml = result.recommended_toml()
    if toml:
        lines += [
            "",
            "The recommended setting as a run configuration (`compactlab run --config FILE` replays it to the numbers above):",
            "",
            toml.rstrip(),
        ]
    return "\n".join(lines)


def _identical(frame: pd.DataFrame) -> list[tuple[list[str], pd.Series]]:
    """Settings with the same figures (e.g. two summarizers writing the same offline summary) share a line."""
    groups: dict[tuple, list[str]] = {}
    rows: dict[tuple, pd.Series] = {}
    for _, row in frame.iterrows():
        key = (row["removed_share_mean"], row["preservation_or_untouched_mean"], row["compactions_mean"])
        groups.setdefault(key, []).append(row["setting"])
        rows.setdefault(key, row)
    return [(labels, rows[key]) for key, labels in groups.items()]


def sweep_document(result: SweepResult) -> dict:
    return {
        "points": json_records(result.points),
        "frontier": json_records(result.frontier),
        "recommendation": result.recommendation.as_json(),
        "recommended_config": result.recommended_toml(),
        "warnings": list(result.edges),
    }
