"""An interrupted run never counts anything twice: a failure at every write of a run, then
`--resume`, gives a clean run's rows; a second process cannot work in the same directory; a
changed dataset file is named on resume; workers end with the run's process.

Failures are injected with `compactlab.runs.run_files.WRITE_HOOK` (raise, or SIGKILL in a child process, at
the Nth write), never with sleeps. Real bundled sessions throughout.
"""

from __future__ import annotations

import errno
import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from compactlab.contract import Trigger
from compactlab.replay.setting import Setting
from compactlab.runs import run_files, runs
from compactlab.runs.run_config import RunConfig
from compactlab.runs.run_files import DONE, RunDirectoryBusy, read_done, write_atomic
from compactlab.runs.run_storage import KINDS, ROWS, iter_rows
from tests.runs import run_inputs
from tests.runs.run_inputs import KEY, run_config, session_folder

ROOT = Path(__file__).resolve().parents[2]
SESSIONS = run_inputs.SESSIONS[:3]
# A failure at each of a run's writes replays the sessions twice per write (some 50 runs): two sessions
# that compact often (21 and 40 compactions here) and replay fast. Every kind of write still occurs,
# and one session's writes come after another's done line.
EVERY_WRITE = run_inputs.SESSIONS[1:3]
STRATEGIES = (
    Setting("t", "truncate", trigger=Trigger(fraction=0.3)),
    Setting("m", "observation-masking", trigger=Trigger(fraction=0.3)),
)


class Killed(BaseException):
    """What a kill looks like from inside: nothing after it runs in the run's code."""


def _folder(tmp_path: Path) -> Path:
    return session_folder(tmp_path / "sessions", SESSIONS)


def _config(folder: Path) -> RunConfig:
    return run_config(folder, STRATEGIES)


def _rows(out: Path, kind: str) -> list[str]:
    """The run's committed rows of `kind`, as sorted JSON texts."""
    return sorted(json.dumps(row, sort_keys=True) for row in iter_rows(out, kind))


def _files_left(out: Path) -> set[Path]:
    """Row parts no done line names, and temporary files: what a run must not leave behind."""
    named = {out / name for kind in KINDS for name in read_done(out / DONE).part_names(kind)}
    return {p for p in (out / ROWS).rglob("*") if p.is_file() and p not in named} | set(out.glob(".*.tmp"))


class _FailAt:
    """A WRITE_HOOK failing at the `nth` write: a kill leaves half a line behind in the file it
    was appending to; a full disk fails that write and every later one."""

    def __init__(self, nth: int, mode: str) -> None:
        self.nth, self.mode, self.count, self.paths = nth, mode, 0, []

    def __call__(self, path: Path) -> None:
        self.count += 1
        self.paths.append(path.name)
        if self.mode == "count" or self.count < self.nth:
            return
        if self.mode == "kill":
            if path.name == DONE and path.exists():
                with path.open("ab") as handle:
                    handle.write(b'{"session": "cut off by a k')
            elif path.parent.parent.name == ROWS:  # a part cut off while it was written
                path.with_name(f".{path.name}.tmp").write_bytes(b"PAR1 cut off by a k")
            raise Killed
        raise OSError(errno.ENOSPC, "No space left on device", str(path))


# A full disk at every write is the same walk through the writes as a kill, answered by another error:
# 13 s of CPU, run by CI (slow) while a local run keeps the kill.
@pytest.mark.parametrize("mode", ["kill", pytest.param("full disk", marks=pytest.mark.slow)])
def test_a_failure_at_every_write_then_resume_gives_the_clean_rows(mode: str, tmp_path: Path, monkeypatch) -> None:
    config = _config(session_folder(tmp_path / "sessions", EVERY_WRITE))
    counter = _FailAt(0, "count")
    monkeypatch.setattr(run_files, "WRITE_HOOK", counter)
    clean = runs.run(config, tmp_path / "clean", workers=1)
    # config.json, per session its calls, compactions and done line, meta.json, session_facts.json, the
    # estimation's calls and document, sessions.csv
    assert counter.count == 6 + 3 * len(EVERY_WRITE) and counter.paths.count(DONE) == len(EVERY_WRITE)
    assert len(clean.compactions) > 40  # so that the compaction rows compared below are many
    for nth in range(1, counter.count + 1):
        out = tmp_path / f"{mode}-{nth}"
        monkeypatch.setattr(run_files, "WRITE_HOOK", _FailAt(nth, "kill" if mode == "kill" else "enospc"))
        with pytest.raises(Killed if mode == "kill" else OSError):
            runs.run(config, out, workers=1)
        monkeypatch.setattr(run_files, "WRITE_HOOK", None)
        resumed = runs.run(config, out, resume=True, workers=2)
        for kind in KINDS:
            assert _rows(out, kind) == _rows(tmp_path / "clean", kind), f"{mode} at write {nth}: {kind}"
        assert not resumed.calls.duplicated(KEY).any()
        pd.testing.assert_frame_equal(
            resumed.sessions.sort_values(["session", "setting"]).reset_index(drop=True),
            clean.sessions.sort_values(["session", "setting"]).reset_index(drop=True),
        )
        assert not _files_left(out)


def test_a_real_kill_between_rows_and_their_done_line(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    out = tmp_path / "run"
    # The child is killed right before its second done line: the second session's parts are
    # written, uncommitted.
    child = f"""
import os, signal, sys
from pathlib import Path
from compactlab.runs import run_files, runs
from tests.runs.test_interrupted_runs import _config
seen = []
def hook(path):
    seen.append(path.name)
    if seen.count("{DONE}") == 2:
        os.kill(os.getpid(), signal.SIGKILL)
run_files.WRITE_HOOK = hook
runs.run(_config(Path(sys.argv[1])), Path(sys.argv[2]), workers=2)
"""
    result = subprocess.run([sys.executable, "-c", child, str(folder), str(out)], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == -signal.SIGKILL, result.stderr
    assert len(read_done(out / DONE).units) == len(STRATEGIES)
    assert _files_left(out)  # the parts of a unit that was cut off
    runs.run(_config(folder), out, resume=True)
    runs.run(_config(folder), tmp_path / "clean")
    for kind in KINDS:
        assert _rows(out, kind) == _rows(tmp_path / "clean", kind)
    assert not _files_left(out)


def test_a_second_process_cannot_work_in_a_run_directory(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    out = tmp_path / "run"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from compactlab.runs.run_files import RunLock\nwith RunLock(sys.argv[1]):\n print('held', flush=True); sys.stdin.read()",
            str(out),
        ],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        for resume in (False, True):
            with pytest.raises(RunDirectoryBusy, match=f"in use by another compactlab run \\(process {holder.pid}\\)"):
                runs.run(_config(folder), out, resume=resume)
        assert not (out / "config.json").exists()  # nothing was touched
    finally:
        holder.communicate(input="")
    assert holder.returncode == 0
    assert runs.run(_config(folder), out, resume=True).sessions["session"].nunique() == len(SESSIONS)


def test_resume_names_a_dataset_file_that_changed_or_is_gone(tmp_path: Path, monkeypatch) -> None:
    folder = _folder(tmp_path)
    out = tmp_path / "run"
    monkeypatch.setattr(run_files, "WRITE_HOOK", _FailAt(1 + 3 * 2 + 1, "kill"))  # after two sessions were committed
    with pytest.raises(Killed):
        runs.run(_config(folder), out, workers=1)
    monkeypatch.setattr(run_files, "WRITE_HOOK", None)
    done = read_done(out / DONE)
    first = sorted(done.file_hashes)[0]
    original = Path(first).read_bytes()
    lines = gzip.decompress(original).splitlines(keepends=True)
    Path(first).write_bytes(gzip.compress(b"".join(lines[:-1])))  # its last record edited away
    with pytest.raises(ValueError, match=f"{Path(first).name} changed since this run replayed it"):
        runs.run(_config(folder), out, resume=True)
    Path(first).unlink()
    with pytest.raises(ValueError, match=f"{Path(first).name} \\(read by this run\\) is gone"):
        runs.run(_config(folder), out, resume=True)
    Path(first).write_bytes(original)
    assert runs.run(_config(folder), out, resume=True).resumed_units == 2 * len(STRATEGIES)


def test_an_atomic_write_cut_off_leaves_the_old_file(tmp_path: Path, monkeypatch) -> None:
    path = write_atomic(tmp_path / "summary.json", '{"old": true}\n')

    def full(target: Path) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(run_files, "WRITE_HOOK", full)
    with pytest.raises(OSError):
        write_atomic(path, '{"new": true}\n')
    assert path.read_text() == '{"old": true}\n' and sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_workers_end_with_the_run_process(tmp_path: Path) -> None:
    parent = """
import os, sys, threading
from pathlib import Path
from compactlab.sessions.loading import read_files
def replay(sessions):
    sys.stdout.write(f"{os.getpid()}\\n")  # one write: two workers printing at once cannot interleave their lines
    sys.stdout.flush()
    threading.Event().wait()  # a worker busy for as long as it lives
for read in read_files([Path(p) for p in sys.argv[1:]], workers=2, then=replay):
    pass
"""
    process = subprocess.Popen(
        [sys.executable, "-c", parent, *map(str, SESSIONS[:2])], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    workers = [int(process.stdout.readline()) for _ in range(2)]
    try:
        assert all(map(_alive, workers))
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        deadline = time.monotonic() + 60  # a bound, not a timing: the kernel kills them at once
        while any(map(_alive, workers)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(map(_alive, workers))
    finally:
        for pid in workers:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
