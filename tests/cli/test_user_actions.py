"""What a user acts on (issue 20): the sweep's pasteable configuration, the config scaffold and its
schema, output for scripts, costs that say when they are missing, a report that says when nothing
compacted. On the bundled real sessions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from itertools import combinations
from pathlib import Path

import pytest

from compactlab.cli.main import build_parser, main
from compactlab.gate.suite import load_suite
from compactlab.llm.prices import price_for
from compactlab.results.cost_coverage import format_cost_coverage
from compactlab.runs.config_schema import KEYS, schema_markdown
from compactlab.runs.run_config import load_config
from tests.conftest import REPO, SharedRun, bundled

SMALL = [
    str(bundled("claude-code-log", "-Users-dain-workspace-claude-code-log-sample__37f83ec9")),
    str(bundled("m-claude", "97b0ffde")),
]
SAME = (
    "removed_share_mean",
    "preservation_or_untouched_mean",
    "preservation_k1_mean",
    "compactions_mean",
    "over_window_calls_total",
    "total_cost_mean",
    "cost_change_mean",
)


# --- 1. the sweep ------------------------------------------------------------------------------------


def test_the_sweep_s_printed_config_replays_to_the_same_numbers(tmp_path: Path, capsys) -> None:
    assert (
        main(
            [
                "sweep",
                "--dataset",
                *SMALL,
                "--strategy",
                "summarize",
                "--thresholds",
                "0.7",
                "0.9",
                "--keep",
                "8000",
                "16000",
                "--window",
                "64000",
                "--out",
                str(tmp_path / "sweep"),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    sweep = json.loads((tmp_path / "sweep" / "sweep.json").read_text())
    picked = sweep["recommendation"]["setting"]
    assert picked, sweep["recommendation"]["reason"]
    # The block is printed, pasted into a file as a user would, and replayed by `run`.
    block = (
        printed[printed.index("datasets = ") :].split("\n\n")[0]
        + "\n\n"
        + printed[printed.index("[[strategy]]") :].split("\n\n")[0]
    )
    assert f'label = "{picked}"' in block and (tmp_path / "sweep" / "report.html").exists()
    config = tmp_path / "pasted.toml"
    config.write_text(block + "\n")
    assert main(["run", "--config", str(config), "--out", str(tmp_path / "rerun"), "--json"]) == 0
    rerun = json.loads(capsys.readouterr().out)
    [row] = rerun["leaderboard"]
    swept = next(p for p in sweep["points"] if p["setting"] == picked)
    for column in SAME:
        # Exactly the same replay; dollar figures are sums over sessions, whose float order may differ.
        assert row[column] == pytest.approx(swept[column], rel=1e-12, abs=1e-15), column
    # The pick is at an edge of this two-value grid: the warning names it and gives the next grid.
    assert (
        sweep["warnings"]
        # the next grid keeps the user's datasets and window
        and f"compactlab sweep --dataset {' '.join(SMALL)} --window 64000 --strategy summarize" in sweep["warnings"][0]
        and "warning: the pick is at the edge" in printed
    )


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--thresholds", "80"], "--thresholds: 80 out of range: a threshold is a fraction of the window in (0, 1]"),
        (["--thresholds", "0"], "--thresholds: 0 out of range"),
        (["--keep", "0"], "--keep: 0 out of range: a keep budget is a number of tokens > 0"),
        (["--strategy", "summarize", "prune", "--keep", "8000"], "--keep: prune has no setting 'keep_recent_tokens'"),
        (["--min-preservation", "90"], "--min-preservation: 90 out of range"),
    ],
)
def test_sweep_ranges_and_settings_are_checked_before_anything_runs(arguments, message, tmp_path: Path, capsys) -> None:
    assert main(["sweep", "--dataset", SMALL[0], *arguments, "--out", str(tmp_path / "s")]) == 2
    assert message in capsys.readouterr().err and not (tmp_path / "s").exists()


def test_a_setting_the_strategy_does_not_have_is_an_error_with_a_suggestion(tmp_path: Path, capsys) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[[strategy]]\nname = "summarize"\nsettings = { keep_recent_token = 100 }\n')
    assert main(["run", "--config", str(config), "--dataset", SMALL[0], "--out", str(tmp_path / "r")]) == 2
    assert "did you mean 'keep_recent_tokens'" in capsys.readouterr().err


@pytest.mark.slow  # the crowded sweep of tests/conftest.py (codex_sweep): minutes
def test_pareto_labels_never_overlap_on_a_crowded_sweep(codex_sweep: SharedRun) -> None:
    from compactlab.report.run_charts import colours_for, pareto_chart
    from compactlab.report.run_data import figures_and_recommendation, load_run
    from compactlab.runs.sweep import DEFAULT_STRATEGIES, DEFAULT_THRESHOLDS, grid

    run = load_run(codex_sweep.folder)
    figures, recommendation = figures_and_recommendation(run)
    boxes: list = []
    svg, key = pareto_chart(figures, recommendation, colours_for(run.labels), placed=boxes)
    # The default grid: every default strategy at every default threshold, keep budgets where a strategy has one.
    assert len(figures) == len(grid(DEFAULT_STRATEGIES, DEFAULT_THRESHOLDS)) >= 64 and svg.startswith("<svg") and boxes
    for a, b in combinations(boxes, 2):
        assert min(a.x1, b.x1) <= max(a.x0, b.x0) or min(a.y1, b.y1) <= max(a.y0, b.y0), (a, b)


# --- 2. the configuration ----------------------------------------------------------------------------


def test_init_writes_a_config_and_a_suite_that_load_and_run(tmp_path: Path, capsys) -> None:
    assert main(["init", str(tmp_path)]) == 0
    config = load_config(tmp_path / "compactlab.toml")
    assert [s.label for s in config.strategies] == ["summarize-70", "codex"] and config.datasets == ("mini-swe-agent-v1",)
    text = (tmp_path / "compactlab.toml").read_text()
    for table in ("[[strategy]]", "# [context_windows]", '# [prices."my-model"]', "# [summarizer]", "# base_url = "):
        assert table in text
    suite = load_suite(tmp_path / "ci" / "compactlab-suite.toml")
    assert [m.name for m in suite.metrics] == ["removed_share", "preservation_or_untouched", "summary_recall_k5"]
    assert suite.config.summarizer["provider"] == "openai" and "base_url" not in suite.config.summarizer  # from the environment
    assert suite.config.summarizer["cache_dir"] == str(tmp_path / "ci" / "compactlab-suite-answers")
    assert main(["init", str(tmp_path)]) == 2 and "pass --force" in capsys.readouterr().err
    assert main(["run", "--config", str(tmp_path / "compactlab.toml"), "--out", str(tmp_path / "run"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["recommendation"]["setting"]


def test_the_configuration_page_is_the_schema_and_defaults_agree_with_the_code() -> None:
    from compactlab.llm import DEFAULT_CACHE_DIR
    from compactlab.llm.clients import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT
    from compactlab.runs.run_config import RunConfig
    from compactlab.scoring.next_action import DEFAULT_MAX_OUTPUT_TOKENS

    assert schema_markdown() in (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    default = {(k.table, k.name): k.default for k in KEYS}
    assert RunConfig().window is None and RunConfig(datasets=("/",)).window_tokens == 0  # the user's own data: real windows
    assert default[("", "window")].endswith(f"{RunConfig().window_tokens} for the bundled datasets alone")
    assert default[("", "estimator")] == f'"{RunConfig().estimator}"'
    assert default[("summarizer", "cache_dir")] == f'"{DEFAULT_CACHE_DIR.as_posix()}"'
    assert (
        default[("summarizer", "max_retries")] == str(DEFAULT_MAX_RETRIES)
        and default[("summarizer", "timeout")] == f"{DEFAULT_TIMEOUT:g}"
    )
    assert default[("judge", "max_output_tokens")] == str(DEFAULT_MAX_OUTPUT_TOKENS)


@pytest.mark.parametrize(
    "text, message",
    [
        ('window = "big"\n', "`window` must be an integer"),
        ('datasets = "m-claude"\n', "`datasets` must be an array of strings"),
        (
            '[summarizer]\nprovider = "openai"\nmodel = "m"\nbase_ulr = "x"\n',
            "unknown settings 'base_ulr' (did you mean 'base_url'?)",
        ),
        (
            '[[strategy]]\nname = "summarize"\ntrigger = { fraction = 80 }\n',
            "trigger `fraction` must be a fraction of the window in (0, 1]",
        ),
        ('[strategy]\nname = "summarize"\n', "[[strategy]] tables (double brackets)"),
    ],
)
def test_loading_checks_the_schema_and_names_the_file(text: str, message: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ValueError) as error:
        load_config(path)
    assert message in str(error.value) and str(path) in str(error.value)


# --- 3. output for scripts ---------------------------------------------------------------------------


def test_version_is_pyproject_s(capsys) -> None:
    expected = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"compactlab {expected}"


def test_every_command_s_help_states_its_exit_codes() -> None:
    parser = build_parser()
    commands = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction").choices
    assert {"init", "run", "sweep", "check", "diff", "strategies"} <= set(commands)
    for name, command in commands.items():
        assert "exit codes:" in command.format_help(), name
    assert "1 a regression" in commands["check"].format_help()


def test_a_closed_pipe_ends_quietly() -> None:
    read, write = os.pipe()
    os.close(read)  # the reader is gone before anything is written, as after `| head` has its lines
    done = subprocess.run(
        [sys.executable, "-m", "compactlab.cli.main", "strategies"], stdout=write, stderr=subprocess.PIPE, cwd=REPO, timeout=120
    )
    os.close(write)
    assert done.returncode == 141 and b"Traceback" not in done.stderr and b"BrokenPipeError" not in done.stderr


# --- 4. costs ----------------------------------------------------------------------------------------


def test_the_models_of_the_data_have_prices_or_are_named_unpriced(tmp_path: Path, capsys) -> None:
    for model in (
        "claude-opus-4-7",
        "claude-opus-4-5-20251101",
        "claude-sonnet-4-5-20250929",
        "claude-haiku-4-5-20251001",
        "gpt-5-codex",
        "gpt-5.2-codex",
        "gpt-5-mini-2025-08-07",
        "gpt-5-nano-2025-08-07",
        "deepseek-chat",
        "gemini-2.5-pro",
        "google/gemini-3-pro-preview",
        "gemini-3-flash-preview",
    ):
        assert price_for(model) is not None, model
    assert price_for("gpt-5.1-codex-max") is None  # no price could be confirmed: unpriced, and said so
    assert main(["run", "--dataset", "codex-rollouts", "--strategy", "codex", "--out", str(tmp_path / "run"), "--json"]) == 0
    coverage = json.loads(capsys.readouterr().out)["cost_coverage"]
    assert coverage == {"sessions": 5, "priced": 3, "unpriced_models": {"(no model recorded)": 1, "gpt-5.1-codex-max": 1}}
    assert format_cost_coverage(coverage).startswith(
        "cost over 3 of 5 sessions; unpriced: (no model recorded) (1 session), gpt-5.1-codex-max"
    )


def test_a_gate_on_a_cost_that_cannot_be_measured_is_a_configuration_error(tmp_path: Path, capsys) -> None:
    unpriced = bundled("codex-rollouts", "Prometheus-AGS")
    suite = tmp_path / "suite.toml"
    suite.write_text(
        f'datasets = ["{unpriced}"]\nwindow = 64000\nstrategies = ["codex"]\n'
        '[metrics.total_cost]\ndirection = "lower"\ntolerance = 0.01\n'
    )
    assert main(["baseline", "--suite", str(suite), "--baseline", str(tmp_path / "b.json")]) == 2
    error = capsys.readouterr().err
    assert "cannot be measured" in error and "`codex` · cost per session ($) (`total_cost`)" in error and "[prices." in error
    assert not (tmp_path / "b.json").exists()


def test_check_json_gives_the_verdict(tmp_path: Path, capsys) -> None:
    suite = tmp_path / "suite.toml"
    suite.write_text(
        f'datasets = ["{SMALL[0]}"]\nwindow = 32000\nstrategies = ["summarize"]\n'
        '[metrics.removed_share]\ndirection = "higher"\ntolerance = 0.01\n'
    )
    assert main(["baseline", "--suite", str(suite), "--baseline", str(tmp_path / "b.json")]) == 0
    capsys.readouterr()
    assert main(["check", "--suite", str(suite), "--baseline", str(tmp_path / "b.json"), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["verdict"] == "pass" and document["regressions"] == []
    assert [(c["label"], c["metric"], c["verdict"]) for c in document["comparisons"]] == [
        ("summarize", "removed_share", "unchanged")
    ]


# --- 5. the report -----------------------------------------------------------------------------------


def test_a_run_where_nothing_compacted_says_so_and_what_to_try(tmp_path: Path, capsys) -> None:
    assert (
        main(["run", "--dataset", SMALL[1], "--strategy", "codex", "summarize", "--window", "0", "--out", str(tmp_path / "run")])
        == 0
    )
    printed = capsys.readouterr().out
    # At the real window nothing compacts: the run says so, and gives the labelled verdict at a simulated window.
    assert "nothing compacted" in printed and "1× smaller" not in printed
    assert "sessions compact under any setting at their models' real windows" in printed
    assert "at a simulated 64,000-token window (a stress test, " in printed
    page = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    assert "Nothing compacted at the" in page and "Use <strong>" not in page


def test_writing_the_report_shows_its_progress(tmp_path: Path, capsys) -> None:
    from compactlab.report.run_report import write_run_report

    assert main(["run", "--dataset", SMALL[0], "--strategy", "summarize", "--out", str(tmp_path / "run")]) == 0
    capsys.readouterr()
    write_run_report(tmp_path / "run", tmp_path / "again.html", progress=True)
    shown = capsys.readouterr().err
    assert "report" in shown and "session by session" in shown and "run metadata" in shown
    script = (REPO / "bench" / "report" / "templates" / "sort.js").read_text()
    assert "table-filter" in script and "table-filter" not in (tmp_path / "again.html").read_text().split("<script")[0]
