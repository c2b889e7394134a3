"""`compactlab run`: replay datasets × strategies into a run directory that survives interruption.

A run directory holds:
- `config.json`: the resolved configuration; `meta.json` (written once every file was read):
  versions, dataset file hashes, prompt template hashes, what was skipped while reading;
- `rows/calls/` and `rows/compactions/`: the rows as Parquet, one part per transcript (per
  setting a row group), written by the process that replayed it (`compactlab.runs.run_storage`;
  `compactlab export-rows` writes them as JSON lines);
- `done.jsonl`: one line per transcript replayed, written after its parts and naming them,
  committing them (see `compactlab.runs.run_files`): `--resume` skips exactly the finished work, and parts of
  a unit that was cut off are dropped before it is replayed again, so none is counted twice;
- `summary.json` and `transcripts.csv`: the statistics, written at the end (atomically, as is
  every file but done.jsonl);
- `.lock`: while a process works in the directory, it holds a lock on it (a second run or
  `--resume` there fails at once).

The run's process keeps of each transcript only its results (`compactlab.runs.run_results`: its rows of
transcripts.csv and a few others), computed where it was replayed: its memory does not grow with
the rows. `--resume` checks each dataset file against the hash its finished rows were made from: a
file that was edited, or is gone, is an error naming it (its rows would no longer match it;
replaying it anew would mix two versions of the data in one run): restore it, or start a new run.
"""

from __future__ import annotations

import hashlib
import json
import platform
import time
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass, field, replace
from functools import cached_property
from importlib.metadata import version
from pathlib import Path

import pandas as pd
from tqdm import tqdm

from compactlab.compaction.llm.concurrency import CallAccount, check_budget_prices, default_replay_threads, llm_completers
from compactlab.compaction.llm.concurrency import run_calls as calls_limited
from compactlab.compaction.llm.prices import PriceTable, resolve_prices
from compactlab.contract import Strategy, Summarizer
from compactlab.memo import forget
from compactlab.replay.fast.call_rows import SharedRows, call_arrays
from compactlab.replay.fast.shared_compactions import SharedCompactions, shared_by_setting
from compactlab.replay.replay import CALL_COLUMNS, CallColumns, Replayed, replay
from compactlab.replay.strategy_config import StrategyConfig, estimator_of
from compactlab.results.metrics import calls_frame, compactions_frame
from compactlab.results.run_failures import mark_incomplete
from compactlab.runs.concurrent_replays import replay_concurrently
from compactlab.runs.llm_config import make_run_judge
from compactlab.runs.run_config import RunConfig, config_json, default_strategies, windows_of
from compactlab.runs.run_files import DONE, ROW_FILES, Commits, DoneLog, RunLock, read_done, write_atomic
from compactlab.runs.run_results import RunTotals, TranscriptResults, results_from_rows, transcript_results
from compactlab.runs.run_storage import (
    calls_table,
    compactions_table,
    part_calls,
    part_compaction_rows,
    remove_unnamed,
    run_calls,
    run_compaction_rows,
    write_part,
)
from compactlab.scoring.judge import FanOut, in_turn, score_compactions
from compactlab.scoring.next_action import Judge
from compactlab.strategies.prompting import PROMPTS_DIR, fixed_templates
from compactlab.strategies.registry import get_strategy
from compactlab.tokens.context_windows import ContextWindows
from compactlab.tokens.metering import Meter
from compactlab.tokens.tokenizers import TokenCache
from compactlab.transcripts.datasets import resolve_inputs
from compactlab.transcripts.loading import FailedFile, ReadInputs, ReadTranscript, read_files
from compactlab.transcripts.model import Transcript
from compactlab.transcripts.neutralise import csv_frame

CACHED_CHARS = 50_000_000  # texts a replaying process keeps counts of (some 50-100 MB)
PROGRESS_SECONDS = 0.2  # between two updates of the LLM calls shown beside the progress bar


@dataclass(frozen=True)
class RunResult:
    out: Path
    transcripts: pd.DataFrame  # transcripts.csv: one row per transcript × setting
    read: ReadInputs  # what the run read (the transcripts' messages are not kept)
    resumed_units: int
    max_failed_share: float = 0.0  # see bench/results/run_failures.py
    recorded_fidelity: pd.DataFrame = field(default_factory=pd.DataFrame)  # gathered per transcript (compactlab.runs.run_results)
    cost_model_check: pd.DataFrame = field(default_factory=pd.DataFrame)
    call_models: pd.DataFrame = field(default_factory=pd.DataFrame)  # (transcript, model) pairs, for the cost coverage
    prices: dict | None = None  # the configuration's, for the costs of `calls`
    llm_calls: str | None = None  # what the run's LLM calls came to (`CallAccount.line`), when it had any

    @cached_property
    def calls(self) -> pd.DataFrame:
        """Every call row, with its costs, read from the run directory when asked for (a large run's
        rows need not fit in memory; see `compactlab.runs.run_storage.run_calls` for one setting or transcript)."""
        return calls_frame(run_calls(self.out), resolve_prices(self.prices or None))

    @cached_property
    def compactions(self) -> pd.DataFrame:
        """Every compaction row, read from the run directory when asked for."""
        return compactions_frame(run_compaction_rows(self.out))


def resolve(config: RunConfig) -> tuple[RunConfig, dict[str, Strategy]]:
    """The configuration with its default strategies and estimator filled in, and each setting's
    strategy by label: made once for the whole run (a strategy is a frozen dataclass, without
    state), and a typo fails here, before anything is replayed."""
    resolved, instances = [], {}
    for entry in config.strategies or default_strategies():
        strategy = instances[entry.label] = get_strategy(entry.strategy, **dict(entry.settings))
        if entry.estimator is None and not hasattr(strategy, "estimator"):
            entry = replace(entry, estimator=config.estimator)
        resolved.append(entry)
    return replace(config, strategies=tuple(resolved)), instances


def run(
    config: RunConfig,
    out: Path,
    resume: bool = False,
    progress: bool = False,
    summarizer=None,
    overwrite: bool = False,
    judge=None,
    workers: int | None = None,
    replay_threads: int | None = None,
    executor=None,
) -> RunResult:
    """Replay every transcript × strategy of `config` into `out` (see the module docstring).

    `executor`: where the files are read and replayed (`compactlab.runs.executors`; None: worker processes
    on this machine). Whichever it is, the run directory and the results are the same.

    `workers`: processes reading and replaying files side by side (default: one per core); the
    rows are written in file order, the same as one process writes them. Runs with an LLM
    summarizer or judge stay in one process, where the call cache and the limits on calls live,
    and replay in `replay_threads` threads (default: twice the calls in flight the providers'
    `max_in_flight` allow; 1: one replay after another); see `compactlab.runs.concurrent_replays`.
    """
    config, instances = resolve(config)
    out.mkdir(parents=True, exist_ok=True)
    forget()  # a run starts with empty memos: nothing an earlier run in this process computed is kept alive
    with RunLock(out):
        return _run_locked(
            config, instances, out, resume, progress, summarizer, overwrite, judge, workers, replay_threads, executor
        )


def _run_locked(
    config: RunConfig, instances, out: Path, resume, progress, summarizer, overwrite, judge, workers, replay_threads, executor
) -> RunResult:
    done_path = out / DONE
    if not resume and done_path.exists():
        if not overwrite:
            raise ValueError(f"{out} already holds a run: use --resume to continue it, or another --out")
        for name in (*ROW_FILES, DONE):
            (out / name).unlink(missing_ok=True)
    log = read_done(done_path) if resume else DoneLog()
    if resume and (out / "config.json").exists():
        previous = json.loads((out / "config.json").read_text())
        if previous != config_json(config):
            raise ValueError(f"{out}: --resume with a different configuration than the run was started with")
    write_atomic(out / "config.json", json.dumps(config_json(config), indent=2) + "\n")
    judge = judge if judge is not None else make_run_judge(config)  # None unless [judge] is configured
    prices = resolve_prices(config.prices or None)
    job = _Job(
        config.strategies, instances, log.units, windows_of(config), config.estimator, summarizer, judge, out, prices, log.parts
    )
    # An LLM summarizer or judge keeps the run in one process, where its cache and concurrency limit live.
    workers = 1 if summarizer is not None or judge is not None else workers
    if executor is not None and (summarizer is not None or judge is not None):
        raise ValueError(
            "a run with an LLM summarizer or judge stays in one process (its call cache and concurrency limit live there): "
            "run it without --executor dask"
        )
    inputs = resolve_inputs(list(config.datasets) or None)
    _check_unchanged(out, log, inputs.files)
    transcripts: list[ReadTranscript] = []  # what the run keeps of each transcript
    failed: list[FailedFile] = []
    totals = RunTotals()
    file_hashes: dict[str, str | None] = {}  # each file's, as the worker that read it found it
    bar = tqdm(total=len(inputs.files), desc="reading and replaying", unit="file", disable=not progress)
    completers = llm_completers(summarizer, judge)
    account = CallAccount(config.max_cost_usd, on_change=_shown_on(bar) if progress else None)
    if completers:
        check_budget_prices(completers, account)
        threads = replay_threads or default_replay_threads(completers)
        reads = replay_concurrently(
            read_files(inputs.files, inputs.lenient_files, lenient=config.lenient, workers=1),
            job,
            ReadTranscript.counted,
            threads,
            account,
        )
    else:
        reads = read_files(
            inputs.files,
            inputs.lenient_files,
            lenient=config.lenient,
            workers=workers,
            then=job.replay_file,
            keep=ReadTranscript.counted,
            executor=executor,
        )
    # One version of each prompt template for the whole run; an error in a file ends the worker
    # pool at once (see read_files).
    commits = Commits(out, log)
    remove_unnamed(out, commits.named)  # a killed run's
    try:
        with fixed_templates(), calls_limited(completers, account), closing(reads), commits:
            for read in reads:
                bar.update()
                if read.error is not None:
                    if not read.lenient:
                        raise read.error
                    failed.append(FailedFile(path=read.path, error=str(read.error)))
                transcripts += read.transcripts
                file_hash, replayed = read.then or (None, ())
                if read.transcripts:
                    file_hashes[read.transcripts[0].source_path] = file_hash
                    # The file read, whose hash --resume checks (a canonical file names its source instead).
                    read_hash = file_hash if read.transcripts[0].source_path == str(read.path) else _file_hash(read.path)
                for transcript, replays in zip(read.transcripts, replayed):
                    if replays.parts is not None:
                        # One commit per transcript: its parts, written already, become part of the run with its done line.
                        commits.commit(transcript.id, replays.labels, str(read.path), read_hash, replays.parts)
                    totals.add(replays.results)
    finally:
        remove_unnamed(out, commits.named)  # of files replayed after an error stopped the run
    bar.close()
    read_inputs = ReadInputs(transcripts=tuple(transcripts), failed=tuple(failed), passed_over=inputs.passed_over)
    job.windows.check_overrides(model for t in transcripts for model in t.models)
    write_atomic(out / "meta.json", json.dumps(run_meta(read_inputs, file_hashes), indent=2) + "\n")
    result = finish(
        out,
        read_inputs,
        resumed_units=len(log.units),
        prices=config.prices,
        results=totals.totals(),
        max_failed_share=config.max_failed_share,
    )
    return replace(result, llm_calls=account.line()) if completers else result


def _shown_on(bar: tqdm):
    """A `CallAccount` callback showing its counts after the bar, at most a few times a second."""
    shown = [0.0]

    def show(account: CallAccount) -> None:
        now = time.monotonic()
        if now - shown[0] >= PROGRESS_SECONDS:
            shown[0] = now
            bar.set_postfix_str(account.line())

    return show


def _check_unchanged(out: Path, log: DoneLog, files: Sequence[Path]) -> None:
    """Before any work: every dataset file whose rows the run holds is still there, as it was."""
    listed = set(map(str, files))
    for file, recorded in sorted(log.file_hashes.items()):
        if file not in listed:
            raise ValueError(
                f"{out}: --resume: {file} (read by this run) is gone or no longer among the datasets; "
                f"restore it, or start a new run (another --out)"
            )
        now = _file_hash(Path(file))
        if now != recorded:
            raise ValueError(
                f"{out}: --resume: {file} changed since this run replayed it (sha256 {recorded}, now {now}): "
                f"its finished rows no longer match it; restore the file, or start a new run (another --out)"
            )


@dataclass(frozen=True)
class Replays:
    """One transcript's replays under the settings not done yet, as the process that ran them hands them back."""

    labels: list[str]
    parts: dict[str, str] | None  # its row parts by kind, written (compactlab.runs.run_storage); None: nothing new to commit
    results: TranscriptResults  # what the run keeps of it, its earlier committed rows included


@dataclass(frozen=True)
class TranscriptPlan:
    """What the settings of one transcript share while they replay (side by side in threads, or in turn)."""

    transcript: Transcript
    strategies: list[StrategyConfig]
    meters: dict[str, Meter]  # by estimator
    sharing: dict[str, SharedCompactions]  # by label


@dataclass(frozen=True)
class _Job:
    strategies: tuple[StrategyConfig, ...]
    instances: dict[str, Strategy]  # each setting's strategy, by label (see resolve)
    done: frozenset[tuple[str, str]]
    windows: ContextWindows
    default_estimator: str
    summarizer: Summarizer | None
    judge: Judge | None
    out: Path
    prices: PriceTable | None = None
    committed: dict[str, list[dict[str, str]]] = field(default_factory=dict)  # each transcript's parts done before --resume
    # Token counts shared by every transcript a process replays: sessions of one dataset repeat
    # their system prompt and task texts. (Bounded: see TokenCache.)
    cache: TokenCache = field(default_factory=lambda: TokenCache(max_chars=CACHED_CHARS))

    def replay_file(self, transcripts: tuple[Transcript, ...]) -> tuple[str | None, list[Replays]]:
        """The file's hash for the run's metadata (taken here, beside the other reading, not by the
        run's process at the end) and each transcript's replays."""
        file_hash = self.file_hash(transcripts)
        replayed = []
        for transcript in transcripts:
            replayed.append(self.replay_transcript(transcript))
            forget()  # what the process computed for this transcript's messages (bench/memo.py)
        return file_hash, replayed

    @staticmethod
    def file_hash(transcripts: tuple[Transcript, ...]) -> str | None:
        return _file_hash(Path(transcripts[0].source_path)) if transcripts else None

    def replay_transcript(self, transcript: Transcript) -> Replays:
        plan = self.plan(transcript)
        if plan is None:
            return self.nothing_new(transcript)
        return self.assemble(plan, [self.replay_setting(plan, strategy) for strategy in plan.strategies])

    def nothing_new(self, transcript: Transcript) -> Replays:
        """The replays of a transcript every setting of which was done before --resume."""
        return Replays([], None, self._results(transcript, None, []))

    def plan(self, transcript: Transcript) -> TranscriptPlan | None:
        """What the settings of `transcript` not done yet share; None when every one is done."""
        strategies = [s for s in self.strategies if (transcript.id, s.label) not in self.done]
        if not strategies:  # every setting of this transcript was done before --resume
            return None
        # One meter per estimator, shared by every strategy of this transcript: each message is
        # counted once for the whole run, however many settings replay it.
        meters: dict[str, Meter] = {}
        for strategy in strategies:
            estimator = self.estimator_of(strategy)
            if estimator not in meters:
                meters[estimator] = Meter(transcript, estimator, self.cache)
        # Settings that differ only in their trigger share each compaction of the same context.
        sharing = shared_by_setting({s.label: self.instances[s.label] for s in strategies})
        return TranscriptPlan(transcript, strategies, meters, sharing)

    def estimator_of(self, strategy: StrategyConfig) -> str:
        return estimator_of(self.instances[strategy.label], strategy.estimator, self.default_estimator)

    def replay_setting(
        self, plan: TranscriptPlan, strategy: StrategyConfig, fan_out: FanOut = in_turn
    ) -> tuple[Replayed, list[dict]]:
        """One setting's replay of the plan's transcript and its compaction rows (judged when the
        run has a judge; `fan_out` runs the judge's calls)."""
        transcript = plan.transcript
        replayed = replay(
            transcript,
            strategy,
            self.windows,
            summarizer=self.summarizer,
            meter=plan.meters[self.estimator_of(strategy)],
            strategy=plan.sharing[strategy.label],
        )
        rows = [dict(vars(r)) for r in replayed.compactions]
        if self.judge is not None:  # next-action preservation with a model (bench/scoring/next_action.py)
            rows = score_compactions(self.judge, transcript, rows, replayed.compacted, fan_out)
        return replayed, rows

    def assemble(self, plan: TranscriptPlan, results: list[tuple[Replayed, list[dict]]]) -> Replays:
        """The transcript's `Replays` from each setting's replay, in the order of its settings."""
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
        arrays = call_arrays(plan.transcript.id, labels, parts, own)
        written = {
            "calls": write_part(self.out, "calls", calls_table(arrays)),
            "compactions": write_part(self.out, "compactions", compactions_table(compaction_rows)),
        }
        return Replays(labels, written, self._results(plan.transcript, arrays, compaction_rows))

    def _results(self, transcript: Transcript, arrays, compaction_rows: list[dict]) -> TranscriptResults:
        """What the run keeps of the transcript: of its new rows, and of those committed before --resume."""
        earlier = self.committed.get(transcript.id)
        if not earlier:
            return transcript_results(arrays, compaction_rows, [transcript], self.prices)
        names = {kind: [commit[kind] for commit in earlier] for kind in ("calls", "compactions")}
        calls = part_calls(self.out, names["calls"])
        if arrays is not None:
            calls = pd.concat([calls, calls_table(arrays).to_pandas()], ignore_index=True)
        rows = part_compaction_rows(self.out, names["compactions"]) + compaction_rows
        return transcript_results(calls, rows, [transcript], self.prices)


def finish(
    out: Path,
    read: ReadInputs,
    resumed_units: int = 0,
    prices: dict | None = None,
    results: TranscriptResults | None = None,
    max_failed_share: float = 0.0,
) -> RunResult:
    """The run's tables from its transcripts' results (`results`, gathered as they arrived), or
    from the committed rows in `out`, read a transcript at a time."""
    if results is None:
        results = results_from_rows(out, read, resolve_prices(prices or None))
    transcripts = results.summary
    if not transcripts.empty:
        # A transcript with damaged (skipped) records lacks messages its recorded token counts
        # include, so its replay mixes two histories; it is replayed and shown, not ranked.
        damaged = {t.id for t in read.transcripts if t.skipped}
        transcripts["damaged"] = transcripts["transcript"].isin(damaged)
        transcripts = mark_incomplete(transcripts, max_failed_share)
        write_atomic(
            out / "transcripts.csv", csv_frame(transcripts).to_csv(index=False)
        )  # formula cells neutralised (compactlab.transcripts.neutralise)
    return RunResult(
        out,
        transcripts,
        read,
        resumed_units,
        max_failed_share,
        results.recorded_fidelity,
        results.cost_model_check,
        results.call_models,
        prices,
    )


def run_meta(read: ReadInputs, file_hashes: dict[str, str | None] | None = None) -> dict:
    """The run's metadata; `file_hashes`: the dataset files' hashes where they were taken already."""
    file_hashes = file_hashes or {}
    packages = ("compactlab", "pandas", "tiktoken", "openai", "anthropic", "matplotlib", "jinja2")
    return {
        "versions": {"python": platform.python_version(), **{p: _version(p) for p in packages}},
        "datasets": {t.source_path: file_hashes.get(t.source_path) or _file_hash(Path(t.source_path)) for t in read.transcripts},
        "prompts": {p.name: hashlib.sha256(p.read_bytes()).hexdigest()[:16] for p in sorted(PROMPTS_DIR.glob("*.j2"))},
        "transcripts": len(read.transcripts),
        "skipped_records": {t.id: len(t.skipped) for t in read.transcripts if t.skipped},
        "files_not_read": [{"path": str(f.path), "error": f.error} for f in read.failed],
    }


def _version(package: str) -> str | None:
    try:
        return version(package)
    except Exception:  # noqa: BLE001 - a missing package is reported as None, not a crash
        return None


def _file_hash(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError:
        return None
