"""Quick and controlled runs from the command line, and inputs that make no sense (issue 33, points
6 and 7), on real sessions: --limit, --workers, --max-in-flight, --max-cost, a budget stop worded as
one, a price key that prices nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compactlab.cli.exit_codes import BUDGET as BUDGET_EXIT
from compactlab.cli.main import main
from tests.conftest import bundled
from tests.fake_behaviours import Behaviour
from tests.fake_providers import FakeProvider
from tests.runs.test_concurrent_llm_replays import _config, key, server  # noqa: F401 - the fake provider's fixtures

ASTROID = bundled("mini-swe-agent-pr816", "deepseek_chat_dev_pylint-dev__astroid-1333_")


def test_limit_and_workers_replay_the_first_sessions(tmp_path: Path, capsys) -> None:
    out = tmp_path / "run"
    args = ["run", "--dataset", "mini-swe-agent-pr816", "--strategy", "truncate", "--window", "32000"]
    assert main([*args, "--limit", "3", "--workers", "1", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["sessions"] == 3
    assert json.loads((out / "config.json").read_text())["limit"] == 3
    # --resume must name the same limit: the run would otherwise mix two selections of sessions.
    assert main([*args, "--limit", "4", "--out", str(out), "--resume"]) == 2
    assert "different configuration" in capsys.readouterr().err
    assert main([*args, "--limit", "0", "--out", str(tmp_path / "zero")]) == 2
    assert "--limit: 0 out of range" in capsys.readouterr().err


def test_max_in_flight_without_llm_calls_is_refused(tmp_path: Path, capsys) -> None:
    args = ["run", "--dataset", str(ASTROID), "--strategy", "truncate", "--max-in-flight", "2", "--out", str(tmp_path / "r")]
    assert main(args) == 2
    assert "--max-in-flight: the run sends no LLM calls" in capsys.readouterr().err


def test_max_cost_stops_the_run_as_a_budget_stop_not_a_failed_call(
    server: FakeProvider,  # noqa: F811
    tmp_path: Path,
    capsys,
) -> None:
    server.otherwise = Behaviour(
        "summarize", delay=0.02, usage={"prompt_tokens": 1000, "completion_tokens": 1000, "total_tokens": 2000}
    )
    prices = '[prices."gpt-4o-mini"]\ninput = 0.0\noutput = 1.0\n'
    config = _config(tmp_path, server, "budget", top=prices, judge=False)
    out = tmp_path / "run"
    args = ["run", "--config", str(config), "--out", str(out), "--max-cost", "0.02", "--max-in-flight", "2"]
    assert main(args) == BUDGET_EXIT
    err = capsys.readouterr().err
    assert "max_cost_usd = 0.02 USD is reached" in err and "so it was not sent (no call failed)" in err
    # Before: "openai call to model 'gpt-4o-mini' failed (no HTTP status): the run's cost budget ..."
    assert "failed (no HTTP status)" not in err and "call to model" not in err
    assert json.loads((out / "config.json").read_text())["summarizer"]["max_in_flight"] == 2
    assert main(["run", "--config", str(config), "--out", str(tmp_path / "bad"), "--max-cost", "0"]) == 2
    assert "--max-cost: 0 out of range" in capsys.readouterr().err


@pytest.mark.parametrize(("key_name", "hint"), [("deepseek-chatt", "did you mean 'deepseek-chat'?"), ("no-such-model", "")])
def test_a_price_key_that_prices_no_model_is_a_warning(tmp_path: Path, capsys, key_name: str, hint: str) -> None:
    config = tmp_path / "run.toml"
    config.write_text(
        f'datasets = ["{ASTROID}"]\nwindow = 20000\nstrategies = ["truncate"]\n[prices."{key_name}"]\ninput = 1.0\noutput = 2.0\n'
    )
    assert main(["run", "--config", str(config), "--out", str(tmp_path / "run")]) == 0
    err = capsys.readouterr().err
    assert f'[prices."{key_name}"] matches no model of this run' in err and "models seen: deepseek-chat" in err
    assert hint in err
    if not hint:
        assert "did you mean" not in err
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert len(summary["unmatched_price_keys"]) == 1
