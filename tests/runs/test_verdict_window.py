"""The verdict is for the window the user really has (issue 43): a run of the user's own sessions is at
each model's real window, a simulated window is a stress test named as one on every surface, and a
real-window verdict that rests on too few compactions comes with a second, labelled one."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from compactlab.cli.main import main
from compactlab.runs.next_command import CommandLine
from compactlab.runs.run_config import DEFAULT_WINDOW, RunConfig, load_config, window_for_data
from compactlab.runs.verdict_window import SCALED
from tests.conftest import DATASETS, bundled

PI = DATASETS / "pi-sessions" / "sessions"  # two real pi sessions: 5 compactions at claude-opus-4-5's 200,000


@pytest.fixture(scope="module")
def real_window_run(tmp_path_factory) -> tuple[Path, str]:
    """The two pi sessions given as a folder (the user's own data) with no --window."""
    out = tmp_path_factory.mktemp("real") / "run"
    import contextlib
    import io

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(["run", "--dataset", str(PI), "--strategy", "opencode", "pi", "summarize", "--out", str(out)])
    assert code == 0
    return out, printed.getvalue()


def test_the_users_own_sessions_are_replayed_at_their_real_windows(real_window_run) -> None:
    out, printed = real_window_run
    assert json.loads((out / "config.json").read_text())["window"] == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["verdict_window"]["simulated"] is False and summary["verdict_window"]["tokens"] is None
    assert summary["recommendation"]["window"] == "at each model's real window"
    # Every verdict line names its window: the terminal's, and the one read back by the API.
    assert "recommended at each model's real window: " in printed
    assert "window: the verdict is at each model's real window (200,000 for claude-opus-4-5)" in printed


def test_a_real_window_verdict_on_too_few_compactions_comes_with_a_labelled_stress_verdict(real_window_run) -> None:
    out, printed = real_window_run
    summary = json.loads((out / "summary.json").read_text())
    stress = summary["stress_verdict"]
    assert stress["window"] == DEFAULT_WINDOW and stress["out"] == f"stress-{DEFAULT_WINDOW}"
    assert stress["why"].startswith("2 of 2 sessions compact under any setting at their models' real windows")
    assert f"rests on {summary['recommendation']['compactions']} compaction" in stress["why"]
    # The stress run is a run directory of its own, at the simulated window, its verdict labelled so.
    second = json.loads((out / stress["out"] / "summary.json").read_text())
    assert second["verdict_window"]["simulated"] is True and second["verdict_window"]["tokens"] == DEFAULT_WINDOW
    assert stress["recommendation"]["window"] == f"at a simulated {DEFAULT_WINDOW:,}-token window (a stress test)"
    assert second["recommendation"]["compactions"] > summary["recommendation"]["compactions"]
    assert f"at a simulated {DEFAULT_WINDOW:,}-token window (a stress test, {out / stress['out']}/):" in printed
    # The report's first screen gives it too, under its label.
    page = (out / "report.html").read_text(encoding="utf-8")
    shown = page.split('id="stress-verdict">', 1)[1].split("</p>", 1)[0]
    assert "A second verdict, a stress test:" in shown and "2 of 2 sessions compact under any setting" in shown
    assert f"at a simulated {DEFAULT_WINDOW:,}-token window (a stress test): " in shown and f"stress-{DEFAULT_WINDOW}/" in shown


def test_the_bundled_datasets_alone_keep_a_simulated_stress_window_named_as_one(tmp_path: Path, capsys) -> None:
    assert window_for_data(()) == DEFAULT_WINDOW and window_for_data(("pi-sessions",)) == DEFAULT_WINDOW
    assert window_for_data((str(PI),)) == 0
    assert RunConfig().window is None and RunConfig().window_tokens == DEFAULT_WINDOW
    out = tmp_path / "run"
    assert main(["run", "--dataset", "pi-sessions", "--strategy", "summarize", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    assert summary["verdict_window"]["simulated"] is True and "stress_verdict" not in summary
    assert f"window: the verdict is at a simulated {DEFAULT_WINDOW:,}-token window (a stress test: every model" in printed


def test_a_configuration_without_a_window_takes_the_default_for_its_data(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text(f'datasets = ["{PI}"]\n')
    assert load_config(config).window is None and load_config(config).window_tokens == 0
    config.write_text('datasets = ["pi-sessions"]\n')
    assert load_config(config).window_tokens == DEFAULT_WINDOW


def test_a_trigger_in_tokens_rescaled_to_a_simulated_window_is_said(tmp_path: Path, capsys) -> None:
    session = bundled("claude-code-log", "-Users-dain-workspace-claude-code-log-sample__37f83ec9")
    out = tmp_path / "run"
    assert main(["run", "--dataset", str(session), "--strategy", "seed-001", "--window", "64000", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    [rule] = summary["windows"]["scaled_rules"]
    # seed-001 compacts at 200,000 tokens; at 64,000 for a 200,000-token model that is 64,000: its share, not its tokens.
    assert rule == "seed-001: trigger at 200,000 tokens → 64,000 (claude-sonnet-4-20250514)"
    assert f"{SCALED}:\n  {rule}\n" in capsys.readouterr().out
    # At the real window nothing is rescaled.
    real = tmp_path / "real"
    assert main(["run", "--dataset", str(session), "--strategy", "seed-001", "--out", str(real), "--no-estimation"]) == 0
    assert json.loads((real / "summary.json").read_text())["windows"]["scaled_rules"] == []


def test_a_next_command_keeps_the_users_arguments_and_changes_one() -> None:
    command = CommandLine.of(
        "run",
        {"--dataset": ["my sessions/a b"], "--window": [0], "--config": ["c.toml"], "--lenient": True, "--limit": None},
        out="out/mine",
    )
    changed = command.with_flag("--window", 64000).into("window-64000")
    assert shlex.split(changed.text) == [
        "compactlab",
        "run",
        "--config",
        "c.toml",
        "--dataset",
        "my sessions/a b",
        "--window",
        "64000",
        "--lenient",
        "--out",
        "out/mine-window-64000",
    ]
    swept = command.with_flag("--strategy", "pi").as_command("sweep").with_flag("--thresholds", 0.3)
    assert "--strategy" not in swept.text and swept.text.startswith("compactlab sweep --config c.toml --dataset")
