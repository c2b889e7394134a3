"""The run directory's format number, the one step that reads an older format or refuses it by
name, and the report inputs a run writes (estimation only when asked)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from compactlab.cli.main import main
from compactlab.replay.setting import Setting
from compactlab.report.run_data import load_light, load_run
from compactlab.report.run_report import write_run_report
from compactlab.runs import runs
from compactlab.runs.run_config import RunConfig
from compactlab.runs.run_format import FORMAT, UnreadableFormat, checked, format_of
from compactlab.runs.run_storage import run_calls, run_compaction_rows
from compactlab.runs.run_summary import write_summary

# The reference run as compactlab wrote it before run directories had a format number (its report left out).
FORMAT_2 = Path(__file__).resolve().parents[1] / "data" / "run-format-2"
FORMAT_ONE_COMMIT = {"session": "t", "settings": ["truncate"], "file": "f.jsonl", "file_sha256": None, "calls_end": 10}


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run of two bundled sessions under one setting, without token estimation, and its summary."""
    out = tmp_path_factory.mktemp("format") / "run"
    config = RunConfig(datasets=("claude-code-log",), strategies=(Setting("truncate", "truncate"),), estimation=False)
    write_summary(runs.run(config, out, limit=2), config)
    return out


def test_a_run_numbers_its_format_and_writes_estimation_only_when_asked(small: Path) -> None:
    assert json.loads((small / "meta.json").read_text())["format"] == FORMAT == format_of(small)
    assert json.loads((small / "config.json").read_text())["estimation"] is False
    sessions = json.loads((small / "session_facts.json").read_text())
    assert len(sessions) == 2 and all(facts["source"].endswith(".jsonl.gz") for facts in sessions.values())
    assert not (small / "estimation").exists()  # not asked: not measured, and the report says so
    page = write_run_report(small).read_text(encoding="utf-8")
    assert "Not measured by this run" in page and "the run did not measure token estimation" in page
    assert load_run(small).estimation is None


def test_a_format_2_run_is_read_through_its_upgrade() -> None:
    assert format_of(FORMAT_2) == 2  # meta.json without a number
    table = load_light(FORMAT_2).sessions
    assert {"damaged", "unrecoverable_loss", "floor_tokens", "cost_change"} <= set(table.columns) and len(table) > 100


def test_format_1_and_newer_formats_are_refused_by_name(small: Path, tmp_path: Path) -> None:
    old = tmp_path / "old"
    shutil.copytree(small, old)
    meta = json.loads((old / "meta.json").read_text())
    del meta["format"]
    (old / "meta.json").write_text(json.dumps(meta))
    (old / "done.jsonl").write_text(json.dumps(FORMAT_ONE_COMMIT) + "\n")  # a commit of JSONL row files
    with pytest.raises(UnreadableFormat, match="run directory format 1 .*reads formats 2 to 4"):
        checked(old)
    with pytest.raises(UnreadableFormat, match="format 1"):
        load_light(old)
    newer = tmp_path / "newer"
    shutil.copytree(small, newer)
    (newer / "meta.json").write_text(json.dumps({**meta, "format": FORMAT + 1}))
    with pytest.raises(UnreadableFormat, match=f"format {FORMAT + 1}, written by a newer compactlab"):
        load_run(newer)


def test_resuming_a_format_1_directory_is_refused_before_any_work(small: Path, tmp_path: Path, capsys) -> None:
    old = tmp_path / "old"
    shutil.copytree(small, old)
    (old / "meta.json").unlink()
    (old / "done.jsonl").write_text(json.dumps(FORMAT_ONE_COMMIT) + "\n")
    arguments = ["run", "--dataset", "claude-code-log", "--strategy", "truncate", "--limit", "2", "--no-estimation"]
    assert main([*arguments, "--resume", "--out", str(old)]) == 2
    assert "run directory format 1" in capsys.readouterr().err
    assert (old / "done.jsonl").read_text() == json.dumps(FORMAT_ONE_COMMIT) + "\n"  # nothing written


# A real run of format 3 (two bundled sessions, truncate, token estimation), written by compactlab
# before one vocabulary (issue 30 §3): transcripts.csv, sessions.json, the `transcript` column and keys.
FORMAT_3 = Path(__file__).resolve().parents[1] / "data" / "run-format-3"


def test_a_format_3_run_reads_as_the_same_run_of_this_format(tmp_path: Path) -> None:
    assert format_of(FORMAT_3) == 3
    config = RunConfig(datasets=("claude-code-log",), strategies=(Setting("truncate", "truncate"),))
    now = tmp_path / "now"
    write_summary(runs.run(config, now, limit=2), config)
    old, new = load_run(FORMAT_3), load_run(now)
    pd.testing.assert_frame_equal(old.sessions, new.sessions)
    pd.testing.assert_frame_equal(run_calls(FORMAT_3), run_calls(now))
    assert run_compaction_rows(FORMAT_3) == run_compaction_rows(now) and len(run_compaction_rows(now)) > 0
    assert old.session_facts.keys() == new.session_facts.keys()
    assert [{k: v for k, v in f.items() if k != "source"} for f in old.session_facts.values()] == [
        {k: v for k, v in f.items() if k != "source"} for f in new.session_facts.values()
    ]
    assert old.estimation is not None and new.estimation is not None
    pd.testing.assert_frame_equal(old.estimation.result.calls, new.estimation.result.calls)
    assert old.summary["leaderboard"] == new.summary["leaderboard"]
    copy = tmp_path / "old"
    shutil.copytree(FORMAT_3, copy)
    page = write_run_report(copy).read_text(encoding="utf-8")
    assert "of an earlier format" not in page  # format 3 wrote every report input, under older names
    with pytest.raises(UnreadableFormat, match="run directory format 3; --resume continues a run of format 4 only"):
        runs.run(config, copy, limit=2, resume=True)
