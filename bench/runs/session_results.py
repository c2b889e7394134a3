"""What a run keeps of each session's replays: a few small rows, so its memory does not grow
with its rows.

The process that replays a session turns its rows into `SessionResults` at once: its rows
of sessions.csv (`compactlab.results.metrics.session_summary`, one per setting), its real compactions'
fidelity, its cost-model check and the models its calls name (for the cost coverage). Every one of
these is computed per session × setting, or per session, so computing them a session at
a time gives the rows the whole run's frames give (to the last bits of a float: pandas picks how
it sums a group by the whole frame, so the report reads a run's rows back the same way,
`results_from_rows`, and agrees with sessions.csv to the bit). `RunTotals` gathers them as they arrive, in
blocks, and hands back the run's tables; the rows themselves stay in the run directory
(`compactlab.runs.run_storage`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from compactlab.llm.prices import PriceTable
from compactlab.results.metrics import (
    calls_frame,
    compactions_frame,
    cost_model_check,
    derived_call_columns,
    recorded_fidelity,
    rows_of_each,
    with_columns,
)
from compactlab.results.real_costs import RECORDED, real_costs
from compactlab.results.summary_arrays import Columns, cost_model_check_arrays, first_rows, summary_from_arrays
from compactlab.runs.estimation_parts import EstimationParts
from compactlab.runs.report_inputs import Estimated
from compactlab.runs.run_files import DONE, read_done
from compactlab.runs.run_storage import part_calls, part_compaction_rows
from compactlab.runs.text_codes import TextCodes, coded_text, summary_groups


@dataclass(frozen=True)
class SessionResults:
    summary: pd.DataFrame  # sessions.csv rows, one per setting
    recorded_fidelity: pd.DataFrame  # compactlab.results.metrics.recorded_fidelity
    cost_model_check: pd.DataFrame  # compactlab.results.metrics.cost_model_check
    call_models: pd.DataFrame  # the (session, model) pairs its calls name, for compactlab.results.cost_coverage
    # What the report needs of it besides its rows (`compactlab.runs.report_inputs`): its facts, and its estimation when asked.
    session_facts: pd.DataFrame = field(default_factory=pd.DataFrame)
    estimation: list[Estimated] | None = None
    real_costs: pd.DataFrame = field(default_factory=pd.DataFrame)  # compactlab.results.real_costs, per real compaction

    def with_inputs(self, facts: dict, estimated: Estimated | None) -> SessionResults:
        """These results with the session's report inputs (`compactlab.runs.report_inputs`)."""
        return replace(self, session_facts=pd.DataFrame([facts]), estimation=None if estimated is None else [estimated])


def session_results(calls: pd.DataFrame, compaction_rows: list[dict], sessions, prices: PriceTable | None) -> SessionResults:
    """The results of the call rows `calls` (a frame, or arrays with coded text columns as
    `compactlab.runs.call_rows.call_arrays` makes them) and their compaction rows; `sessions`: the
    sessions they replay, or what the run kept of them (their recorded calls)."""
    if isinstance(calls, dict):  # arrays: grouped by the codes the text columns came as, no frame made unless needed
        return _results_of_arrays(calls, compaction_rows, sessions, prices)
    frame = calls_frame(calls, prices)
    compactions = compactions_frame(compaction_rows)
    if frame.empty:  # a session without recorded calls is not replayed
        return no_rows()
    models = frame[["session", "model"]].drop_duplicates()
    return SessionResults(
        summary_from_arrays(frame, compactions),  # (session_summary's rows, computed on arrays)
        recorded_fidelity(compactions, frame),
        cost_model_check(frame, sessions),
        models,
        real_costs=real_costs(frame, compactions, sessions, prices),
    )


def _results_of_arrays(calls: dict, compaction_rows: list[dict], sessions, prices: PriceTable | None) -> SessionResults:
    """`session_results` of call rows as arrays (the replaying worker's): the same results, made from
    the columns (`compactlab.results.summary_arrays.Columns`); the call rows' frame (`calls_frame`'s)
    is made only for the figures of real compactions, which look rows up in it."""
    if not len(calls["call"]):  # a session without recorded calls is not replayed
        return no_rows()
    rows_by_model = rows_of_each(calls["model"])
    groups = summary_groups(calls["session"], calls["setting"])
    columns = {name: coded_text(values) if isinstance(values, tuple) else values for name, values in calls.items()}
    added = derived_call_columns(Columns(columns), prices, rows_by_model)
    every = Columns({**columns, **added})
    compactions = compactions_frame(compaction_rows)
    real = not compactions.empty and bool(
        (compactions["strategy"] == RECORDED).any()
        or ("fidelity_recorded" in compactions and compactions["fidelity_recorded"].notna().any())
    )
    frame = with_columns(pd.DataFrame(columns, copy=False), added) if real else None  # (calls_frame's)
    return SessionResults(
        summary_from_arrays(every, compactions, groups),
        recorded_fidelity(compactions, frame),
        cost_model_check_arrays(every, calls["session"], sessions),
        _call_models(calls["session"], calls["model"]),
        real_costs=real_costs(frame, compactions, sessions, prices) if frame is not None else pd.DataFrame(),
    )


def _call_models(sessions: TextCodes, models: TextCodes) -> pd.DataFrame:
    """The (session, model) pairs of the rows, each once, in the order they first come (as a
    frame's drop_duplicates keeps them)."""
    (session_codes, session_names), (model_codes, model_names) = sessions, models
    first = first_rows(np.asarray(session_codes), np.asarray(model_codes))
    return pd.DataFrame(
        {
            "session": coded_text((np.asarray(session_codes)[first], session_names)),
            "model": coded_text((np.asarray(model_codes)[first], model_names)),
        }
    )


FRAMES = ("summary", "recorded_fidelity", "cost_model_check", "call_models", "session_facts", "real_costs")  # the frames
BLOCK = 100  # sessions' results joined into one frame at a time: a small frame costs more than its rows, so few are kept


class RunTotals:
    """The results of a run's sessions, in the order they were added."""

    def __init__(self) -> None:
        self.blocks: dict[str, list[pd.DataFrame]] = {name: [] for name in FRAMES}
        self.pending: dict[str, list[pd.DataFrame]] = {name: [] for name in FRAMES}
        # The sessions' estimation, when the run measures it: its call rows go to disk a block at a time.
        self.estimation: EstimationParts | None = None
        self.pending_estimation: list[Estimated] = []

    def add(self, results: SessionResults) -> None:
        if results.estimation is not None:
            self.estimation = self.estimation if self.estimation is not None else EstimationParts()
            self.pending_estimation += results.estimation
        for name, frames in self.pending.items():
            frame = getattr(results, name)
            if not frame.empty:
                frames.append(frame)
        if len(self.pending["summary"]) >= BLOCK:
            self._join()

    def _join(self) -> None:
        for name, frames in self.pending.items():
            if frames:
                self.blocks[name].append(_concat(frames))
                frames.clear()
        if self.estimation is not None and self.pending_estimation:
            pending = self.pending_estimation
            self.estimation.add([e.result for e in pending], [row for e in pending for row in e.size_rows])
            self.pending_estimation = []

    def totals(self) -> SessionResults:
        """The run's tables: sessions.csv's rows sorted by session and setting, as one
        frame of every row would group them; the others in the order the sessions came. (The
        estimation stays in `self.estimation`: its call rows are on disk.)"""
        self._join()
        tables = {name: _concat(blocks) for name, blocks in self.blocks.items()}
        summary, check = tables["summary"], tables["cost_model_check"]
        if not summary.empty:
            summary = summary.sort_values(["session", "setting"], kind="stable").reset_index(drop=True)
        if not check.empty:  # by session, as cost_model_check orders a whole run's
            check = check.sort_values("session", kind="stable").reset_index(drop=True)
        return SessionResults(
            summary,
            tables["recorded_fidelity"],
            check,
            tables["call_models"],
            tables["session_facts"],
            real_costs=tables["real_costs"],
        )


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    if not frames:
        return pd.DataFrame()
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0].reset_index(drop=True)


def no_rows() -> SessionResults:
    return SessionResults(**{name: pd.DataFrame() for name in FRAMES})


def results_from_rows(out: Path, read, prices: PriceTable | None) -> SessionResults:
    """The results of every committed session of the run in `out`, read back one at a time;
    `read`: what the run read (`compactlab.sessions.loading.ReadInputs`: the sessions' recorded calls)."""
    log, totals = read_done(Path(out) / DONE), RunTotals()
    kept = {t.id: t for t in read.sessions}
    for session, commits in log.parts.items():
        calls = part_calls(out, [c["calls"] for c in commits])
        rows = part_compaction_rows(out, [c["compactions"] for c in commits])
        totals.add(session_results(calls, rows, [kept[session]] if session in kept else [], prices))
    return totals.totals()
