"""One session's part of a run: its settings planned, replayed (in turn, or side by side while
LLM calls are in flight) and their rows written as the session's Parquet parts.

The process that replays a session (a worker, a Dask task, or the run's own threads) runs a
`SessionJob`, which the run makes once: it holds what every session's replays share.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from compactlab.contract import Strategy, Summarizer
from compactlab.llm.prices import PriceTable
from compactlab.memo import forget
from compactlab.replay.replay import CALL_COLUMNS, CallColumns, Replayed, replay
from compactlab.replay.setting import Setting, estimator_of
from compactlab.replay.shared_compactions import SharedCompactions, shared_by_setting
from compactlab.results.real_engines import EngineRow, engine_rows
from compactlab.results.same_by_construction import as_member
from compactlab.runs.call_rows import SharedRows, call_arrays
from compactlab.runs.report_inputs import estimated, session_facts
from compactlab.runs.run_storage import (
    calls_table,
    compactions_table,
    part_calls,
    part_compaction_rows,
    write_part,
)
from compactlab.runs.session_results import SessionResults, session_results
from compactlab.scoring.judge import FanOut, in_turn, score_compactions
from compactlab.scoring.next_action import Judge
from compactlab.sessions.model import Session
from compactlab.tokens.context_windows import ContextWindows
from compactlab.tokens.metering import Meter
from compactlab.tokens.tokenizers import TokenCache

# Texts a replaying process keeps counts of (some 10 MB). Past it, the cache starts afresh: held
# longer, it grew with the corpus (issue 31). Counts reused across sessions are few: on the bundled
# data a cache of every session's texts would save 5.3% of the characters encoded (a session holds
# 75 thousand distinct characters at the median, 1 million at most; all 180 hold 17.5 million).
CACHED_CHARS = 4_000_000


@dataclass(frozen=True)
class Replays:
    """One session's replays under the settings not done yet, as the process that ran them hands them back."""

    labels: list[str]
    parts: dict[str, str] | None  # its row parts by kind, written (compactlab.runs.run_storage); None: nothing new to commit
    results: SessionResults  # what the run keeps of it, its earlier committed rows included
    # Its real compactions beside its engine's preset (`compactlab.results.real_engines`), made here where
    # its messages are, so the run's process need not read the file again.
    engines: tuple[EngineRow, ...] = ()


@dataclass(frozen=True)
class SessionPlan:
    """What the settings of one session share while they replay (side by side in threads, or in turn)."""

    session: Session
    strategies: list[Setting]  # the settings not done yet, in the run's order
    meters: dict[str, Meter]  # by estimator
    sharing: dict[str, SharedCompactions]  # by label
    # The settings replayed: those of `strategies` not identical by construction to one replayed here.
    replayed: list[Setting]
    copies: dict[str, str]  # by label, the replayed setting whose rows it takes


@dataclass(frozen=True)
class SessionJob:
    """What a run does with each session, wherever it runs: plan its settings, replay them, write
    and hand back their rows (`compactlab.runs.runs.run` makes one for the whole run)."""

    strategies: tuple[Setting, ...]
    instances: dict[str, Strategy]  # each setting's strategy, by label (see resolve)
    done: frozenset[tuple[str, str]]
    windows: ContextWindows
    default_estimator: str
    summarizer: Summarizer | None
    judge: Judge | None
    out: Path
    prices: PriceTable | None = None
    committed: dict[str, list[dict[str, str]]] = field(default_factory=dict)  # each session's parts done before --resume
    # Token counts shared by every session a process replays: sessions of one dataset repeat
    # their system prompt and task texts. (Bounded: see TokenCache.)
    cache: TokenCache = field(default_factory=lambda: TokenCache(max_chars=CACHED_CHARS))
    # The estimators the run measures (its default first, `compactlab.runs.report_inputs`); None: no token estimation.
    estimators: tuple[str, ...] | None = None
    # Settings identical by construction to an earlier one (`compactlab.results.same_by_construction.replayed_once`):
    # by label, the setting whose replay they take instead of replaying the same again.
    same_as: dict[str, str] = field(default_factory=dict)

    def replay_file(self, sessions: tuple[Session, ...]) -> tuple[str | None, list[Replays]]:
        """The file's hash for the run's metadata (taken here, beside the other reading, not by the
        run's process at the end) and each session's replays."""
        file_hash = self.file_hash(sessions)
        replayed = []
        for session in sessions:
            replayed.append(self.replay_session(session))
            forget()  # what the process computed for this session's messages (bench/memo.py)
        return file_hash, replayed

    @staticmethod
    def file_hash(sessions: tuple[Session, ...]) -> str | None:
        return hash_of_file(Path(sessions[0].source_path)) if sessions else None

    def replay_session(self, session: Session) -> Replays:
        plan = self.plan(session)
        if plan is None:
            return self.nothing_new(session)
        return self.assemble(plan, [self.replay_setting(plan, strategy) for strategy in plan.replayed])

    def nothing_new(self, session: Session) -> Replays:
        """The replays of a session every setting of which was done before --resume."""
        return Replays([], None, self._results(session, None, []), tuple(engine_rows(session)))

    def plan(self, session: Session) -> SessionPlan | None:
        """What the settings of `session` not done yet share; None when every one is done."""
        strategies = [s for s in self.strategies if (session.id, s.label) not in self.done]
        if not strategies:  # every setting of this session was done before --resume
            return None
        # A setting identical by construction to one replayed here takes its rows (one done before
        # --resume is not replayed here: the setting is then replayed itself).
        labels = {s.label for s in strategies}
        copies = {s.label: self.same_as[s.label] for s in strategies if self.same_as.get(s.label) in labels}
        replayed = [s for s in strategies if s.label not in copies]
        # One meter per estimator, shared by every strategy of this session: each message is
        # counted once for the whole run, however many settings replay it.
        meters: dict[str, Meter] = {}
        for strategy in replayed:
            estimator = self.estimator_of(strategy)
            if estimator not in meters:
                meters[estimator] = Meter(session, estimator, self.cache)
        # Settings that differ only in their trigger share each compaction of the same context.
        sharing = shared_by_setting({s.label: self.instances[s.label] for s in replayed})
        return SessionPlan(session, strategies, meters, sharing, replayed, copies)

    def estimator_of(self, strategy: Setting) -> str:
        return estimator_of(self.instances[strategy.label], strategy.estimator, self.default_estimator)

    def replay_setting(self, plan: SessionPlan, strategy: Setting, fan_out: FanOut = in_turn) -> tuple[Replayed, list[dict]]:
        """One setting's replay of the plan's session and its compaction rows (judged when the
        run has a judge; `fan_out` runs the judge's calls)."""
        session = plan.session
        replayed = replay(
            session,
            strategy,
            self.windows,
            summarizer=self.summarizer,
            meter=plan.meters[self.estimator_of(strategy)],
            strategy=plan.sharing[strategy.label],
        )
        rows = [r.values() for r in replayed.compactions]
        if self.judge is not None:  # next-action preservation with a model (bench/scoring/next_action.py)
            rows = score_compactions(self.judge, session, rows, replayed.compacted, fan_out)
        return replayed, rows

    def assemble(self, plan: SessionPlan, results: list[tuple[Replayed, list[dict]]]) -> Replays:
        """The session's `Replays` from the replays of `plan.replayed`, in their order: every setting
        of the plan's, each identical by construction to a replayed one under its own names."""
        by_label = {s.label: result for s, result in zip(plan.replayed, results)}
        results = [self._as_setting(s.label, plan.copies.get(s.label), by_label) for s in plan.strategies]
        compaction_rows: list[dict] = []
        # Per setting, the rows it shares with the uncompacted replay (kept once per estimator), then its own rows.
        shared_rows: dict[str, SharedRows] = {}
        parts: list[tuple[SharedRows, int, int]] = []  # per setting, for the arrays (see call_arrays)
        own: CallColumns = {name: [] for name in CALL_COLUMNS}
        for strategy, (replayed, rows) in zip(plan.strategies, results):
            compaction_rows += rows
            calls, shared = replayed.calls, replayed.shared_calls
            for name, values in calls.items():
                own[name] += values[shared:]
            rows_shared, added = shared_rows.setdefault(self.estimator_of(strategy), SharedRows()), len(calls["call"]) - shared
            rows_shared.take(shared, calls)
            parts.append((rows_shared, shared, added))
        labels = [s.label for s in plan.strategies]
        arrays = call_arrays(plan.session.id, labels, parts, own)
        written = {
            "calls": write_part(self.out, "calls", calls_table(arrays)),
            "compactions": write_part(self.out, "compactions", compactions_table(compaction_rows)),
        }
        kept = self._results(plan.session, arrays, compaction_rows)
        return Replays(labels, written, kept, tuple(engine_rows(plan.session)))

    def _as_setting(self, label: str, first: str | None, by_label: dict[str, tuple[Replayed, list[dict]]]):
        """The replay of setting `label`: its own, or that of the setting `first` it is identical to by construction."""
        if first is None:
            return by_label[label]
        replayed, rows = by_label[first]
        return replayed, as_member(rows, label, self.instances[first], self.instances[label])

    def _results(self, session: Session, arrays, compaction_rows: list[dict]) -> SessionResults:
        """What the run keeps of the session (with what its report needs of it, computed here
        where its messages are: `compactlab.runs.report_inputs`)."""
        measured = estimated(session, list(self.estimators), self.cache) if self.estimators else None
        return self._row_results(session, arrays, compaction_rows).with_inputs(session_facts(session), measured)

    def _row_results(self, session: Session, arrays, compaction_rows: list[dict]) -> SessionResults:
        """Of its new rows, and of those committed before --resume."""
        earlier = self.committed.get(session.id)
        if not earlier:
            return session_results(arrays, compaction_rows, [session], self.prices)
        names = {kind: [commit[kind] for commit in earlier] for kind in ("calls", "compactions")}
        calls = part_calls(self.out, names["calls"])
        if arrays is not None:
            calls = pd.concat([calls, calls_table(arrays).to_pandas()], ignore_index=True)
        rows = part_compaction_rows(self.out, names["compactions"]) + compaction_rows
        return session_results(calls, rows, [session], self.prices)


def hash_of_file(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError:
        return None
