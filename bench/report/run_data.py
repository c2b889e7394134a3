"""A run directory read back for the report: what the run wrote, and nothing else.

The report is rebuilt from the run's files (config.json, meta.json, sessions.csv, summary.json,
sweep.json, the compaction row parts, session_facts.json and the estimation the run measured,
`compactlab.runs.report_inputs`): no session is read again and nothing is recomputed that the
run computed. Call rows are read only where the report draws them (`RunData.calls_of`: a few
sessions, a few columns). Nothing in the run directory is written. A run directory of an earlier
format is read through `compactlab.runs.run_format`, which upgrades it or names why it cannot.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import pandas as pd

from compactlab.llm.prices import resolve_prices
from compactlab.results.leaderboard import ranked
from compactlab.results.metrics import calls_frame, compactions_frame
from compactlab.results.recommendation import Recommendation
from compactlab.runs.report_inputs import RunEstimation, read_estimation, read_session_facts
from compactlab.runs.run_files import DONE, read_done
from compactlab.runs.run_format import upgraded_table
from compactlab.runs.run_storage import damaged_parts, run_calls, run_compaction_rows

CHART_COLUMNS = ["session", "setting", "call", "model", "window", "full_tokens", "context_tokens"]  # what a chart draws


@dataclass(frozen=True)
class RunData:
    path: Path
    config: dict
    meta: dict
    summary: dict  # summary.json
    sweep: dict | None  # sweep.json, if the run was a sweep
    sessions: pd.DataFrame  # sessions.csv: one row per session × strategy label
    session_facts: dict[str, dict] = field(default_factory=dict)  # session_facts.json: what the report shows of each session
    estimation: RunEstimation | None = None  # the token estimation the run measured (None: it did not)
    rows_of: tuple[str, ...] | None = None  # the sessions whose compaction rows are read (None: every session)

    @property
    def labels(self) -> list[str]:
        return sorted(self.sessions["setting"].unique()) if not self.sessions.empty else []

    @cached_property
    def _strategies(self) -> dict[str, str]:
        return {entry.get("label"): entry.get("name") for entry in self.config.get("strategies", []) if "name" in entry}

    def strategy_of(self, label: str) -> str:
        """The registered strategy a label replays (labels of sweeps and settings differ from names)."""
        return self._strategies.get(label, label)

    @cached_property
    def compaction_rows(self) -> tuple[dict, ...]:
        """The compaction rows as written (with the needed/lost item lists), of the sessions `rows_of`
        only when given (their parts alone are read: the rows of every session are most of a run's
        bytes, and the report shows a dozen sessions), in the order the run committed them."""
        if not (self.path / DONE).exists():
            return ()
        wanted = None
        if self.rows_of is not None:
            chosen = set(self.rows_of)
            wanted = [t for t in read_done(self.path / DONE).parts if t in chosen]
        return tuple(run_compaction_rows(self.path, sessions=wanted))

    def calls_of(self, sessions: list[str], columns: list[str] = CHART_COLUMNS) -> pd.DataFrame:
        """The call rows of `sessions` only, `columns` only (their parts alone are read)."""
        if not (self.path / DONE).exists():
            return pd.DataFrame(columns=columns)
        return run_calls(self.path, sessions=sessions, columns=columns)

    @cached_property
    def calls(self) -> pd.DataFrame:
        """Every call row with its costs (for scripts and tests; the report reads `calls_of`)."""
        if not (self.path / DONE).exists():
            return pd.DataFrame()
        return calls_frame(run_calls(self.path), resolve_prices(self.config.get("prices") or None))

    @cached_property
    def compactions(self) -> pd.DataFrame:
        """The compaction rows as a frame (`compactlab.results.metrics.compactions_frame`)."""
        return compactions_frame(list(self.compaction_rows))


def read_json(path: Path) -> dict | None:
    """A run's JSON file (None when the run has none)."""
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def load_run(path: str | Path) -> RunData:
    """A run directory with its report inputs: what the report renders (compaction rows read when used)."""
    path = Path(path)
    if not (path / "config.json").exists() or not (path / DONE).exists():
        raise FileNotFoundError(
            f"{path} is not a run directory (no config.json and done.jsonl): run `compactlab run --out {path}` first"
        )
    light = load_light(path)
    return RunData(
        path=light.path,
        config=light.config,
        meta=light.meta,
        summary=light.summary,
        sweep=light.sweep,
        sessions=light.sessions,
        session_facts=read_session_facts(path),
        estimation=read_estimation(path),
    )


def load_light(path: str | Path) -> RunData:
    """A run's configuration, statistics and per-session metrics only (sessions.csv; no row files).

    Enough to compare runs: a committed reference run keeps these small files, not the row parts.
    """
    path = Path(path)
    config = read_json(path / "config.json")
    summary = read_json(path / "summary.json")
    meta = read_json(path / "meta.json") or {}
    if config is None or summary is None:
        raise FileNotFoundError(
            f"{path} is not a finished run directory (needs config.json, summary.json and sessions.csv): "
            f"`compactlab run --out {path}` writes them"
        )
    sessions = upgraded_table(path, meta)
    if sessions.empty:
        raise ValueError(f"{path}: sessions.csv has no rows")
    if (path / DONE).exists():  # (a committed reference run keeps no rows)
        # Its figures stand only while the rows they were made from do: a part gone or damaged is an
        # error (its footer read: the report reads the compaction parts whole, and the calls it draws).
        damaged = damaged_parts(path, whole=False)
        if damaged:
            raise damaged[0]
    return RunData(path=path, config=config, meta=meta, summary=summary, sweep=read_json(path / "sweep.json"), sessions=sessions)


def ranked_rows(run: RunData) -> pd.DataFrame:
    """The rows the statistics use (`compactlab.results.leaderboard.ranked`): choosable strategies, undamaged sessions."""
    return ranked(run.sessions)


def figures_and_recommendation(run: RunData) -> tuple[pd.DataFrame, Recommendation]:
    """The settings' figures and the recommendation as the run's summary.json holds them."""
    board = pd.DataFrame(run.summary.get("leaderboard") or []).fillna(float("nan"))
    return board, Recommendation.from_json(run.summary["recommendation"])
