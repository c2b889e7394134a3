"""The presets against the real engines: where each preset's trigger fires beside where the real
agent compacted, on the bundled and shared real sessions; in the CLI, summary.json and the report."""

from __future__ import annotations

import json
from pathlib import Path

from compactlab.cli.main import main
from compactlab.contract import Trigger
from compactlab.replay.setting import Setting
from compactlab.results.leaderboard import summary_document
from compactlab.results.real_engines import agreement, engine_rows
from compactlab.runs import run_result, runs
from compactlab.runs.run_config import RunConfig
from compactlab.sessions.importers import load_file
from compactlab.sessions.loading import load_inputs
from compactlab.strategies.registry import get_strategy
from tests.conftest import DATASETS, bundled

AUTO = load_file(bundled("m-claude", "3af9b1a7"), lenient=True)[0]
MANUAL = load_file(bundled("m-claude", "97b0ffde"), lenient=True)[0]


def test_a_reserve_per_model() -> None:
    trigger = get_strategy("claude-code@2026-06-07").trigger
    assert trigger.for_model("claude-opus-4-5-20251101").fires_from(200_000) == 200_000 - 77_000 + 1
    assert trigger.for_model("claude-sonnet-4-5-20250929").fires_from(200_000) == 200_000 - 45_000 + 1
    assert Trigger().for_model("any") == Trigger()


def test_claude_code_fires_where_the_real_auto_compaction_did() -> None:
    [row] = engine_rows(AUTO)
    assert row.trigger == "auto" and row.real_tokens_before == 155_554
    assert row.calls_apart == 0 and row.agrees
    # The size the trigger saw at the real compaction is Claude Code's own preTokens: the last prompt, its
    # output and the messages since.
    assert row.peak_tokens == 155_554
    assert row.real_tokens_after == 32_473 and row.preset_tokens_after is not None
    [manual] = engine_rows(MANUAL)
    assert manual.trigger == "manual" and manual.preset_call is None  # 31k of 200k: no trigger would fire
    assert agreement([row, manual]) == {
        "claude-code": {"auto": 1, "auto_agree": 1, "unknown": 0, "unknown_agree": 0, "manual": 1, "copies": 0, "repeats": 0}
    }


def test_pi_fires_at_its_two_automatic_looking_compactions_only() -> None:
    rows = [
        row for path in sorted((DATASETS / "pi-sessions" / "sessions").glob("*.gz")) for row in engine_rows(load_file(path)[0])
    ]
    assert [(r.real_tokens_before, r.calls_apart) for r in rows] == [
        (184_525, -2),  # over window − 16,384: pi's own trigger, at the end of the turn before
        (131_140, None),  # no call after it and far below: a /compact
        (175_004, None),  # below pi's threshold: the user's /compact
        (185_014, -1),
    ]
    assert {r.trigger for r in rows} == {"unknown"} and agreement(rows)["pi"]["unknown_agree"] == 2


def test_the_preset_at_the_real_compactions_is_measured_against_the_next_prompt() -> None:
    config = Setting("pi-at-real", "pi", at_real_compactions=True)
    from compactlab.replay.replay import replay

    [session] = load_file(bundled("pi-sessions", "pi-mono-before-compaction"))
    rows = replay(session, config).compactions
    assert [r.message_index for r in rows] == [m.at_message for m in session.compactions]
    assert all(r.fidelity_recorded is not None and r.fidelity_predicted is not None for r in rows)


def test_every_shared_auto_compaction_agrees_with_the_claude_code_preset(shared: Path) -> None:
    loaded = load_inputs([str(shared / "pai-claude"), str(shared / "m-claude")], lenient=True)
    rows = [row for t in loaded.sessions for row in engine_rows(t)]
    found = agreement(rows)["claude-code"]
    assert found["auto"] == 7 and found["auto_agree"] == 7 and found["manual"] == 3


def test_the_cli_and_a_run_show_it(tmp_path: Path, capsys) -> None:
    assert main(["engines", "pi-sessions", "--json"]) == 0
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(printed) == 4 and {p["preset"] for p in printed} == {"pi"}
    config = RunConfig(datasets=("pi-sessions",), strategies=(Setting("truncate", "truncate"),))
    summary = summary_document(runs.run(config, tmp_path / "run", workers=1), resamples=100)
    assert len(summary["presets_vs_engines"]["rows"]) == 4
    assert "fires within ±2 calls of 2 of 4" in summary["presets_vs_engines"]["agreement"]["pi"]["line"]


def test_a_run_finds_in_its_workers_what_reading_the_files_again_finds(tmp_path: Path) -> None:
    # The presets against the real engines are made where each session is replayed (two worker
    # processes here): the same document as the definition, the files read again by the run's process.
    config = RunConfig(datasets=("m-claude", "pi-sessions"), strategies=(Setting("truncate", "truncate"),))
    result = runs.run(config, tmp_path / "run", workers=2)
    again = run_result.real_engines(result.read)
    assert len(again["rows"]) >= 6 and result.engines == again
