"""Where a command may write, and a lenient read of nothing (issue 45): `--out` is refused at the
filesystem root, in the home folder and in a folder holding sessions; a lenient command that can read
no file, or whose sessions record no call to measure, exits 2 naming why and leaves nothing. Real
bundled sessions throughout; the damaged file is a real Claude Code session cut to records that are
all damaged."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from compactlab.cli.main import main
from compactlab.replay.setting import Setting
from compactlab.runs.run_checks import check_run
from compactlab.runs.run_config import RunConfig
from tests.runs.run_inputs import SESSIONS, session_folder
from tests.runs.test_check_first import _listing

TRUNCATE = ["--strategy", "truncate"]


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return session_folder(tmp_path_factory.mktemp("places") / "sessions", SESSIONS[:1])


@pytest.fixture(scope="module")
def all_damaged(tmp_path_factory) -> Path:
    """A folder with one real Claude Code file whose records all lost their `message`: read leniently,
    a session of no message, every record a counted skip."""
    real = next(Path(__file__).parents[2].glob("datasets/claude-code-log/sessions/*.jsonl.gz"))
    lines = gzip.open(real, "rt", encoding="utf-8").read().splitlines()
    damaged = []
    for line in lines[:40]:
        record = json.loads(line)
        if record.get("type") in ("user", "assistant"):
            record["mezzage"] = record.pop("message")
            damaged.append(json.dumps(record))
    folder = tmp_path_factory.mktemp("damaged") / "sessions"
    folder.mkdir()
    (folder / "damaged.jsonl").write_text("\n".join(damaged) + "\n")
    return folder


@pytest.fixture(scope="module")
def unreadable(tmp_path_factory) -> Path:
    """A folder whose one file is no session format at all: with --lenient, a file not read."""
    folder = tmp_path_factory.mktemp("unreadable") / "sessions"
    folder.mkdir()
    (folder / "notes.jsonl").write_text('{"note": "not a session"}\n')
    return folder


def _config(data: Path) -> RunConfig:
    return RunConfig(datasets=(str(data),), strategies=(Setting("truncate", "truncate"),))


def test_the_filesystem_root_is_refused_before_anything_is_written(data: Path) -> None:
    with pytest.raises(ValueError, match="--out / is the filesystem root"):
        check_run(_config(data), Path("/"))


def test_the_home_folder_is_refused(data: Path, tmp_path: Path, monkeypatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    with pytest.raises(ValueError, match="is the home folder"):
        check_run(_config(data), home)
    assert list(home.iterdir()) == []


@pytest.mark.parametrize("command", ["run", "sweep", "export"])
def test_a_folder_holding_sessions_is_refused(command: str, data: Path, tmp_path: Path, capsys) -> None:
    holding = shutil.copytree(data, tmp_path / "holding")  # another copy of sessions, not a dataset this reads
    before = _listing(tmp_path)
    arguments = ["export", str(data)] if command == "export" else [command, "--dataset", str(data), *TRUNCATE]
    assert main([*arguments, "--out", str(holding)]) == 2
    assert "holds session files" in capsys.readouterr().err
    assert _listing(tmp_path) == before


def test_a_run_directory_takes_its_resume(data: Path, tmp_path: Path) -> None:
    """A run directory holds JSON files of its own (config.json, summary.json ...): it is not a folder
    of sessions, so it takes a --resume, and a folder with the run's files and a session is not a run's."""
    out = tmp_path / "run"
    assert main(["run", "--dataset", str(data), *TRUNCATE, "--out", str(out)]) == 0
    assert main(["run", "--dataset", str(data), *TRUNCATE, "--out", str(out), "--resume"]) == 0


@pytest.mark.parametrize("command", ["run", "sweep", "inspect", "estimate", "engines", "export"])
@pytest.mark.parametrize("folder", ["unreadable", "all_damaged"])
def test_a_lenient_command_that_reads_nothing_exits_2_and_leaves_nothing(
    command: str, folder: str, request, tmp_path: Path, capsys
) -> None:
    inputs = request.getfixturevalue(folder)
    out = tmp_path / "out"
    if command in ("run", "sweep"):
        arguments = [command, "--dataset", str(inputs), *TRUNCATE, "--lenient", "--out", str(out)]
    else:
        arguments = [command, str(inputs), "--lenient"] + (["--out", str(out)] if command in ("estimate", "export") else [])
    if folder == "all_damaged" and command in ("inspect", "engines", "export"):
        # A session of no message was read, its skips counted: these show (or write) what it holds.
        assert main(arguments) == 0
        return
    assert main(arguments) == 2
    error = capsys.readouterr().err
    if folder == "unreadable":
        assert "no session could be read: 1 files not read" in error and "notes.jsonl" in error
    else:
        assert "damaged records skipped" in error
    assert not out.exists()
