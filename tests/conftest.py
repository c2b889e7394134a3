"""Shared test helpers: where the bundled and the shared real sessions are, and the real runs that
the tests of several files read (made once per test session)."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATASETS = REPO / "datasets"
# The real sessions that the bundled datasets were chosen from; CI clones the repo next to it
# (a git worktree of the repo may sit one folder deeper).
SHARED = next(
    (p for p in (REPO.parent / "shared" / "transcripts", REPO.parents[1] / "shared" / "transcripts") if p.is_dir()),
    REPO.parent / "shared" / "transcripts",
)

# How the report's headline names the recommended setting (issue 33: doubt is said first).
VERDICT = r"(Use|No clear winner\. Best by the rule:|Tentatively \(too few compactions to go by\):) <strong>"


def bundled(dataset: str, stem: str) -> Path:
    """The bundled file of `dataset` whose name starts with `stem`."""
    matches = sorted((DATASETS / dataset / "sessions").glob(f"{stem}*"))
    assert len(matches) == 1, f"expected one bundled file for {dataset}/{stem}*, found {matches}"
    return matches[0]


@pytest.fixture
def shared() -> Path:
    if not SHARED.is_dir():
        pytest.skip(f"the shared real sessions are not at {SHARED}")
    return SHARED


# --- real runs made once per test session -----------------------------------------------------------
# A run takes seconds to minutes; tests that only read what a run wrote share one. They must never
# change it: a test that needs a changed run copies it first (shutil.copytree). Each shared run's files
# are fingerprinted when it is made and again when the session ends, so a test that wrote into one
# fails the session instead of quietly changing what the tests after it read.


@dataclass(frozen=True)
class SharedRun:
    folder: Path  # what `compactlab run` or `sweep` wrote
    printed: str  # what it printed


def fingerprint(folder: Path) -> dict[str, str]:
    """Every file under `folder` by its path, with the SHA-256 of its bytes."""
    return {
        path.relative_to(folder).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def _build(argv: list[str]) -> str:
    """Run the command line `argv` in this process; what it printed."""
    from compactlab.cli.main import main

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(argv)
    assert code == 0, printed.getvalue()
    return printed.getvalue()


def _built_by_one_worker(root: Path, argv: Callable[[Path], list[str]]) -> str:
    """Under pytest-xdist every worker is a process of its own with its own session fixtures: the first
    worker to ask builds the run into `root` (shared by the session's workers) while holding a lock on
    `root`, the others wait for it and read what it wrote (the pattern pytest-xdist documents). A build
    that failed leaves no `printed.txt`, so the next worker to ask builds again and fails on its own."""
    root.mkdir(exist_ok=True)
    printed = root / "printed.txt"
    descriptor = os.open(root / "lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        if not printed.exists():
            shutil.rmtree(root / "run", ignore_errors=True)
            text = _build(argv(root / "run"))
            written = root / "printed.txt.tmp"
            written.write_text(text, encoding="utf-8")
            written.replace(printed)  # atomic: a reader sees the whole text or no file
        return printed.read_text(encoding="utf-8")
    finally:
        os.close(descriptor)  # releases the lock


def _made_once(tmp_path_factory: pytest.TempPathFactory, name: str, argv: Callable[[Path], list[str]]) -> Iterator[SharedRun]:
    """The run `argv(folder)` (a command line writing into `folder`) made once per test session, however
    many xdist workers run the session, and checked unchanged when this process's tests are done."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # A worker's base temporary folder is <the session's>/popen-gwN: its parent is the session's.
        root = tmp_path_factory.getbasetemp().parent / name
        printed = _built_by_one_worker(root, argv)
        folder = root / "run"
    else:
        folder = tmp_path_factory.mktemp(name) / "run"
        printed = _build(argv(folder))
    before = fingerprint(folder)
    yield SharedRun(folder, printed)
    after = fingerprint(folder)
    changed = sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))
    assert changed == [], f"a test changed the shared run {folder} (copy it first): {changed}"


@pytest.fixture(scope="session")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedRun]:
    """`compactlab run` on four bundled files and four strategies (tests/report_runs.py: SMALL_FILES,
    SMALL_STRATEGIES), leniently, as a user runs it: the run directory and its report."""
    from tests.report_runs import small_run_argv

    yield from _made_once(tmp_path_factory, "shared-small-run", small_run_argv)


@pytest.fixture(scope="session")
def codex_sweep(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedRun]:
    """`compactlab sweep` of the default grid on the bundled Codex rollouts: a crowded sweep (72 settings)."""
    yield from _made_once(
        tmp_path_factory, "shared-codex-sweep", lambda out: ["sweep", "--dataset", "codex-rollouts", "--out", str(out)]
    )
