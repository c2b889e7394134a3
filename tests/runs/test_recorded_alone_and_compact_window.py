"""Issue 14 §5 on real sessions: `run --strategy recorded` alone, the recorded summary's preamble,
split-turn summaries with nothing before the turn, and `compact` at the window `run` replays at."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from compactlab.cli.main import main
from compactlab.contract import CompactionRequest, Context
from compactlab.runs.run_storage import run_compaction_rows
from compactlab.sessions.importers import load_file
from compactlab.sessions.messages import CONTINUATION, is_summary
from compactlab.strategies.registry import get_strategy
from compactlab.tokens.metering import Meter
from tests.conftest import bundled

COMPACTED_FILE = bundled("m-claude", "3af9b1a7")  # a real Claude Code compaction (two damaged lines)
MANUAL_FILE = bundled("m-claude", "97b0ffde")  # a real manual compaction, undamaged
LONG_FILE = bundled("claude-code-log", "-src-deep-manifest__a7da6a22")  # peaks at 134k prompt tokens


def test_run_of_recorded_alone_runs_and_reports(tmp_path: Path, capsys) -> None:
    out = tmp_path / "run"
    code = main(
        ["run", "--dataset", str(COMPACTED_FILE), str(MANUAL_FILE), "--strategy", "recorded", "--lenient", "--out", str(out)]
    )
    printed = capsys.readouterr().out
    assert code == 0
    assert "production compactions (strategy recorded): 2 of 2 sessions hold a real compaction" in printed
    assert "fidelity 3af9b1a7-6512-4883-ad18-320658ced099" in printed
    assert "nothing to rank" in printed
    summary = json.loads((out / "summary.json").read_text())
    assert summary["leaderboard"] == [] and summary["strategies"] == ["recorded"]
    assert {row["session"][:8] for row in summary["recorded"]} == {"3af9b1a7", "97b0ffde"}
    # The real cost of each production compaction beside the replay's model of it, as summary.json gives it.
    costs = summary["real_costs"]
    assert {row["session"][:8] for row in costs["rows"]} == {"3af9b1a7", "97b0ffde"}
    # Both are Claude models' (the manual one, no call after it, by the call before): one family, one compared.
    assert list(costs["families"]) == ["Anthropic"] and costs["families"]["Anthropic"]["compactions"] == 2
    assert costs["families"]["Anthropic"]["compared"] == 1  # the manual one has no call after it: nothing to compare
    assert "real cost of the production compactions" in printed
    for family, found in costs["families"].items():
        assert f"    {family}: {found['line']}" in printed


def test_the_recorded_summary_carries_one_continuation_preamble() -> None:
    [session] = load_file(COMPACTED_FILE, lenient=True)
    marker = session.compactions[0]
    assert marker.summary.startswith(CONTINUATION)  # Claude Code writes its own
    meter = Meter(session, "chars/4")
    request = CompactionRequest(reason="threshold", window=200_000, target_tokens=100_000, count_tokens=meter.count)
    strategy = get_strategy("recorded", summary=marker.summary)
    result = strategy.compact(Context(messages=session.messages[: marker.at_message]), request)
    [summary] = [m for m in result.context.messages if is_summary(m)]
    assert summary.text().count(CONTINUATION) == 1
    assert summary.text() == marker.summary


def test_compact_shows_the_compaction_run_replays_at_the_same_window(tmp_path: Path, capsys) -> None:
    out = tmp_path / "run"
    arguments = ["--strategy", "summarize", "--window", "64000"]
    assert main(["run", "--dataset", str(LONG_FILE), *arguments, "--out", str(out)]) == 0
    capsys.readouterr()
    first = pd.DataFrame(run_compaction_rows(out)).sort_values("call").iloc[0]
    assert main(["compact", str(LONG_FILE), *arguments, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["window"] == 64_000
    assert shown["call"] == first["call"]
    assert (shown["event"]["messages_before"], shown["event"]["messages_after"]) == (
        first["messages_before"],
        first["messages_after"],
    )
    # At the model's real window (0) the trigger fires later or not at all; for a file of the user's own that is
    # the default of both `compact` and `run`.
    assert main(["compact", str(LONG_FILE), "--strategy", "summarize", "--window", "0", "--json"]) == 0
    real = json.loads(capsys.readouterr().out)
    assert real["window"] == 200_000 and real["call"] > shown["call"]
    assert main(["compact", str(LONG_FILE), "--strategy", "summarize", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["window"] == 200_000
