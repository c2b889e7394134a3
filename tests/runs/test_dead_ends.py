"""Every dead end names its cause and the command to try next, built from the user's own arguments, and
that command runs (issue 43): no recommendation, nothing compacted, a pick at the grid's edge. The sweep
always writes what it found: recommended.toml or no-recommendation.txt."""

from __future__ import annotations

import html
import json
import shlex
from pathlib import Path

from compactlab.cli.main import main
from tests.conftest import DATASETS, bundled

PI = DATASETS / "pi-sessions" / "sessions"
# A real Claude Code session that compacts at a simulated 64,000-token window, never near its real 200,000.
SHORT = bundled("claude-code-log", "-Users-dain-workspace-claude-code-log-sample__37f83ec9")


def _run(command: str) -> int:
    words = shlex.split(command)
    assert words[0] == "compactlab"
    return main(words[1:])


def test_nothing_compacted_at_the_real_window_names_a_simulated_one_and_that_command_runs(tmp_path: Path, capsys) -> None:
    out = tmp_path / "short"
    assert (
        main(
            [
                "sweep",
                "--dataset",
                str(SHORT),
                "--strategy",
                "summarize",
                "--thresholds",
                "0.9",
                "--keep",
                "8000",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    [step, lower] = summary["next_steps"]
    assert step["cause"].startswith("nothing compacted: no trigger fired at the models' real windows in any session")
    assert step["command"] == (
        f"compactlab sweep --dataset {SHORT} --window 64000 --strategy summarize --thresholds 0.9 --keep 8000 --out {out}-window-64000"
    )
    assert "--thresholds 0.3 0.4 0.5" in lower["command"]
    assert f"next: {step['cause']}; try: {step['command']}" in printed
    # "Nothing compacted" still picks a setting (it removes 0%): recommended.toml, never both files.
    assert (out / "recommended.toml").exists() and not (out / "no-recommendation.txt").exists()
    assert _run(step["command"]) == 0
    then = json.loads((Path(f"{out}-window-64000") / "summary.json").read_text())
    assert then["verdict_window"]["tokens"] == 64000 and then["recommendation"]["compactions"] > 0


def test_no_recommendation_writes_its_reasons_and_a_next_command_that_runs(tmp_path: Path, capsys) -> None:
    out = tmp_path / "over"
    # prune and evict cannot keep the two pi sessions under their real window at a late trigger.
    assert main(["sweep", "--dataset", str(PI), "--strategy", "prune", "evict", "--thresholds", "0.9", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert not (out / "recommended.toml").exists()
    text = (out / "no-recommendation.txt").read_text()
    assert text.startswith("no recommendation at each model's real window: no setting meets the rule")
    assert "✗ prune@0.9: " in text and "Next:" in text
    summary = json.loads((out / "summary.json").read_text())
    [step] = summary["next_steps"]
    assert "let calls exceed the models' real windows" in step["cause"] and step["command"] in text
    assert f"no recommendation: the reasons and the next command are in {out / 'no-recommendation.txt'}" in printed
    page = (out / "report.html").read_text(encoding="utf-8")
    assert 'id="next-steps"' in page and html.escape(step["command"], quote=False) in page
    assert _run(step["command"]) == 0
    assert Path(f"{out}-thresholds-0.3-0.4-0.5", "summary.json").exists()


def test_the_next_grid_keeps_the_dataset_the_window_and_the_configuration(tmp_path: Path, capsys) -> None:
    config = tmp_path / "c.toml"
    config.write_text("lenient = true\n")
    session = bundled("claude-code-log", "-Users-dain-workspace-claude-code-log-sample__37f83ec9")
    out = tmp_path / "edge"
    arguments = ["sweep", "--config", str(config), "--dataset", str(session), "--window", "48000"]
    assert main([*arguments, "--strategy", "summarize", "--thresholds", "0.6", "0.7", "--keep", "8000", "--out", str(out)]) == 0
    warnings = json.loads((out / "sweep.json").read_text())["warnings"]
    [edge] = [w for w in warnings if "Next grid: " in w]
    command = edge.split("Next grid: ", 1)[1]
    assert command.startswith(f"compactlab sweep --config {config} --dataset {session} --window 48000 --strategy summarize")
    assert command.endswith(f"--out {out}-next-grid")
    capsys.readouterr()
    assert _run(command) == 0
