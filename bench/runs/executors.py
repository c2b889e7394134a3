"""Where a run's files are read and replayed: worker processes on this machine (the default,
`compactlab.sessions.loading.read_files`'s own pool), or a Dask cluster (`--executor dask`).

On Dask each file is one task: the worker process that runs it reads the file, replays its
sessions, writes their row parts into the run directory (`compactlab.runs.run_storage`) and hands back
what the run keeps of them, as a local worker does; the run's process commits the parts in file
order, so the run directory and its results are the local executor's. Without a scheduler address
a `LocalCluster` of `workers` processes is started on this machine (and closed at the end); with
one, the run uses that cluster, whose workers must see the run directory and the datasets at the
same paths (a shared file system) and have compactlab installed.

A worker process that dies (most often the OOM killer) ends the run as it does on the local
executor: `WorkerDied`, naming the file whose task it ran. The LocalCluster does not hand that task
to another worker (`allowed-failures` 0: a file that takes a worker's memory would take the next
one's too); a scheduler given by its address retries it as it is configured to, then gives up.

Dask is an optional dependency (`pip install "compactlab[dask]"`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

from compactlab.sessions.loading import IN_FLIGHT_PER_WORKER, WorkerDied, job_file, submitted_in_order

EXECUTORS = ("local", "dask")


def dask_executor(scheduler: str | None = None, workers: int | None = None) -> Callable[[Callable, tuple, int], Iterator]:
    """An executor for `compactlab.sessions.loading.read_files` that runs each file's read on Dask."""
    try:
        import dask
        from dask.distributed import Client, KilledWorker, LocalCluster
    except ImportError as exc:
        raise ValueError('--executor dask needs Dask distributed: pip install "compactlab[dask]"') from exc

    def execute(function: Callable, job: tuple, count: int) -> Iterator:
        cluster = None
        if scheduler:
            client = Client(scheduler)
        else:
            # One thread per worker process: a replay holds the interpreter lock, processes run side by side.
            with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
                cluster = LocalCluster(
                    n_workers=workers or os.cpu_count() or 1, threads_per_worker=1, processes=True, dashboard_address=None
                )
            client = Client(cluster)
        try:
            # Sent to every worker once, not with each task.
            [shared] = client.scatter([job], broadcast=True)
            limit = IN_FLIGHT_PER_WORKER * max(1, len(client.scheduler_info().get("workers", {})))

            def submit(index: int):
                return client.submit(function, shared, index, pure=False, key=f"compactlab-read-{index}-{os.getpid()}")

            for index, task in submitted_in_order(submit, count, limit):
                try:
                    read = task.result()  # in file order: the run commits files in order
                except KilledWorker:
                    raise WorkerDied([job_file(job, index)]) from None
                yield read
        finally:
            client.close()
            if cluster is not None:
                cluster.close()

    return execute


def executor_for(name: str, scheduler: str | None, workers: int | None):
    """The executor `name` ("local": None, `read_files`'s own pool) for a run."""
    if name not in EXECUTORS:
        raise ValueError(f"--executor: {name!r} is not one of {', '.join(EXECUTORS)}")
    if name == "local":
        if scheduler:
            raise ValueError("--scheduler is the address of a Dask scheduler: give it with --executor dask")
        return None
    return dask_executor(scheduler, workers)
