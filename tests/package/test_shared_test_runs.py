"""The shared runs of tests/conftest.py under pytest-xdist: built once by whichever worker asks first,
read by the others, and built again after a build that failed. Workers are processes; flock excludes
two open files of one lock even within one process, so two threads stand in for two workers here."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tests.conftest import _built_by_one_worker, bundled, fingerprint
from tests.report_runs import run_argv

SESSION = bundled("mini-swe-agent-pr816", "deepseek_reasoner_dev_marshmallow-code__marshmallow-1343")


def test_two_workers_asking_at_once_build_the_run_once_and_read_the_same(tmp_path: Path) -> None:
    built: list[Path] = []

    def argv(out: Path) -> list[str]:
        built.append(out)
        return run_argv(out, [SESSION], ("truncate",))

    printed: list[str] = []
    workers = [threading.Thread(target=lambda: printed.append(_built_by_one_worker(tmp_path / "shared", argv))) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert built == [tmp_path / "shared" / "run"]  # one build, into the folder every worker reads
    assert len(printed) == 2 and printed[0] == printed[1] and "report.html" in printed[0]
    assert (tmp_path / "shared" / "run" / "report.html").is_file()


def test_a_failed_build_is_built_again_by_the_next_worker(tmp_path: Path) -> None:
    missing = tmp_path / "no such session.jsonl"
    with pytest.raises(AssertionError):
        _built_by_one_worker(tmp_path / "shared", lambda out: run_argv(out, [missing], ("truncate",)))
    assert not (tmp_path / "shared" / "printed.txt").exists()
    printed = _built_by_one_worker(tmp_path / "shared", lambda out: run_argv(out, [SESSION], ("truncate",)))
    assert "report.html" in printed
    files = fingerprint(tmp_path / "shared" / "run")
    assert "report.html" in files and "sessions.csv" in files
