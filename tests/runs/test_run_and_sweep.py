"""`compactlab run` and `sweep` end to end on real sessions: the run directory, resuming, the summary,
the sweep's frontier, bad configurations."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest

from compactlab.cli.main import main
from compactlab.contract import Trigger
from compactlab.replay.setting import Setting
from compactlab.runs import run_checks, runs, session_job
from compactlab.runs.run_config import RunConfig, load_config
from compactlab.runs.run_files import read_done
from tests.conftest import DATASETS, bundled


def _config(tmp_path: Path) -> RunConfig:
    path = tmp_path / "run.toml"
    path.write_text(
        'datasets = ["claude-code-log"]\nwindow = 40000\nstrategies = ["summarize"]\n'
        '[[strategy]]\nname = "prune"\nlabel = "prune-small"\nsettings = { protect_tokens = 5000, minimum_tokens = 1000 }\n'
    )
    return load_config(path)


def test_run_directory_and_resume_after_interruption(tmp_path: Path, monkeypatch) -> None:
    config = _config(tmp_path)
    whole = runs.run(config, tmp_path / "whole")
    original = session_job.replay
    calls = {"n": 0}

    def interrupted(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 30:
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    monkeypatch.setattr(session_job, "replay", interrupted)
    with pytest.raises(KeyboardInterrupt):
        runs.run(config, tmp_path / "cut", workers=1)  # the interruption must happen in this process
    done_before = read_done(tmp_path / "cut" / "done.jsonl").units
    # Rows are written a session at a time: the 30th replay is the first of the 15th session
    # (two strategies each), so 14 sessions × 2 strategies were finished.
    assert len(done_before) == 28
    with open(tmp_path / "cut" / "done.jsonl", "a") as handle:
        handle.write('{"session": "half a line')  # what a kill in the middle of a write leaves
    with pytest.raises(ValueError, match="--resume"):
        runs.run(config, tmp_path / "cut")
    monkeypatch.setattr(session_job, "replay", original)
    resumed = runs.run(config, tmp_path / "cut", resume=True)
    assert resumed.resumed_units == 28
    key = ["session", "setting", "call"]
    pd.testing.assert_frame_equal(
        resumed.calls.sort_values(key).reset_index(drop=True), whole.calls.sort_values(key).reset_index(drop=True)
    )
    assert not resumed.calls.duplicated(key).any()
    assert (tmp_path / "cut" / "meta.json").exists() and (tmp_path / "cut" / "config.json").exists()
    meta = json.loads((tmp_path / "cut" / "meta.json").read_text())
    assert meta["versions"]["tiktoken"] and meta["prompts"]["summary.j2"] and meta["datasets"]


def test_run_command_writes_summary_with_confidence_intervals(tmp_path: Path, capsys) -> None:
    out = tmp_path / "run"
    code = main(
        [
            "run",
            "--dataset",
            "claude-code-log",
            "--strategy",
            "summarize",
            "observation-masking",
            "--window",
            "40000",
            "--all-pairs",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "tokens removed" in printed and "summarize" in printed and "rule: A setting is recommendable" in printed
    summary = json.loads((out / "summary.json").read_text())
    board = {row["setting"]: row for row in summary["leaderboard"]}
    assert set(board) == {"summarize", "observation-masking"}
    for row in board.values():
        assert row["removed_share_low"] <= row["removed_share_mean"] <= row["removed_share_high"]
    recommended = summary["recommendation"]["setting"]
    # Against the recommended setting: n − 1 = 1 test per metric; none without a recommendation.
    assert summary["comparisons"]["against"] == recommended
    assert [len(v) for v in summary["comparisons"]["metrics"].values()] == ([1, 1] if recommended else [])
    if recommended is None:
        assert "no recommendation at a simulated 40,000-token window (a stress test): no setting meets the rule" in printed
    [comparison] = summary["all_pairs"]["metrics"]["removed_share"]  # on request: every pair
    assert 0 <= comparison["p_value"] <= 1 and comparison["n"] > 10


def test_sweep_finds_a_frontier_and_recommends(tmp_path: Path, capsys) -> None:
    code = main(
        [
            "sweep",
            "--dataset",
            "claude-code-log",
            "--strategy",
            "summarize",
            "observation-masking",
            "--thresholds",
            "0.6",
            "0.9",
            "--window",
            "40000",
            "--out",
            str(tmp_path / "sweep"),
            "--no-report",
        ]
    )
    assert code == 0
    document = json.loads((tmp_path / "sweep" / "sweep.json").read_text())
    summary = json.loads((tmp_path / "sweep" / "summary.json").read_text())
    assert len(document["points"]) == 2 * 3 + 2  # summarize: thresholds × the default budgets; masking: thresholds
    # The sweep's recommendation is the run's: one rule, stated in full, and a reason either way.
    assert document["recommendation"] == summary["recommendation"] and document["recommendation"]["reason"]
    printed = capsys.readouterr().out
    assert document["recommendation"]["rule"] in printed
    frontier = [p["setting"] for p in document["frontier"]]
    if document["recommendation"]["setting"] is None:
        assert frontier == [] and "no recommendation:" in printed
    else:
        assert document["recommendation"]["setting"] in frontier and "recommended:" in printed


def test_bad_config_is_named(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('strategies = ["summarize"]\nwindw = 3\n')
    with pytest.raises(ValueError, match="unknown settings 'windw' \\(did you mean 'window'\\?\\)"):
        load_config(path)
    path.write_text('[[strategy]]\nname = "summarize"\ntrigger = { fractoin = 0.5 }\n')
    with pytest.raises(ValueError, match="unknown trigger settings"):
        load_config(path)


def test_run_on_real_sessions_the_repository_does_not_contain(shared: Path, tmp_path: Path) -> None:
    from tests.conftest import DATASETS

    bundled_names = {p.name.removesuffix(".gz") for p in (DATASETS / "mini-swe-agent-pr816" / "sessions").iterdir()}
    others = sorted(p for p in (shared / "mini-swe-agent-pr816").glob("*.traj.json") if p.name not in bundled_names)[:6]
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    for path in others:
        (folder / path.name).write_bytes(path.read_bytes())
    out = tmp_path / "run"
    assert (
        main(["run", "--dataset", str(folder), "--strategy", "pi", "observation-masking", "--window", "32000", "--out", str(out)])
        == 0
    )
    summary = json.loads((out / "summary.json").read_text())
    assert summary["sessions"] == 6
    board = {row["setting"]: row for row in summary["leaderboard"]}
    assert board["observation-masking"]["removed_share_mean"] > 0


def test_default_run_directory_is_replaced_but_an_explicit_one_is_not(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    sessions = tmp_path / "sessions"  # four real sessions: what is tested is where the run writes
    sessions.mkdir()
    for source in sorted((DATASETS / "claude-code-log" / "sessions").iterdir())[:4]:
        (sessions / source.name).write_bytes(source.read_bytes())
    arguments = ["run", "--dataset", str(sessions), "--strategy", "truncate", "--window", "40000"]
    assert main(arguments) == 0
    assert main(arguments) == 0  # the README's main command can be run again
    assert len(read_done(tmp_path / "reports" / "run" / "done.jsonl").units) == 4
    explicit = [
        "run",
        "--dataset",
        str(sessions),
        "--strategy",
        "truncate",
        "--window",
        "40000",
        "--out",
        str(tmp_path / "mine"),
    ]
    assert main(explicit) == 0
    assert main(explicit) == 2
    assert "already holds a run" in capsys.readouterr().err


def test_a_run_stopped_by_a_damaged_file_leaves_no_row_parts_and_resume_finishes_it(tmp_path: Path, monkeypatch) -> None:
    # Worker processes write each session's rows as parts; none but the committed ones may be
    # left behind, and those stay for --resume.
    lines = gzip.decompress(
        bundled("claude-code-log", "-Users-dain-workspace-claude-code-log-sample__07f2e15c").read_bytes()
    ).splitlines(keepends=True)
    folder = tmp_path / "sessions"
    folder.mkdir()
    for name in ("a.jsonl", "b.jsonl", "c.jsonl", "d.jsonl"):
        (folder / name).write_bytes(b"".join(lines))
    (folder / "b.jsonl").write_bytes(b"".join(lines[:3] + [b'{"type": "assistant", "message": \n'] + lines[3:]))
    config = RunConfig(datasets=(str(folder),), strategies=(Setting("t", "truncate", trigger=Trigger(fraction=0.01)),))
    out = tmp_path / "run"
    with pytest.raises(ValueError, match="b.jsonl:4"):
        runs.run(config, out, workers=2)
    assert not out.exists()  # the pass over the files before the run found it: nothing written
    # A file damaged after that pass (or one it could not see so) stops the run where it is read.
    monkeypatch.setattr(run_checks, "prescan", lambda *args, **kwargs: ())
    with pytest.raises(ValueError, match="b.jsonl:4"):
        runs.run(config, out, workers=2)
    monkeypatch.undo()
    assert len(read_done(out / "done.jsonl").units) == 1  # a.jsonl, before the damaged file
    assert len(list((out / "rows" / "calls").iterdir())) == 1  # its part; those of files replayed after the error are gone
    (folder / "b.jsonl").write_bytes(b"".join(lines))
    left = out / "rows" / "calls" / "part-left-by-a-kill.parquet"
    left.write_bytes(b"PAR1")
    resumed = runs.run(config, out, resume=True, workers=2)
    assert resumed.resumed_units == 1 and not left.exists()
    assert len(list((out / "rows" / "calls").iterdir())) == 4  # one part per session, each committed
    whole = runs.run(config, tmp_path / "whole", workers=1)
    key = ["session", "setting", "call"]
    pd.testing.assert_frame_equal(
        resumed.calls.sort_values(key).reset_index(drop=True), whole.calls.sort_values(key).reset_index(drop=True)
    )
