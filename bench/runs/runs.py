"""`compactlab run`: replay datasets × strategies into a run directory that survives interruption.

A run directory holds:
- `config.json`: the resolved configuration; `meta.json` (written once every file was read):
  versions, dataset file hashes, prompt template hashes, what was skipped while reading;
- `rows/calls/` and `rows/compactions/`: the rows as Parquet, one part per session (its
  settings one after another), written by the process that replayed it (`compactlab.runs.run_storage`;
  `compactlab export-rows` writes them as JSON lines);
- `done.jsonl`: one line per session replayed, written after its parts and naming them,
  committing them (see `compactlab.runs.run_files`): `--resume` skips exactly the finished work, and parts of
  a unit that was cut off are dropped before it is replayed again, so none is counted twice;
- `summary.json` and `sessions.csv`: the statistics, written at the end (atomically, as is
  every file but done.jsonl);
- `.lock`: while a process works in the directory, it holds a lock on it (a second run or
  `--resume` there fails at once).

The run's process keeps of each session only its results (`compactlab.runs.session_results`: its rows of
sessions.csv and a few others), computed where it was replayed: its memory does not grow with
the rows. `--resume` checks each dataset file against the hash its finished rows were made from: a
file that was edited, or is gone, is an error naming it (its rows would no longer match it;
replaying it anew would mix two versions of the data in one run): restore it, or start a new run.
"""

from __future__ import annotations

import hashlib
import json
import platform
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass, field, replace
from importlib.metadata import version
from pathlib import Path

from tqdm import tqdm

from compactlab.llm.concurrency import CallAccount, check_budget_prices, default_replay_threads, llm_completers
from compactlab.llm.concurrency import run_calls as calls_limited
from compactlab.llm.prices import resolve_prices
from compactlab.memo import forget
from compactlab.results.real_engines import EngineRow, rows_document
from compactlab.results.same_by_construction import replayed_once
from compactlab.results.unfit_sessions import check_window_fits_some_session
from compactlab.runs.concurrent_replays import replay_concurrently
from compactlab.runs.report_inputs import run_estimators, write_report_inputs
from compactlab.runs.run_checks import CheckedRun, check_run, check_unchanged, run_config_json, undo_run
from compactlab.runs.run_config import RunConfig, windows_of
from compactlab.runs.run_files import DONE, Commits, DoneLog, RunLock, drop_commits, read_done, write_atomic
from compactlab.runs.run_format import OLD_ROW_FILES, meta_format, resumable
from compactlab.runs.run_result import RunResult, finish
from compactlab.runs.run_storage import (
    damaged_parts,
    remove_unnamed,
)
from compactlab.runs.session_job import SessionJob, hash_of_file
from compactlab.runs.session_results import RunTotals
from compactlab.sessions.loading import FailedFile, FileRead, ReadInputs, ReadSession, WorkerDied, nothing_read, read_files
from compactlab.strategies.preset_versions import run_versions
from compactlab.strategies.prompting import PROMPTS_DIR, fixed_templates
from compactlab.tokens.estimation import DEFAULT_ESTIMATORS
from compactlab.tokens.estimators import encodings_of
from compactlab.tokens.tokenizers import get_encoding

# How an executor runs the reads (`compactlab.sessions.loading.read_files`).
Executor = Callable[[Callable, tuple, int], Iterator[FileRead]]
PROGRESS_SECONDS = 0.2  # between two updates of the LLM calls shown beside the progress bar


def run(
    config: RunConfig,
    out: str | Path,
    resume: bool = False,
    progress: bool = False,
    summarizer=None,
    overwrite: bool = False,
    judge=None,
    workers: int | None = None,
    replay_threads: int | None = None,
    executor=None,
    limit: int | None = None,
    checked: CheckedRun | None = None,
) -> RunResult:
    """Replay every session × strategy of `config` into `out` (see the module docstring).

    Everything the run can be refused for is checked first (`compactlab.runs.run_checks.check_run`,
    a pass over the session files included): a refused run writes nothing. `checked`: that check's
    result, made by the caller with the same arguments (the command line checks before it takes
    the run directory's lock).

    `limit`: only the first N session files of the datasets (a quick look before a long run); it is
    written to config.json, so a --resume must name the same.

    `executor`: where the files are read and replayed (`compactlab.runs.executors`; None: worker processes
    on this machine). Whichever it is, the run directory and the results are the same.

    `workers`: processes reading and replaying files side by side (default: one per core); the
    rows are written in file order, the same as one process writes them. Runs with an LLM
    summarizer or judge stay in one process, where the call cache and the limits on calls live,
    and replay in `replay_threads` threads (default: twice the calls in flight the providers'
    `max_in_flight` allow; 1: one replay after another); see `compactlab.runs.concurrent_replays`.
    """
    out = Path(out)
    if checked is None:
        checked = check_run(
            config,
            out,
            resume=resume,
            overwrite=overwrite,
            limit=limit,
            workers=workers,
            summarizer=summarizer,
            judge=judge,
            executor=executor,
            progress=progress,
        )
    out.mkdir(parents=True, exist_ok=True)
    forget()  # a run starts with empty memos: nothing an earlier run in this process computed is kept alive
    options = RunOptions(resume, progress, summarizer, overwrite, workers, replay_threads, executor, limit)
    with RunLock(out):
        return _run_locked(checked, out, options)


@dataclass(frozen=True)
class RunOptions:
    """How `run` replays (its arguments besides the configuration and the folder)."""

    resume: bool = False
    progress: bool = False
    summarizer: object = None
    overwrite: bool = False
    workers: int | None = None
    replay_threads: int | None = None
    executor: Executor | None = None  # where files are read and replayed (None: worker processes here)
    limit: int | None = None


@dataclass
class Replayed:
    """What the run keeps of the sessions it read and replayed, gathered in file order."""

    sessions: list[ReadSession] = field(default_factory=list)
    failed: list[FailedFile] = field(default_factory=list)
    totals: RunTotals = field(default_factory=RunTotals)
    engines: list[EngineRow] = field(default_factory=list)  # the real compactions beside their engines' presets
    file_hashes: dict[str, str | None] = field(default_factory=dict)  # each file's, as the worker that read it found it


def _run_locked(checked: CheckedRun, out: Path, options: RunOptions) -> RunResult:
    """The run, its folder locked: the folder made ready, the job, the replay, then the results."""
    config = checked.config
    log, lost = _ready_folder(checked, out, options)
    job, measured = _session_job(checked, out, log, options.summarizer)
    completers = llm_completers(options.summarizer, checked.judge)
    bar = tqdm(total=len(checked.inputs.files), desc="reading and replaying", unit="file", disable=not options.progress)
    account = CallAccount(config.max_cost_usd, on_change=_shown_on(bar) if options.progress else None)
    if completers:
        check_budget_prices(completers, account)
    reads = _reads(checked, job, measured, options, completers, account)
    replayed = _replay_all(reads, out, log, bar, completers, account)
    bar.close()
    return _finished(checked, out, replayed, measured, log, lost, account if completers else None)


def _ready_folder(checked: CheckedRun, out: Path, options: RunOptions) -> tuple[DoneLog, set[str]]:
    """The folder ready for the run: an older run replaced or continued, the sessions whose committed
    row parts are gone to be replayed again, config.json written. The finished work, and those sessions."""
    config, done_path = checked.config, out / DONE
    if not options.resume and done_path.exists():
        if not options.overwrite:
            raise ValueError(f"{out} already holds a run: use --resume to continue it, or another --out")
        for name in (*OLD_ROW_FILES, DONE):
            (out / name).unlink(missing_ok=True)
    if options.resume:
        resumable(out)  # a directory of another format is refused, naming it
    log = read_done(done_path) if options.resume else DoneLog()
    configuration = run_config_json(config, options.limit)
    if options.resume and (out / "config.json").exists():
        previous = json.loads((out / "config.json").read_text())
        if previous != json.loads(json.dumps(configuration)):  # as config.json holds it (tuples are lists)
            raise ValueError(f"{out}: --resume with a different configuration than the run was started with")
    # Sessions whose committed row parts are gone or unreadable are replayed again, as if never finished.
    lost = {part.session for part in damaged_parts(out) if part.session is not None} if options.resume and log.parts else set()
    if lost:
        drop_commits(out, lost)
        log = read_done(done_path)
    write_atomic(out / "config.json", json.dumps(configuration, indent=2) + "\n")
    check_unchanged(out, log, checked.inputs.files)  # (checked before the lock was taken: checked again under it)
    return log, lost


def _session_job(checked: CheckedRun, out: Path, log: DoneLog, summarizer) -> tuple[SessionJob, list]:
    """What each session's replay does (the same in every worker), and the estimators the run measures."""
    config = checked.config
    job = SessionJob(
        config.strategies,
        checked.instances,
        log.units,
        windows_of(config),
        config.estimator,
        summarizer,
        checked.judge,
        out,
        resolve_prices(config.prices or None),
        log.parts,
        # Settings identical by construction are replayed once, decided here before any replay.
        same_as=replayed_once(config.strategies, config.estimator),
    )
    measured = run_estimators(config.estimator, [job.estimator_of(s) for s in config.strategies])
    return replace(job, estimators=tuple(measured) if config.estimation else None), measured


def _reads(checked: CheckedRun, job: SessionJob, measured: list, options: RunOptions, completers, account: CallAccount):
    """The files read and replayed, in file order: in one process with replay threads when an LLM
    summarizer or judge is used (its cache and concurrency limit live there), else in worker processes."""
    config, inputs = checked.config, checked.inputs
    if completers:
        threads = options.replay_threads or default_replay_threads(completers)
        files = read_files(inputs.files, inputs.lenient_files, lenient=config.lenient, workers=1, refused=inputs.links_out)
        return replay_concurrently(files, job, ReadSession.counted, threads, account)
    if options.executor is None:
        # The encodings the workers count with, built once here: the forked workers share them instead
        # of each building its own (o200k and cl100k: some 0.7 s of CPU and 110 MB per worker).
        for encoding in encodings_of([*measured, *(DEFAULT_ESTIMATORS if config.estimation else ())]):
            get_encoding(encoding)
    return read_files(
        inputs.files,
        inputs.lenient_files,
        lenient=config.lenient,
        # An LLM summarizer or judge keeps the run in one process, where its cache and concurrency limit live.
        workers=1 if options.summarizer is not None or checked.judge is not None else options.workers,
        then=job.replay_file,
        keep=ReadSession.counted,
        executor=options.executor,
        refused=inputs.links_out,
    )


def _replay_all(reads, out: Path, log: DoneLog, bar: tqdm, completers, account: CallAccount) -> Replayed:
    """Every read and replayed file gathered, each session's parts committed with its done line. One
    version of each prompt template for the whole run; an error in a file ends the worker pool at once
    (see read_files)."""
    replayed = Replayed()
    commits = Commits(out, log)
    remove_unnamed(out, commits.named)  # a killed run's
    try:
        with fixed_templates(), calls_limited(completers, account), closing(reads), commits:
            for read in reads:
                bar.update()
                if read.error is not None:
                    if not read.lenient:
                        raise read.error
                    replayed.failed.append(FailedFile(path=read.path, error=str(read.error)))
                replayed.sessions.extend(read.sessions)
                file_hash, replays = read.then or (None, ())
                if read.sessions:
                    replayed.file_hashes[read.sessions[0].source_path] = file_hash
                    # The file read, whose hash --resume checks (a canonical file names its source instead).
                    read_hash = file_hash if read.sessions[0].source_path == str(read.path) else hash_of_file(read.path)
                for session, replay in zip(read.sessions, replays):
                    if replay.parts is not None:
                        # One commit per session: its parts, written already, become part of the run with its done line.
                        commits.commit(session.id, replay.labels, str(read.path), read_hash, replay.parts)
                    replayed.totals.add(replay.results)
                    replayed.engines.extend(replay.engines)
    except WorkerDied as exc:
        raise ValueError(
            f"{exc}. The sessions finished before are kept: continue with `compactlab run --resume --out {out}` "
            f"(the same options), with fewer processes side by side if memory is short"
        ) from None
    finally:
        remove_unnamed(out, commits.named)  # of files replayed after an error stopped the run
    return replayed


def _finished(
    checked: CheckedRun, out: Path, replayed: Replayed, measured: list, log: DoneLog, lost: set[str], account: CallAccount | None
) -> RunResult:
    """The run's results written (meta.json, the report's inputs, summary.json, sessions.csv), or the
    folder left as it was when the replay found nothing to measure."""
    config, sessions, failed, totals = checked.config, replayed.sessions, replayed.failed, replayed.totals
    if not sessions and failed:  # (the check before the run refuses it, unless a file changed in between)
        undo_run(out, checked.before)
        raise nothing_read(failed)
    read_inputs = ReadInputs(sessions=tuple(sessions), failed=tuple(failed), passed_over=checked.inputs.passed_over)
    meta = {**run_meta(read_inputs, replayed.file_hashes), "presets": run_versions(s.strategy for s in config.strategies)}
    write_atomic(out / "meta.json", json.dumps(meta, indent=2) + "\n")
    results = totals.totals()
    try:
        write_report_inputs(out, results.session_facts, totals.estimation if config.estimation else None, measured)
    finally:
        if totals.estimation is not None:
            totals.estimation.close()
    result = finish(
        out,
        read_inputs,
        resumed_units=len(log.units),
        prices=config.prices,
        results=results,
        max_failed_share=config.max_failed_share,
        engines=rows_document(replayed.engines),
    )
    # A window no session fits in measures nothing (every call over it): refused, with the numbers. The
    # check before the replay refuses it where it could bound every session's floor; here the folder is
    # then left as it was, so that it takes a new run.
    try:
        check_window_fits_some_session(result.sessions)
    except ValueError as exc:
        undo_run(out, checked.before)
        raise ValueError(f"{exc}. Nothing of this run was kept in {out}") from None
    result = replace(result, replayed_again=tuple(sorted(lost)))
    return replace(result, llm_calls=account.line()) if account is not None else result


def _shown_on(bar: tqdm):
    """A `CallAccount` callback showing its counts after the bar, at most a few times a second."""
    shown = [0.0]

    def show(account: CallAccount) -> None:
        now = time.monotonic()
        if now - shown[0] >= PROGRESS_SECONDS:
            shown[0] = now
            bar.set_postfix_str(account.line())

    return show


def run_meta(read: ReadInputs, file_hashes: dict[str, str | None] | None = None) -> dict:
    """The run's metadata; `file_hashes`: the dataset files' hashes where they were taken already."""
    file_hashes = file_hashes or {}
    packages = ("compactlab", "pandas", "tiktoken", "openai", "anthropic", "matplotlib", "jinja2")
    return {
        **meta_format(),
        "versions": {"python": platform.python_version(), **{p: _version(p) for p in packages}},
        "datasets": {t.source_path: file_hashes.get(t.source_path) or hash_of_file(Path(t.source_path)) for t in read.sessions},
        "prompts": {p.name: hashlib.sha256(p.read_bytes()).hexdigest()[:16] for p in sorted(PROMPTS_DIR.glob("*.j2"))},
        "sessions": len(read.sessions),
        "skipped_records": {t.id: len(t.skipped) for t in read.sessions if t.skipped},
        "files_not_read": [{"path": str(f.path), "error": f.error} for f in read.failed],
    }


def _version(package: str) -> str | None:
    try:
        return version(package)
    except Exception:  # noqa: BLE001 - a missing package is reported as None, not a crash
        return None
