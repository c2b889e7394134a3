"""The Python API's run and sweep, going as far as the command line does: the leaderboard, the
recommendation and the report, from a notebook. `compactlab.run` and `compactlab.sweep` are these.

It sits above the report (it writes one) and below nothing but `compactlab/__init__.py`: the run
itself (`compactlab.runs.runs.run`) cannot reach the report without turning the layers upside down.
Paths may be `str` or `Path`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import pandas as pd

from compactlab.report.run_report import write_run_report
from compactlab.results.catalogue import metric
from compactlab.results.recommendation import MIN_KEPT, Recommendation, Rule
from compactlab.runs import run_checks, run_result, runs, sweep_run
from compactlab.runs.run_config import RunConfig
from compactlab.runs.run_summary import write_summary
from compactlab.runs.sweep import DEFAULT_STRATEGIES, DEFAULT_THRESHOLDS


@dataclass(frozen=True)
class RunResult(run_result.RunResult):
    """A run's rows (`sessions`, `calls`, `compactions`), and what the command line makes of them:
    `summary` (summary.json, written on first use), `leaderboard()`, `recommendation()`, `write_report(path)`."""

    config: RunConfig = field(default_factory=RunConfig)
    rule: Rule = field(default_factory=Rule)
    written_summary: dict | None = field(default=None, repr=False)  # summary.json when a sweep wrote it already

    @cached_property
    def summary(self) -> dict:
        """summary.json, as `compactlab run` writes it (written into the run directory on first use)."""
        return self.written_summary or write_summary(self, self.config, self.rule)

    def leaderboard(self, raw: bool = False) -> pd.DataFrame:
        """One row per setting with its figures and 95% intervals (the CLI's and the report's leaderboard),
        under the labels they have there: "tokens removed", "tokens removed, 95% CI low", "… , sessions"
        (`readable_columns`). `raw=True`: summary.json's keys ("removed_share_mean", "removed_share_low", ...)."""
        board = pd.DataFrame(self.summary.get("leaderboard") or []).fillna(float("nan"))
        return board if raw else board.rename(columns=readable_columns(board.columns))

    def recommendation(self) -> Recommendation:
        """The one rule's verdict, with what it rests on and the sessions it left out."""
        found = self.summary.get("recommendation")
        return Recommendation.from_json(found) if found else Recommendation(None, "no setting was ranked", self.rule)

    def write_report(self, path: str | Path | None = None) -> Path:
        """The HTML report (default: report.html in the run directory); returns its path."""
        self.summary  # noqa: B018 - the report reads summary.json, written on first use
        return write_run_report(self.out, path)


def run(config: RunConfig | None = None, out: str | Path = "reports/run", **options) -> RunResult:
    """Replay `config` (default: every bundled dataset through every built-in strategy) into `out`;
    `options` as `compactlab.runs.runs.run` takes them (resume, overwrite, workers, limit, ...)."""
    config = config or RunConfig()
    result = runs.run(config, Path(out), **options)
    return RunResult(**_fields(result), config=run_checks.resolve(config)[0])


@dataclass(frozen=True)
class SweepResult:
    """A sweep: its run, the recommended setting as a configuration, and the same views as a run's."""

    run: RunResult
    recommended_toml: str | None  # what recommended.toml holds (None: no setting is recommendable)
    warnings: tuple[str, ...]  # e.g. the pick is at the grid's edge, with the next grid

    def leaderboard(self, raw: bool = False) -> pd.DataFrame:
        return self.run.leaderboard(raw)

    def recommendation(self) -> Recommendation:
        return self.run.recommendation()

    def write_report(self, path: str | Path | None = None) -> Path:
        return self.run.write_report(path)


def sweep(
    config: RunConfig | None = None,
    out: str | Path = "reports/sweep",
    strategies: Sequence[str] = DEFAULT_STRATEGIES,
    thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
    keep: Sequence[int] | None = None,
    min_preservation: float = MIN_KEPT,
    cache_expiry: Sequence[float | None] = (None,),
    **options,
) -> SweepResult:
    """`compactlab sweep`: strategies × trigger thresholds × keep budgets (× `cache_expiry`, the
    trigger's `on_cache_expiry` shares) on `config`'s datasets and window, with summary.json,
    sweep.json and recommended.toml written into `out`."""
    done = sweep_run.sweep_grid(
        config or RunConfig(), out, strategies, thresholds, keep, min_preservation, cache_expiry=cache_expiry, **options
    )
    resolved = run_checks.resolve(dataclasses.replace(config or RunConfig(), strategies=done.result.settings))[0]
    result = RunResult(**_fields(done.run), config=resolved, rule=Rule(min_preservation), written_summary=done.summary)
    return SweepResult(result, done.document["recommended_config"], tuple(done.document["warnings"]))


# A figure's column in summary.json's leaderboard: the metric's name and what of it the column holds.
_PARTS = {"mean": "", "total": "", "low": ", 95% CI low", "high": ", 95% CI high", "n": ", sessions"}
_OTHER_COLUMNS = {"compacted_in": "sessions compacted in", "compression": "compression (as printed)"}


def readable_columns(columns: Sequence[str]) -> dict[str, str]:
    """summary.json's leaderboard keys → the labels the leaderboard shows them under (`compactlab.results.catalogue`):
    `removed_share_mean` → "tokens removed", `removed_share_low` → "tokens removed, 95% CI low". A key that is
    no catalogued figure keeps its name ("setting", "sessions")."""
    readable = {}
    for column in columns:
        name, _, part = str(column).rpartition("_")
        try:
            readable[column] = metric(name).label + _PARTS[part] if part in _PARTS else _OTHER_COLUMNS[column]
        except KeyError:  # not a catalogued figure
            readable[column] = _OTHER_COLUMNS.get(column, column)
    return readable


def _fields(result: run_result.RunResult) -> dict:
    return {f.name: getattr(result, f.name) for f in dataclasses.fields(run_result.RunResult)}
