"""`compactlab run`: replay datasets × strategies into a run directory that survives interruption.

A run directory holds:
- `config.json`: the resolved configuration; `meta.json` (written once every file was read):
  versions, dataset file hashes, prompt template hashes, what was skipped while reading;
- `calls.jsonl` and `compactions.jsonl`: rows, appended as each transcript's settings finish;
- `done.jsonl`: one line per transcript replayed, written after its rows, committing them (see
  `bench.run_files`): `--resume` skips exactly the finished work, and rows of a unit that was cut
  off are dropped before it is replayed again, so none is counted twice;
- `summary.json` and `transcripts.csv`: the statistics, written at the end (atomically, as is
  every file but the appended ones);
- `.lock`: while a process works in the directory, it holds a lock on it (a second run or
  `--resume` there fails at once);
- while a run is going, `.calls-*.part` files: call rows a worker process wrote, waiting to be
  appended to `calls.jsonl` in file order (removed as they are; a killed run's are removed when
  the run is resumed).

`--resume` checks each dataset file against the hash its finished rows were made from: a file
that was edited, or is gone, is an error naming it (its rows would no longer match it; replaying
it anew would mix two versions of the data in one run): restore it, or start a new run.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import platform
import time
from contextlib import closing
from dataclasses import dataclass, field, replace
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm import tqdm

from bench.concurrent_replays import replay_concurrently
from bench.context_windows import ContextWindows
from bench.datasets import resolve_inputs
from bench.llm.concurrency import CallAccount, check_budget_prices, default_replay_threads, llm_completers, run_calls
from bench.llm.prices import resolve_prices
from bench.llm_config import make_run_judge
from bench.loading import FailedFile, ReadInputs, ReadTranscript, read_files
from bench.metering import Meter
from bench.call_rows import TEXT_COLUMNS, SharedRows, call_arrays, json_line, json_rows
from bench.metrics import (
    TextCodes, calls_frame, coded_text, compactions_frame, joined_codes, rows_of_each, summary_groups, transcript_summary,
)
from bench.next_action import FanOut, in_turn, score_compactions
from bench.model import Transcript
from bench.neutralise import csv_frame
from bench.replay import CALL_COLUMNS, CallColumns, Replayed, StrategyConfig, replay
from bench.run_failures import mark_incomplete
from bench.run_files import DONE, PART_PREFIX, ROW_FILES, DoneLog, RowFiles, RunLock, read_done, remove_parts, write_atomic
from bench.shared_compactions import SharedCompactions, shared_by_setting
from bench.run_config import RunConfig, config_json, default_strategies, windows_of
from bench.tokenizers import TokenCache
from strategies.base import Strategy
from strategies.prompting import PROMPTS_DIR, fixed_templates
from strategies.registry import get_strategy

CACHED_CHARS = 50_000_000  # texts a replaying process keeps counts of (some 50-100 MB)
PROGRESS_SECONDS = 0.2  # between two updates of the LLM calls shown beside the progress bar


@dataclass(frozen=True)
class RunResult:
    out: Path
    calls: pd.DataFrame
    compactions: pd.DataFrame
    transcripts: pd.DataFrame
    read: ReadInputs  # what the run read (the transcripts' messages are not kept)
    resumed_units: int
    max_failed_share: float = 0.0  # see bench/run_failures.py
    llm_calls: str | None = None  # what the run's LLM calls came to (`CallAccount.line`), when it had any


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
) -> RunResult:
    """Replay every transcript × strategy of `config` into `out` (see the module docstring).

    `workers`: processes reading and replaying files side by side (default: one per core); the
    rows are written in file order, the same as one process writes them. Runs with an LLM
    summarizer or judge stay in one process, where the call cache and the limits on calls live,
    and replay in `replay_threads` threads (default: twice the calls in flight the providers'
    `max_in_flight` allow; 1: one replay after another); see `bench.concurrent_replays`.
    """
    config, instances = resolve(config)
    out.mkdir(parents=True, exist_ok=True)
    with RunLock(out):
        return _run_locked(config, instances, out, resume, progress, summarizer, overwrite, judge, workers, replay_threads)


def _run_locked(config: RunConfig, instances, out: Path, resume, progress, summarizer, overwrite, judge, workers, replay_threads) -> RunResult:
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
    job = _Job(config.strategies, instances, log.units, windows_of(config), config.estimator, summarizer, judge, out)
    # An LLM summarizer or judge keeps the run in one process, where its cache and concurrency limit live.
    workers = 1 if summarizer is not None or judge is not None else workers
    inputs = resolve_inputs(list(config.datasets) or None)
    _check_unchanged(out, log, inputs.files)
    transcripts, failed, call_frames, compaction_rows = [], [], [], []
    file_hashes: dict[str, str | None] = {}  # each file's, as the worker that read it found it
    bar = tqdm(total=len(inputs.files), desc="reading and replaying", unit="file", disable=not progress)
    remove_parts(out)  # left by a run that was killed
    completers = llm_completers(summarizer, judge)
    account = CallAccount(config.max_cost_usd, on_change=_shown_on(bar) if progress else None)
    if completers:
        check_budget_prices(completers, account)
        threads = replay_threads or default_replay_threads(completers)
        reads = replay_concurrently(read_files(inputs.files, inputs.lenient_files, lenient=config.lenient, workers=1), job, ReadTranscript.of, threads, account)
    else:
        reads = read_files(inputs.files, inputs.lenient_files, lenient=config.lenient, workers=workers, then=job.replay_file, keep=ReadTranscript.of)
    try:
        # One version of each prompt template for the whole run; an error in a file ends the
        # worker pool at once (see read_files).
        with fixed_templates(), run_calls(completers, account), closing(reads), RowFiles(out, log) as row_files:
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
                    if replays is None:  # every setting of this transcript was done before --resume
                        continue
                    # One commit per transcript: its rows, then the done line that makes them part of the run.
                    row_files.commit(replays.part, replays.call_bytes, transcript.id, replays.labels, str(read.path), read_hash)
                    call_frames.append(replays.calls)
                    compaction_rows += replays.compaction_rows
    finally:
        remove_parts(out)  # of files replayed after an error stopped the run
    bar.close()
    read = ReadInputs(transcripts=tuple(transcripts), failed=tuple(failed), passed_over=inputs.passed_over)
    job.windows.check_overrides(call.model for t in transcripts for call in t.calls)
    write_atomic(out / "meta.json", json.dumps(run_meta(read, file_hashes), indent=2) + "\n")
    # A run that started fresh has every row in memory: no need to read the files back.
    rows = None if log.units else (call_frames, compaction_rows)
    result = finish(out, read, resumed_units=len(log.units), prices=config.prices, rows=rows, max_failed_share=config.max_failed_share)
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


def _check_unchanged(out: Path, log: DoneLog, files: list[Path]) -> None:
    """Before any work: every dataset file whose rows the run holds is still there, as it was."""
    listed = set(map(str, files))
    for file, recorded in sorted(log.file_hashes.items()):
        if file not in listed:
            raise ValueError(f"{out}: --resume: {file} (read by this run) is gone or no longer among the datasets; "
                             f"restore it, or start a new run (another --out)")
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
    # calls.jsonl lines (the first `call_bytes` bytes), then compactions.jsonl lines, in a file the
    # worker wrote: the process that appends them to the run's files only has the kernel copy them
    # (sending a sweep's hundred megabytes of rows between processes took a core's time away from
    # replaying)
    part: Path
    call_bytes: int
    # the same rows as arrays, the text columns as codes (cheap to send between processes and to join)
    calls: dict[str, np.ndarray | TextCodes]
    compaction_rows: list[dict]


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
    summarizer: object
    judge: object
    out: Path
    # Token counts shared by every transcript a process replays: sessions of one dataset repeat
    # their system prompt and task texts. (Bounded: see TokenCache.)
    cache: TokenCache = field(default_factory=lambda: TokenCache(max_chars=CACHED_CHARS))

    def replay_file(self, transcripts: tuple[Transcript, ...]) -> tuple[str | None, list[Replays | None]]:
        """The file's hash for the run's metadata (taken here, beside the other reading, not by the
        run's process at the end) and each transcript's replays."""
        return self.file_hash(transcripts), [self.replay_transcript(t) for t in transcripts]

    @staticmethod
    def file_hash(transcripts: tuple[Transcript, ...]) -> str | None:
        return _file_hash(Path(transcripts[0].source_path)) if transcripts else None

    def replay_transcript(self, transcript: Transcript) -> Replays | None:
        plan = self.plan(transcript)
        if plan is None:
            return None
        return self.assemble(plan, [self.replay_setting(plan, strategy) for strategy in plan.strategies])

    def plan(self, transcript: Transcript) -> TranscriptPlan | None:
        """What the settings of `transcript` not done yet share; None when every one is done."""
        strategies = [s for s in self.strategies if (transcript.id, s.label) not in self.done]
        if not strategies:
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
        return strategy.estimator or getattr(self.instances[strategy.label], "estimator", self.default_estimator)

    def replay_setting(self, plan: TranscriptPlan, strategy: StrategyConfig, fan_out: FanOut = in_turn) -> tuple[Replayed, list[dict]]:
        """One setting's replay of the plan's transcript and its compaction rows (judged when the
        run has a judge; `fan_out` runs the judge's calls)."""
        transcript = plan.transcript
        replayed = replay(
            transcript, strategy, self.windows, summarizer=self.summarizer, meter=plan.meters[self.estimator_of(strategy)],
            strategy=plan.sharing[strategy.label],
        )
        rows = [dict(vars(r)) for r in replayed.compactions]
        if self.judge is not None:  # next-action preservation with a model (bench/next_action.py)
            rows = score_compactions(self.judge, transcript, rows, replayed.compacted, fan_out)
        return replayed, rows

    def assemble(self, plan: TranscriptPlan, results: list[tuple[Replayed, list[dict]]]) -> Replays:
        """The transcript's `Replays` from each setting's replay, in the order of its settings."""
        compaction_rows: list[dict] = []
        # calls.jsonl: per setting, the rows it shares with the uncompacted replay (formatted once
        # per estimator), then its own rows (formatted with every other setting's at the end).
        shared_rows: dict[str, SharedRows] = {}
        shared_texts: list[tuple[bytes, int]] = []  # (the shared rows' lines, how many own rows follow)
        parts: list[tuple[SharedRows, int, int]] = []  # per setting, for the arrays (see call_arrays)
        own: CallColumns = {name: [] for name in CALL_COLUMNS}
        for strategy, (replayed, rows) in zip(plan.strategies, results):
            compaction_rows += rows
            calls, shared = replayed.calls, replayed.shared_calls
            for name, values in calls.items():
                own[name] += values[shared:]
            rows_shared, added = shared_rows.setdefault(self.estimator_of(strategy), SharedRows()), len(calls["call"]) - shared
            shared_texts.append((rows_shared.first(shared, strategy.label, calls), added))
            parts.append((rows_shared, shared, added))
        labels = [s.label for s in plan.strategies]
        arrays = call_arrays(plan.transcript.id, labels, parts, own)
        part, call_bytes = self._part(shared_texts, json_rows(own), "".join(map(json_line, compaction_rows)))
        return Replays(labels, part, call_bytes, arrays, compaction_rows)

    def _part(self, shared_texts: list[tuple[bytes, int]], own_lines: list[str], compaction_lines: str) -> tuple[Path, int]:
        """Write the calls.jsonl lines of a transcript's settings, then its compactions.jsonl lines,
        to a part file; the part and the size of its calls.jsonl lines (see `Replays`)."""
        # Named by process and count (unique within the run; a killed run's parts are removed when
        # it is resumed): tempfile's random names cost more than the write of a small transcript's rows.
        part = self.out / f"{PART_PREFIX}{os.getpid()}-{next(_PART_NUMBERS)}.part"
        start = 0
        with os.fdopen(os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600), "wb") as file:
            for text, count in shared_texts:
                file.write(text)
                file.write("".join(own_lines[start : start + count]).encode("utf-8"))
                start += count
            call_bytes = file.tell()
            file.write(compaction_lines.encode("utf-8"))
        return part, call_bytes


_PART_NUMBERS = itertools.count()


def finish(
    out: Path, read: ReadInputs, resumed_units: int = 0, prices: dict | None = None,
    rows: tuple[list[dict[str, np.ndarray | TextCodes]], list[dict]] | None = None, max_failed_share: float = 0.0,
) -> RunResult:
    """Compute the metrics from the finished rows: `rows` (per-transcript call arrays and compaction
    rows) when given, else read back from `out`."""
    rows_by_model = groups = None
    if rows is not None:
        arrays, compaction_rows = rows
        arrays = [a for a in arrays if len(a["call"])]  # an empty array would make every column float
        calls = {}
        if arrays:
            coded = {name: joined_codes([a[name] for a in arrays]) for name in TEXT_COLUMNS}
            calls = {name: coded_text(coded[name]) if name in TEXT_COLUMNS else np.concatenate([a[name] for a in arrays]) for name in CALL_COLUMNS}
            rows_by_model, groups = rows_of_each(coded["model"]), summary_groups(coded["transcript"], coded["config"])
    else:
        done = read_done(out / DONE).units
        calls = [r for r in _read_jsonl(out / "calls.jsonl") if (r["transcript"], r["config"]) in done]
        compaction_rows = [r for r in _read_jsonl(out / "compactions.jsonl") if (r["transcript"], r["config"]) in done]
    calls = calls_frame(calls, resolve_prices(prices or None), rows_by_model)
    compactions = compactions_frame(compaction_rows)
    transcripts = transcript_summary(calls, compactions, groups)
    if not transcripts.empty:
        # A transcript with damaged (skipped) records lacks messages its recorded token counts
        # include, so its replay mixes two histories; it is replayed and shown, not ranked.
        damaged = {t.id for t in read.transcripts if t.skipped}
        transcripts["damaged"] = transcripts["transcript"].isin(damaged)
        transcripts = mark_incomplete(transcripts, max_failed_share)
        write_atomic(out / "transcripts.csv", csv_frame(transcripts).to_csv(index=False))  # formula cells neutralised (bench.neutralise)
    return RunResult(out, calls, compactions, transcripts, read, resumed_units, max_failed_share)


def _read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    # Only committed rows are left in the files (bench/run_files.py): every line is whole.
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


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
