"""A run's replays side by side in threads, while their LLM calls are in flight.

A run whose strategies summarize with an LLM, or whose compactions a model judges, spends its time
waiting on the provider. So its (session, setting) replays run in a pool of threads of one
process: each replay's compactions stay in order (a summary builds on the one before), replays
of other settings and sessions go on meanwhile, and a judge's calls on one replay's
compactions, which are independent of each other, go to a second pool. The calls actually sent
are bounded per provider by `compactlab.llm.concurrency` (in flight, per minute, the cost budget).

Why threads in one process, not the run's worker processes: the bound on calls in flight, the
rate limits and the budget then hold across the whole run with plain locks, and the call cache's
per-key locks make two replays asking the same question pay once. The replays' own work (CPU
bound, under the GIL) is small beside the calls' latency; an offline run keeps its processes.

Results are the same as one replay after another, row for row: each session's settings are
replayed into their own rows and joined in the settings' order, and sessions are handed back
in file order, as `compactlab.sessions.loading.read_files` hands them back. Replays longest first: of the
sessions read so far, the settings of the longest ones (the most messages: most compactions
to chain) are started first, so a long chain of calls does not start last and end the run alone.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections import deque
from collections.abc import Callable, Generator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import closing
from dataclasses import dataclass, replace

from compactlab.llm.concurrency import CallAccount
from compactlab.sessions.loading import FileRead

LOOKAHEAD = 2  # replays read and waiting per thread: enough to keep every thread busy, bounded memory


@dataclass
class _PendingFile:
    read: FileRead
    units: list[list[Future] | None]  # per session, each setting's replay (None: nothing left to replay)
    plans: list


class _LongestFirst:
    """Runs submitted tasks on `threads` threads, the task with the highest priority first."""

    def __init__(self, threads: int) -> None:
        self._queue: list = []
        self._order = itertools.count()
        self._ready = threading.Condition()
        self._closed = False
        self._threads = [threading.Thread(target=self._work, name=f"replay-{i}", daemon=True) for i in range(threads)]
        for thread in self._threads:
            thread.start()

    def submit(self, priority: int, task: Callable[[], object]) -> Future:
        future: Future = Future()
        with self._ready:
            heapq.heappush(self._queue, (-priority, next(self._order), future, task))
            self._ready.notify()
        return future

    def _work(self) -> None:
        while True:
            with self._ready:
                while not self._queue and not self._closed:
                    self._ready.wait()
                if not self._queue:
                    return
                _, _, future, task = heapq.heappop(self._queue)
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(task())
            except BaseException as exc:  # noqa: BLE001 - handed to whoever waits on the future
                future.set_exception(exc)

    def close(self) -> None:
        """Cancel what has not started, wait for what has."""
        with self._ready:
            self._closed = True
            for _, _, future, _ in self._queue:
                future.cancel()
            self._queue.clear()
            self._ready.notify_all()
        for thread in self._threads:
            thread.join()


def replay_concurrently(
    reads: Generator[FileRead, None, None], job, keep: Callable, threads: int, account: CallAccount | None
) -> Generator[FileRead, None, None]:
    """`reads` (files read, sessions whole) as `read_files(..., then=job.replay_file, keep=keep)`
    would hand them back, the replays made on `threads` threads (see the module docstring).

    `job` is the run's `compactlab.runs.session_job.SessionJob` (plan, replay_setting, assemble, file_hash). A replay that
    raises stops the run: calls not sent yet are refused (`account.stop`), replays not started are
    cancelled, and the error is raised when its file's turn comes."""
    replays = _LongestFirst(threads)
    judging = ThreadPoolExecutor(threads, thread_name_prefix="judge")

    def fan_out(tasks):
        return [future.result() for future in [judging.submit(task) for task in tasks]]

    pending: deque[_PendingFile] = deque()
    running: set[Future] = set()
    try:
        with closing(reads):
            for read in reads:
                pending.append(_start(read, job, replays, fan_out if threads > 1 else None, running))
                while pending and (_done(pending[0]) or len(running) >= LOOKAHEAD * threads):
                    if not _done(pending[0]):
                        finished, _ = wait(running, return_when=FIRST_COMPLETED)
                        running -= finished
                        continue
                    yield _finish(pending.popleft(), job, keep, account)
        while pending:
            yield _finish(pending.popleft(), job, keep, account)
    finally:
        if account is not None:
            account.stop("the run is stopping")
        replays.close()
        judging.shutdown(wait=True, cancel_futures=True)


def _start(read: FileRead, job, replays: _LongestFirst, fan_out, running: set[Future]) -> _PendingFile:
    units: list[list[Future] | None] = []
    plans = []
    for session in read.sessions:
        plan = job.plan(session)
        plans.append(plan)
        if plan is None:
            units.append(None)
            continue
        size = len(session.messages)
        futures = [replays.submit(size, _bound(job.replay_setting, plan, strategy, fan_out)) for strategy in plan.replayed]
        running.update(futures)
        units.append(futures)
    return _PendingFile(read, units, plans)


def _bound(replay_setting, plan, strategy, fan_out) -> Callable[[], object]:
    if fan_out is None:
        return lambda: replay_setting(plan, strategy)
    return lambda: replay_setting(plan, strategy, fan_out)


def _done(pending: _PendingFile) -> bool:
    return all(f.done() for futures in pending.units if futures for f in futures)


def _finish(pending: _PendingFile, job, keep: Callable, account: CallAccount | None) -> FileRead:
    read = pending.read
    if read.error is not None:
        return read
    replayed = []
    for session, plan, futures in zip(read.sessions, pending.plans, pending.units):
        if futures is None:
            replayed.append(job.nothing_new(session))
            continue
        try:
            results = [f.result() for f in futures]
        except BaseException as exc:
            if account is not None:
                account.stop(f"the run stopped: {exc}")
                if account.stop_error is not None and exc is not account.stop_error:
                    raise account.stop_error from None  # why the run stopped, not a call refused after it
            raise
        replayed.append(job.assemble(plan, results))
    return replace(read, sessions=tuple(map(keep, read.sessions)), then=(job.file_hash(read.sessions), replayed))
