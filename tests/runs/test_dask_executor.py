"""The Dask executor: the same units on a two-worker LocalCluster give the local executor's run,
and a worker that dies ends the run as it does on the local executor (issue 32)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from compactlab.contract import Trigger
from compactlab.replay.setting import Setting
from compactlab.runs import run_files, runs
from compactlab.runs.executors import dask_executor, executor_for
from compactlab.runs.run_files import read_done
from compactlab.runs.run_storage import run_calls, run_compaction_rows
from tests.input_cases import sessions
from tests.runs.run_inputs import KEY, SESSIONS, run_config, session_folder
from tests.scripts.measure_faults import child, run_arguments

pytest.importorskip("dask.distributed")

STRATEGIES = (
    Setting("t", "truncate", trigger=Trigger(fraction=0.3)),
    Setting("s", "summarize", trigger=Trigger(fraction=0.3)),
)


def test_a_run_on_a_two_worker_local_cluster_equals_the_local_run(tmp_path: Path) -> None:
    config = run_config(session_folder(tmp_path / "sessions"), STRATEGIES)
    local = runs.run(config, tmp_path / "local", workers=2)
    on_dask = runs.run(config, tmp_path / "dask", executor=dask_executor(workers=2))
    pd.testing.assert_frame_equal(on_dask.sessions, local.sessions)
    assert len(local.sessions) == len(SESSIONS) * len(STRATEGIES)
    calls = [run_calls(run.out).sort_values(KEY).reset_index(drop=True) for run in (local, on_dask)]
    pd.testing.assert_frame_equal(*calls)
    compactions = [
        sorted(run_compaction_rows(run.out), key=lambda r: (r["session"], r["setting"], r["call"])) for run in (local, on_dask)
    ]
    assert compactions[0] == compactions[1] and compactions[0]
    pd.testing.assert_frame_equal(on_dask.cost_model_check, local.cost_model_check)


def test_a_scheduler_address_needs_the_dask_executor() -> None:
    with pytest.raises(ValueError, match="--executor dask"):
        executor_for("local", "tcp://127.0.0.1:8786", None)


def test_a_dask_worker_killed_like_the_oom_killer_does_is_named_and_resume_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Workers forked, not spawned: they keep the child's counting of writes, which kills the first
    # worker at its first write into the run directory (SIGKILL, as the OOM killer ends a process).
    monkeypatch.setenv("DASK_DISTRIBUTED__WORKER__MULTIPROCESSING_METHOD", "fork")
    data, out = sessions(tmp_path / "data"), tmp_path / "run"
    on_dask = [*run_arguments(data, out), "--executor", "dask"]
    code, _, stderr = child("kill-worker", 1, out, tmp_path / "gate", on_dask)
    assert (tmp_path / "gate.killed").exists()  # a worker really died
    assert code == 2 and "Traceback" not in stderr
    named = [path.name for path in data.iterdir() if path.name in stderr]
    assert len(named) == 1 and "OOM killer" in stderr and f"--resume --out {out}" in stderr
    code, _, stderr = child("count", 0, out, tmp_path / "unused", [*run_arguments(data, out, resume=True), "--executor", "dask"])
    assert code == 0, stderr
    assert len(read_done(out / run_files.DONE).parts) == 2
