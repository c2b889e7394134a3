"""A sweep from start to end: the grid replayed like any run, its summary.json, sweep.json and the
recommended setting as recommended.toml. `compactlab sweep` and `compactlab.sweep(...)` are this
function (the report is the caller's: it sits above the runs)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from compactlab.replay.setting import Setting
from compactlab.results.recommendation import MIN_KEPT, Recommendation, Rule
from compactlab.runs import run_result, runs
from compactlab.runs.next_command import CommandLine, from_config
from compactlab.runs.next_steps import next_steps
from compactlab.runs.run_config import RunConfig
from compactlab.runs.run_files import write_atomic
from compactlab.runs.run_summary import run_summary
from compactlab.runs.sweep import DEFAULT_STRATEGIES, DEFAULT_THRESHOLDS, SweepResult, analyse, grid, sweep_document

NO_RECOMMENDATION = "no-recommendation.txt"  # what a sweep writes in place of recommended.toml


@dataclass(frozen=True)
class SweepRun:
    run: run_result.RunResult  # the grid's run: every setting's rows, as any run's
    summary: dict  # summary.json
    result: SweepResult  # the settings' figures, the frontier, the recommendation
    document: dict  # sweep.json

    @property
    def recommendation(self) -> Recommendation:
        return self.result.recommendation

    @property
    def leaderboard(self) -> pd.DataFrame:
        return self.result.points


def checked_grid(
    strategies: Sequence[str],
    thresholds: Sequence[float],
    keep: Sequence[int] | None,
    min_preservation: float,
    cache_expiry: Sequence[float | None] = (None,),
) -> list[Setting]:
    """The grid's settings, or the error that names what is out of range (before anything is replayed)."""
    settings = grid(
        list(strategies), list(thresholds), None if keep is None else list(keep), keep is not None, tuple(cache_expiry)
    )
    if not 0 < min_preservation <= 1:
        raise ValueError(f"--min-preservation: {min_preservation:g} out of range: a share of facts in (0, 1]")
    return settings


def grid_config(
    config: RunConfig,
    strategies: Sequence[str],
    thresholds: Sequence[float],
    keep: Sequence[int] | None,
    min_preservation: float,
    cache_expiry: Sequence[float | None] = (None,),
) -> RunConfig:
    """`config` with the grid's settings as its strategies (the error naming what is out of range, else)."""
    settings = checked_grid(strategies, thresholds, keep, min_preservation, cache_expiry)
    # No token estimation: the grid's settings do not change it, and a sweep is many settings' work already.
    return dataclasses.replace(config, strategies=tuple(settings), estimation=False).for_its_data()


def sweep_grid(
    config: RunConfig,
    out: str | Path,
    strategies: Sequence[str] = DEFAULT_STRATEGIES,
    thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
    keep: Sequence[int] | None = None,
    min_preservation: float = MIN_KEPT,
    limit: int | None = None,
    command: CommandLine | None = None,
    cache_expiry: Sequence[float | None] = (None,),
    **run_options,
) -> SweepRun:
    """Replay `strategies` × `thresholds` × `keep` budgets (× the trigger's `cache_expiry` shares) on
    `config`'s datasets and window into `out`;
    `run_options` go to `compactlab.runs.runs.run` (resume, workers, summarizer, `checked`: `check_run`'s of
    `grid_config`, ...). `command`: the user's, which every next command printed keeps (default: the
    configuration's datasets and window).

    What it found is always written: recommended.toml, or no-recommendation.txt with the reasons and
    the next command."""
    config = grid_config(config, strategies, thresholds, keep, min_preservation, cache_expiry)
    settings = list(config.strategies)
    out = Path(out)
    if command is None:
        command = from_config("sweep", config.datasets, config.window, out)
    result = runs.run(config, out, limit=limit, **run_options)
    summary = run_summary(result, config, Rule(min_preservation))
    if summary.get("leaderboard"):
        summary["next_steps"] = [step.as_json() for step in next_steps(summary, command, thresholds)]
    write_atomic(out / "summary.json", json.dumps(summary, indent=2, default=str) + "\n")  # once, its next steps in it
    if not summary.get("leaderboard"):
        raise ValueError(f"{out}: the sweep replayed no session the statistics can use (see summary.json's left_out)")
    figures = pd.DataFrame(summary["leaderboard"]).fillna(float("nan"))
    analysis = analyse(figures, settings, Recommendation.from_json(summary["recommendation"]), config, command)
    document = sweep_document(analysis)
    if document["recommended_config"] and limit is not None:
        # The grid saw only the first `limit` files: the configuration replays the same only with the same limit.
        document["recommended_config"] = (
            f"# swept with --limit {limit}: `compactlab run --config recommended.toml --limit {limit}` replays it\n"
            + document["recommended_config"]
        )
    write_atomic(out / "sweep.json", json.dumps(document, indent=2, default=str) + "\n")
    # One of the two, never both: a --resume or a rerun that now finds the other removes the stale one.
    if document["recommended_config"]:
        write_atomic(out / "recommended.toml", document["recommended_config"])
        (out / NO_RECOMMENDATION).unlink(missing_ok=True)
    else:
        write_atomic(out / NO_RECOMMENDATION, no_recommendation_text(analysis.recommendation, summary))
        (out / "recommended.toml").unlink(missing_ok=True)
    return SweepRun(result, summary, analysis, document)


def no_recommendation_text(recommendation: Recommendation, summary: dict) -> str:
    """no-recommendation.txt: why no setting is recommended, each setting's failed conditions, what to try."""
    lines = [recommendation.summary().splitlines()[0], ""]
    lines += [f"  ✗ {setting}: {why}" for setting, why in recommendation.not_recommendable.items()]
    steps = summary.get("next_steps") or []
    if steps:
        lines += ["", "Next:"] + [f"  {step['cause']}:\n    {step['command']}" for step in steps]
    return "\n".join(lines) + "\n"
