"""Load every session named on a command line, with progress and an account of what failed.

Strict mode (the default) stops at the first problem with an error naming file and line.
Lenient mode skips damaged records (counted on each session) and, when a whole file cannot be
read (empty, unknown format, not JSON at all), records the file in `Loaded.failed` and goes on; when
no file at all could be read, that is the error (`nothing_read`).
"""

from __future__ import annotations

import gc
import multiprocessing as mp
import os
import signal
from collections import deque
from collections.abc import Callable, Collection, Generator, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import closing
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tqdm import tqdm

from compactlab.sessions.agent_homes import home_name
from compactlab.sessions.datasets import PathArguments, link_out, resolve_inputs
from compactlab.sessions.importers import load_file
from compactlab.sessions.model import LLMCall, Session, SkippedRecord
from compactlab.sessions.parent_exit import exit_with_parent
from compactlab.sessions.source import SessionError


@dataclass(frozen=True)
class FailedFile:
    path: Path
    error: str


@dataclass(frozen=True)
class Loaded:
    sessions: tuple[Session, ...]
    failed: tuple[FailedFile, ...] = ()
    # Files in given folders that are not sessions by name (README, LICENSE, ...).
    passed_over: tuple[Path, ...] = ()


def load_inputs(
    arguments: PathArguments,
    *,
    lenient: bool = False,
    format: str | None = None,
    progress: bool = False,
    workers: int | None = None,
) -> Loaded:
    """Sessions of every file, folder or dataset name in `arguments` (none: all bundled datasets)."""
    inputs = resolve_inputs(arguments)
    sessions: list[Session] = []
    failed: list[FailedFile] = []
    reads = read_files(
        inputs.files, inputs.lenient_files, lenient=lenient, format=format, workers=workers, refused=inputs.links_out
    )
    with closing(reads):
        for read in tqdm(reads, total=len(inputs.files), desc="reading sessions", unit="file", disable=not progress, leave=False):
            if read.error is not None:
                if not read.lenient:
                    raise read.error
                failed.append(FailedFile(path=read.path, error=str(read.error)))
            sessions.extend(read.sessions)
    if not sessions and failed:
        raise nothing_read(failed)
    return Loaded(sessions=tuple(sessions), failed=tuple(failed), passed_over=inputs.passed_over)


SHOWN_FAILURES = 20  # files named in `nothing_read`'s error; the rest are counted


def nothing_read(failed: Sequence[FailedFile]) -> ValueError:
    """The error of a lenient read that passed over every file: a command with no session has no
    result to show (as an empty folder has none), so it is refused, naming why each file was not read."""
    reasons = "\n  ".join(f.error for f in failed[:SHOWN_FAILURES])
    more = f"\n  ... and {len(failed) - SHOWN_FAILURES} more" if len(failed) > SHOWN_FAILURES else ""
    return ValueError(f"no session could be read: {len(failed)} files not read:\n  {reasons}{more}")


@dataclass(frozen=True)
class ReadSession:
    """What is kept of a session once it is replayed: which it is, where it came from, what
    reading it skipped, how many calls it recorded with which models, and (`of`) its recorded
    calls. The messages stay in the process that replayed them, so memory does not grow with the
    datasets (and they are not sent back); a run keeps no recorded calls either (`counted`): what
    it needs of them is computed where the session was replayed (bench/runs/session_results.py)."""

    id: str
    source_format: str
    source_path: str
    calls: tuple[LLMCall, ...]
    skipped: tuple[SkippedRecord, ...] = ()
    call_count: int = 0
    models: tuple[str, ...] = ()  # the recorded calls' models, each once
    compactions: int = 0  # real compactions the source recorded
    timed: bool = False  # every recorded call carries its time (the prompt cache's lifetime needs it)

    @classmethod
    def of(cls, session: Session) -> ReadSession:
        return replace(cls.counted(session), calls=tuple(session.calls))

    @classmethod
    def counted(cls, session: Session) -> ReadSession:
        models = tuple(dict.fromkeys(call.model for call in session.calls))
        return cls(
            session.id,
            session.source_format,
            session.source_path,
            (),
            session.skipped,
            len(session.calls),
            models,
            len(session.compactions),
            bool(session.calls) and all(call.timestamp is not None for call in session.calls),
        )


@dataclass(frozen=True)
class ReadInputs:
    """What a run read: `ReadSession`s, and, as in `Loaded`, the files it could not read or passed over."""

    sessions: tuple[ReadSession, ...]
    failed: tuple[FailedFile, ...] = ()
    passed_over: tuple[Path, ...] = ()

    @classmethod
    def of(cls, loaded: Loaded) -> ReadInputs:
        return cls(tuple(map(ReadSession.of, loaded.sessions)), loaded.failed, loaded.passed_over)


@dataclass(frozen=True)
class FileRead:
    """One file read: its sessions (or what `keep` kept of them), or the error that stopped it;
    and what `then` made of them."""

    path: Path
    lenient: bool
    sessions: tuple = ()
    error: SessionError | None = None
    then: Any = None  # whatever the caller's `then` returns


def read_files(
    files: Sequence[Path],
    lenient_files: Collection[Path] = (),
    *,
    lenient: bool = False,
    format: str | None = None,
    workers: int | None = None,
    then: Callable[[tuple[Session, ...]], object] | None = None,
    keep: Callable[[Session], object] | None = None,
    executor: Callable[[Callable, tuple, int], Iterator[FileRead]] | None = None,
    refused: Collection[Path] = (),
) -> Generator[FileRead, None, None]:
    """Read `files` in order, in a pool of forked processes when there are several files and cores
    (default: one per core); `then`, when given, runs on each file's sessions in the process that
    read them, so a run replays a file while the next ones are being read. `keep`, when given, is
    what of each session the reads hand back (a run keeps a `ReadSession`). `executor`, when
    given, runs the reads elsewhere (`compactlab.runs.executors`): called with `read_job`, the job and the
    number of files, it yields each file's `read_job(job, index)` in file order. `refused`: files not
    opened, each a file not read (`Inputs.links_out`: links out of the folder named).

    Use it under `contextlib.closing`: a caller that stops early (an error in a file) must close
    the generator then, so its worker pool ends as soon as the files being read are done, not
    whenever the generator is collected."""
    global _JOB
    qualifiers = _qualifiers(files)
    jobs = [
        (path, lenient or path in lenient_files, format, qualifiers.get(path), link_out(path) if path in refused else None)
        for path in files
    ]
    files = list(files)
    workers = min(workers if workers is not None else (os.cpu_count() or 1), len(jobs))
    _JOB = (jobs, then, keep)
    try:
        ids = _UniqueIds()
        if executor is not None:
            yield from map(ids.check, executor(read_job, _JOB, len(jobs)))
            return
        if workers <= 1 or "fork" not in mp.get_all_start_methods():
            yield from map(ids.check, map(_read_one, range(len(jobs))))
            return
        # The forks inherit _JOB: nothing is pickled to them. Each worker notes in `held` which
        # file it is reading, so that one that dies (the OOM killer) can be named.
        context = mp.get_context("fork")
        held, slots = context.Array("q", [-1] * workers), context.Value("i", 0)
        pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_start_worker, initargs=(os.getpid(), held, slots))
        try:
            # A few files per worker are handed to the pool at a time, and each result is let go once
            # handed on: files all submitted at once would pile up their results here behind a slow
            # one (the pool runs ahead of the file-order commits), a memory that grows with the corpus.
            for _, future in submitted_in_order(lambda i: pool.submit(_read_one, i), len(jobs), IN_FLIGHT_PER_WORKER * workers):
                try:
                    read = future.result()
                except BrokenProcessPool:
                    pool.shutdown(wait=True, cancel_futures=True)  # the others are ended: what is still held died with its worker
                    raise WorkerDied([files[i] for i in held[:] if i >= 0]) from None
                yield ids.check(read)
        except KeyboardInterrupt:
            # Ctrl-C: the files being read are given up at once (a run keeps only what its done lines
            # committed), not finished first. The workers ignore the terminal's SIGINT (`_start_worker`).
            for process in list(pool._processes.values()):
                process.terminate()
            raise
        finally:
            # Reads not started are cancelled and running ones finish. (multiprocessing.Pool's
            # terminate could kill a worker in the middle of handing back a result, which left the
            # pool's result channel locked and the run hanging.)
            pool.shutdown(wait=True, cancel_futures=True)
    finally:
        _JOB = None


def _qualifiers(files: Sequence[Path]) -> dict[Path, str]:
    """For files of one name in several folders (whose sessions would get one id), the folder
    that tells each apart, relative to the folder they share: its sessions' ids start with it. An
    agent's session file in a home directory: its folder relative to the home."""
    by_name: dict[str, list[Path]] = {}
    for path in files:
        by_name.setdefault(path.name.removesuffix(".gz"), []).append(path)
    qualifiers: dict[Path, str] = {}
    for group in (g for g in by_name.values() if len(g) > 1):
        folders = [os.path.abspath(p.parent) for p in group]
        shared = os.path.commonpath(folders)
        names = [Path(os.path.relpath(f, shared)).as_posix() for f in folders]
        if len(set(names)) < len(names):  # x.jsonl beside x.jsonl.gz: the file names tell them apart
            names = [Path(os.path.relpath(os.path.abspath(p), shared)).as_posix() for p in group]
        qualifiers.update(zip(group, names))
    # An agent's session in a home is named by its folder relative to the home (agent_homes).
    qualifiers.update((path, name) for path in files if (name := home_name(path)) is not None)
    return qualifiers


class _UniqueIds:
    """Session ids key every result of a run, so two sessions with one id (the same session
    copied under two names, say) would merge: the second file is an error (counted with --lenient)."""

    def __init__(self) -> None:
        self.files: dict[str, Path] = {}

    def check(self, read: FileRead) -> FileRead:
        ids = [t.id for t in read.sessions]
        taken = next((i for i in ids if i in self.files), None)
        if taken is not None:
            what = f"session id {taken!r} is already the id of a session in {self.files[taken]} (the same session twice?)"
            return FileRead(read.path, read.lenient, error=SessionError(read.path, None, what))
        self.files.update((i, read.path) for i in ids)
        return read


class WorkerDied(ValueError):
    """A worker process died while it read (and replayed) files: killed by a signal, most often
    by the kernel for want of memory (the OOM killer). Names the files it held."""

    def __init__(self, files: Sequence[Path]) -> None:
        self.files = tuple(files)
        held = ", ".join(map(str, self.files)) or "a file"
        super().__init__(
            f"{held}: the worker process reading and replaying {'it' if len(self.files) < 2 else 'them'} died "
            f"(killed by a signal: most likely the system ran out of memory and its OOM killer ended it)"
        )


IN_FLIGHT_PER_WORKER = 4  # files handed to each worker ahead: enough to keep it busy, few results held at once


def submitted_in_order(submit: Callable[[int], Any], count: int, limit: int) -> Iterator[tuple[int, Any]]:
    """Tasks 0 to `count` - 1 as (index, what `submit` returned), in order, with at most `limit`
    submitted ahead of the one handed back: the pool of local processes and the Dask executor
    (`compactlab.runs.executors`) both read files this way."""
    pending: deque = deque()
    submitted = 0
    while submitted < count or pending:
        while submitted < count and len(pending) < limit:
            pending.append((submitted, submit(submitted)))
            submitted += 1
        yield pending.popleft()


_JOB: tuple | None = None
_HELD: tuple | None = None  # in a worker: (the pool's shared array of files being read, this worker's slot in it)
YOUNG_THRESHOLD = 50_000  # a worker's collector runs after this many new objects (Python's default: 700)


def _start_worker(parent: int, held=None, slots=None) -> None:
    """Each worker ends with the run's process (bench/sessions/parent_exit.py), freezes what it inherited,
    so its collector never walks the parent's objects again (the use Python's gc.freeze docs
    give), and collects young objects less often: reading and replaying make millions of
    short-lived objects and few cycles (the collector's time in a sweep's workers halves).

    It takes a slot of `held`, where it notes the file it is reading. The pool ends the other
    workers with SIGTERM when one dies: they clear their slot first, so what is left is the
    dead worker's file."""
    global _HELD
    exit_with_parent(parent)
    # Ctrl-C reaches every process of the terminal's group: the run's process answers it (it ends the
    # workers and says how to continue), so a worker does not stop with a traceback of its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if held is not None and slots is not None:
        with slots.get_lock():
            slot, slots.value = slots.value % len(held), slots.value + 1
        _HELD = (held, slot)
        signal.signal(signal.SIGTERM, _ended_by_pool)
    gc.freeze()
    young, *older = gc.get_threshold()
    gc.set_threshold(max(YOUNG_THRESHOLD, young), *older)


def _ended_by_pool(signum, frame) -> None:
    if _HELD is not None:
        _HELD[0][_HELD[1]] = -1
    os._exit(128 + signum)


def _read_one(index: int) -> FileRead:
    assert _JOB is not None, "files are read only while read_files has set their job"
    if _HELD is None:
        return read_job(_JOB, index)
    held, slot = _HELD
    held[slot] = index
    try:
        return read_job(_JOB, index)
    finally:
        held[slot] = -1


def job_file(job: tuple, index: int) -> Path:
    """The file that `read_job(job, index)` reads (an executor names it when its worker died)."""
    return job[0][index][0]


def read_job(job: tuple, index: int) -> FileRead:
    """Read file `index` of `job` (the files, `then` and `keep` of `read_files`)."""
    jobs, then, keep = job
    path, lenient, format, qualifier, refused = jobs[index]
    try:
        if refused is not None:
            raise SessionError(path, None, refused)
        sessions = tuple(load_file(path, lenient=lenient, format=format))
    except SessionError as exc:
        return FileRead(path, lenient, error=exc)
    if qualifier is not None:
        sessions = tuple(replace(t, id=f"{qualifier}/{t.id}") for t in sessions)
    made = then(sessions) if then is not None else None
    return FileRead(path, lenient, tuple(map(keep, sessions)) if keep is not None else sessions, then=made)
