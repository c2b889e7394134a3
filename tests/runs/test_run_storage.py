"""A run's rows as Parquet parts, and its results gathered a session at a time, on real sessions."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from compactlab.cli.main import main
from compactlab.contract import Trigger
from compactlab.replay.setting import Setting
from compactlab.results.metrics import calls_frame, compactions_frame, session_summary
from compactlab.runs import run_result, runs
from compactlab.runs.run_config import RunConfig
from compactlab.runs.run_files import DONE, read_done
from compactlab.runs.run_storage import export_jsonl, iter_rows, run_calls, run_compaction_rows

STRATEGIES = (
    Setting("trunc", "truncate", trigger=Trigger(fraction=0.5)),
    Setting("sum", "summarize", trigger=Trigger(fraction=0.5)),
)


def _run(tmp_path: Path):
    config = RunConfig(datasets=("claude-code-log",), strategies=STRATEGIES, window=40_000)
    return runs.run(config, tmp_path / "run", workers=2)


def test_one_setting_or_one_session_loads_alone_and_rows_read_back_as_replayed(tmp_path: Path) -> None:
    result = _run(tmp_path)
    out = result.out
    everything = run_calls(out)
    assert set(everything["setting"]) == {"trunc", "sum"} and len(everything) > 1000
    only = run_calls(out, settings=["sum"])
    pd.testing.assert_frame_equal(only.reset_index(drop=True), everything[everything["setting"] == "sum"].reset_index(drop=True))
    # A part holds its session's rows setting after setting, in the run's order, as one row group.
    part = out / read_done(out / DONE).part_names("calls")[0]
    settings = pq.read_table(part, columns=["setting"]).column("setting").to_pylist()
    assert settings == sorted(settings, key=["trunc", "sum"].index) and set(settings) == {"trunc", "sum"}
    assert pq.ParquetFile(part).metadata.num_row_groups == 1
    session = everything["session"].iloc[-1]
    one = run_calls(out, sessions=[session])
    assert set(one["session"]) == {session} and len(one) == (everything["session"] == session).sum()
    # Compaction rows keep their nested scores: they read back as the replay wrote them.
    rows = run_compaction_rows(out, settings=["sum"])
    assert rows and all(isinstance(r["preservation"], dict) and "k1" in r["preservation"] for r in rows)
    assert all(r["setting"] == "sum" for r in rows)


def test_results_gathered_per_session_equal_the_whole_runs_frames(tmp_path: Path) -> None:
    result = _run(tmp_path)
    calls = calls_frame(run_calls(result.out))
    whole = session_summary(calls, compactions_frame(run_compaction_rows(result.out)))
    streamed = result.sessions.drop(columns=["damaged", "incomplete"], errors="ignore")
    # pandas sums a group differently by the size of the frame: equal to the last bits of a float.
    pd.testing.assert_frame_equal(streamed[whole.columns], whole, rtol=1e-12)
    read_back = run_result.finish(result.out, result.read)
    pd.testing.assert_frame_equal(read_back.sessions, result.sessions)


def test_rows_export_as_json_lines(tmp_path: Path, capsys) -> None:
    result = _run(tmp_path)
    target = tmp_path / "compactions.jsonl"
    count = export_jsonl(result.out, "compactions", target)
    lines = target.read_text().splitlines()
    assert count == len(lines) == len(list(iter_rows(result.out, "compactions"))) > 0
    assert pd.read_json(target, lines=True)["setting"].isin({"trunc", "sum"}).all()
    assert main(["export-rows", str(result.out), "--kind", "calls", "--strategy", "sum"]) == 0
    exported = pd.read_json(result.out / "calls.jsonl", lines=True)
    assert set(exported["setting"]) == {"sum"} and len(exported) == len(run_calls(result.out, settings=["sum"]))
    assert f"{len(exported):,} calls rows" in capsys.readouterr().out
