"""Ctrl-C during `compactlab run`: one line, no traceback, exit 130, the sessions finished kept, and the
`--resume` command it prints (made of the user's own arguments) finishes the run with the rows of a
run never interrupted. The SIGINT is a real one, sent to the run's whole process group as a
terminal's Ctrl-C is, at a write of the run (`run_files.WRITE_HOOK`), never after a sleep."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pandas as pd

from compactlab.cli.main import main
from compactlab.runs.run_files import DONE, read_done
from compactlab.runs.run_storage import iter_rows
from tests.runs.run_inputs import KEY, SESSIONS, session_folder

ROOT = Path(__file__).resolve().parents[2]
CHILD = """
import os, signal, sys
from compactlab.cli.main import main
from compactlab.runs import run_files
seen = []
def hook(path):
    seen.append(path.name)
    if seen.count("done.jsonl") == 2:  # the second session's commit: the first is kept
        os.killpg(0, signal.SIGINT)
run_files.WRITE_HOOK = hook
sys.exit(main(sys.argv[1:]))
"""


def _calls(out: Path) -> pd.DataFrame:
    return pd.DataFrame(list(iter_rows(out, "calls"))).sort_values(KEY).reset_index(drop=True)


def test_ctrl_c_prints_one_line_with_the_resume_command_that_finishes_the_run(tmp_path: Path, capsys) -> None:
    data = session_folder(tmp_path / "sessions", SESSIONS)
    out = tmp_path / "run"
    args = [
        "run",
        "--dataset",
        str(data),
        "--out",
        str(out),
        "--strategy",
        "truncate",
        "--workers",
        "2",
        "--window",
        "40000",
        "--no-estimation",
    ]
    child = subprocess.run([sys.executable, "-c", CHILD, *args], cwd=ROOT, capture_output=True, text=True, start_new_session=True)
    assert child.returncode == 130, child.stderr
    assert "Traceback" not in child.stderr and len(child.stderr.strip().splitlines()) == 1, child.stderr
    assert len(read_done(out / DONE).units) == 1  # the session finished before the Ctrl-C
    assert f"interrupted: 1 session finished, kept in {out}/; continue with: " in child.stderr
    command = shlex.split(child.stderr.split("continue with: ", 1)[1])
    assert command == ["compactlab", *args, "--resume"]
    assert main(command[1:]) == 0
    capsys.readouterr()
    assert main([*args[:4], str(tmp_path / "whole"), *args[5:]]) == 0
    pd.testing.assert_frame_equal(_calls(out), _calls(tmp_path / "whole"))
