"""The run directory's format number, the one step that reads an older format or refuses it by
name, and the report inputs a run writes (estimation only when asked)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from compactlab.cli.main import main
from compactlab.replay.setting import Setting
from compactlab.report.run_data import load_light, load_run
from compactlab.report.run_report import write_run_report
from compactlab.runs import runs
from compactlab.runs.run_config import RunConfig
from compactlab.runs.run_format import FORMAT, UnreadableFormat, checked, format_of
from compactlab.runs.run_storage import run_calls
from compactlab.runs.run_summary import write_summary

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


def test_formats_2_and_3_are_refused_by_name(small: Path, tmp_path: Path) -> None:
    """A run of format 2 (meta.json without a number) or 3 (its commits say "transcript") is
    refused, naming the format and the command that replays it: 0.1.0 had no users to migrate."""
    two = tmp_path / "two"
    shutil.copytree(small, two)
    meta = json.loads((two / "meta.json").read_text())
    del meta["format"]
    (two / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(UnreadableFormat, match="run directory format 2 .*reads format 4 only: replay it"):
        load_light(two)
    three = tmp_path / "three"
    shutil.copytree(small, three)
    (three / "meta.json").unlink()
    done = (three / "done.jsonl").read_text().replace('"session"', '"transcript"')
    (three / "done.jsonl").write_text(done)
    with pytest.raises(UnreadableFormat, match="run directory format 3 "):
        checked(three)


def test_a_column_added_since_a_run_was_written_reads_as_absent(small: Path, tmp_path: Path, capsys) -> None:
    """A run written before a per-session column or a call column existed (the column taken out of
    its real files) reads under the same format: the column empty, its figure "–", and `compactlab
    diff` against a run that has it compares the others (no KeyError, no format bump)."""
    older = tmp_path / "older"
    shutil.copytree(small, older)
    table = pd.read_csv(older / "sessions.csv")
    table.drop(columns=["unrecoverable_loss", "floor_tokens"]).to_csv(older / "sessions.csv", index=False)
    for part in (older / "rows" / "calls").glob("*.parquet"):
        stored = pq.read_table(part)
        pq.write_table(stored.drop_columns(["noop_before"]), part)
    assert format_of(older) == FORMAT
    read = load_light(older).sessions
    assert read["unrecoverable_loss"].isna().all() and read["floor_tokens"].isna().all()
    assert load_light(small).sessions["floor_tokens"].notna().all()  # (the column was there to take out)
    calls = run_calls(older)
    assert calls["noop_before"].isna().all() and len(calls) == len(run_calls(small))
    assert run_calls(older, columns=["session", "noop_before"]).columns.tolist() == ["session", "noop_before"]
    assert main(["diff", str(older), str(small)]) == 0
    assert "next-step facts kept" in capsys.readouterr().out


def test_format_1_and_newer_formats_are_refused_by_name(small: Path, tmp_path: Path) -> None:
    old = tmp_path / "old"
    shutil.copytree(small, old)
    meta = json.loads((old / "meta.json").read_text())
    del meta["format"]
    (old / "meta.json").write_text(json.dumps(meta))
    (old / "done.jsonl").write_text(json.dumps(FORMAT_ONE_COMMIT) + "\n")  # a commit of JSONL row files
    with pytest.raises(UnreadableFormat, match="run directory format 1 .*reads format 4 only"):
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
