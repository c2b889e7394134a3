"""A run's result: its tables, from its sessions' results as they arrived or read back from its
directory (`finish`, which also writes sessions.csv), and the presets against the real engines.

`compactlab.runs.runs.run` makes one at the end of a run; the rows themselves stay in the run
directory, read when asked for (`RunResult.calls`, `RunResult.compactions`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import pandas as pd

from compactlab.llm.prices import resolve_prices
from compactlab.results.metrics import calls_frame, compactions_frame
from compactlab.results.real_engines import engines_document, preset_of_format
from compactlab.results.run_failures import mark_incomplete
from compactlab.runs.run_files import write_atomic
from compactlab.runs.run_storage import run_calls, run_compaction_rows, run_compaction_rows_holding
from compactlab.runs.session_results import SessionResults, results_from_rows
from compactlab.sessions.importers import load_file
from compactlab.sessions.loading import ReadInputs
from compactlab.sessions.neutralise import csv_frame


@dataclass(frozen=True)
class RunResult:
    """What a finished run holds: its directory, the per-session table and what was read.

    `sessions` is sessions.csv (one row per session × setting); `calls` and `compactions` read the
    rows from the run directory when first asked for, so a large run's rows need not fit in memory.
    """

    out: Path
    sessions: pd.DataFrame  # sessions.csv: one row per session × setting
    read: ReadInputs  # what the run read (the sessions' messages are not kept)
    resumed_units: int
    max_failed_share: float = 0.0  # see bench/results/run_failures.py
    recorded_fidelity: pd.DataFrame = field(
        default_factory=pd.DataFrame
    )  # gathered per session (compactlab.runs.session_results)
    cost_model_check: pd.DataFrame = field(default_factory=pd.DataFrame)
    call_models: pd.DataFrame = field(default_factory=pd.DataFrame)  # (session, model) pairs, for the cost coverage
    prices: dict | None = None  # the configuration's, for the costs of `calls`
    llm_calls: str | None = None  # what the run's LLM calls came to (`CallAccount.line`), when it had any
    replayed_again: tuple[str, ...] = ()  # sessions --resume replayed again: their row parts were gone or unreadable
    engines: dict = field(default_factory=dict)  # the presets against the real engines (`compactlab.results.real_engines`)
    real_costs: pd.DataFrame = field(default_factory=pd.DataFrame)  # per real compaction (`compactlab.results.real_costs`)

    @cached_property
    def calls(self) -> pd.DataFrame:
        """Every call row, with its costs, read from the run directory when asked for (a large run's
        rows need not fit in memory; see `compactlab.runs.run_storage.run_calls` for one setting or session)."""
        return calls_frame(run_calls(self.out), resolve_prices(self.prices or None))

    @cached_property
    def compactions(self) -> pd.DataFrame:
        """Every compaction row, read from the run directory when asked for."""
        return compactions_frame(run_compaction_rows(self.out))

    def compactions_holding(self, column: str) -> pd.DataFrame:
        """The compaction rows whose `column` holds a value, as a frame (those rows of `compactions`,
        in its order, read without the others: `run_compaction_rows_holding`). Only the columns of
        the rows themselves are the same as there: drift's counts follow each row's predecessors."""
        if "compactions" in self.__dict__:  # read already
            frame = self.compactions
            return frame[frame[column].notna()] if column in frame else frame.iloc[:0]
        return compactions_frame(run_compaction_rows_holding(self.out, column))


def finish(
    out: Path,
    read: ReadInputs,
    resumed_units: int = 0,
    prices: dict | None = None,
    results: SessionResults | None = None,
    max_failed_share: float = 0.0,
    engines: dict | None = None,
) -> RunResult:
    """The run's tables from its sessions' results (`results`, gathered as they arrived), or
    from the committed rows in `out`, read a session at a time; `engines`: the presets against the
    real engines as the replaying processes found them (None: from the files read again)."""
    if results is None:
        results = results_from_rows(out, read, resolve_prices(prices or None))
    sessions = results.summary
    if not sessions.empty:
        # A session with damaged (skipped) records lacks messages its recorded token counts
        # include, so its replay mixes two histories; it is replayed and shown, not ranked.
        damaged = {t.id for t in read.sessions if t.skipped}
        sessions["damaged"] = sessions["session"].isin(damaged)
        sessions = mark_incomplete(sessions, max_failed_share)
        write_atomic(
            out / "sessions.csv", csv_frame(sessions).to_csv(index=False)
        )  # formula cells neutralised (compactlab.sessions.neutralise)
    return RunResult(
        out,
        sessions,
        read,
        resumed_units,
        max_failed_share,
        results.recorded_fidelity,
        results.cost_model_check,
        results.call_models,
        prices,
        engines=real_engines(read) if engines is None else engines,
        real_costs=results.real_costs,
    )


def real_engines(read: ReadInputs) -> dict:
    """The presets against the real engines' compactions in the run's data: the few files that hold
    real compactions by an engine with a preset are read again (the run keeps no messages)."""
    wanted = [t for t in read.sessions if t.compactions and preset_of_format(t.source_format)]
    found = []
    for path in dict.fromkeys(t.source_path for t in wanted):
        ids = {t.id for t in wanted if t.source_path == path}
        found += [t for t in load_file(path, lenient=any(t.skipped for t in wanted if t.source_path == path)) if t.id in ids]
    return engines_document(found) if found else {}
