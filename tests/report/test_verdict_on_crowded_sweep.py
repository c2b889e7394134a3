"""The verdict where a user reads it (issue 33, points 3, 4 and 8), on a real crowded sweep: the
default grid on the bundled Codex rollouts (72 settings, a third of them identical by construction)."""

from __future__ import annotations

import contextlib
import html
import io
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from compactlab.cli import cli_runs
from compactlab.cli.main import main
from compactlab.report.run_charts import colours_for, pareto_chart
from compactlab.report.run_data import figures_and_recommendation, load_run
from compactlab.results.leaderboard import format_leaderboard
from compactlab.results.recommendation import Recommendation
from compactlab.results.same_by_construction import SameGroup
from compactlab.runs.sweep import DEFAULT_KEEP, DEFAULT_STRATEGIES, DEFAULT_THRESHOLDS, grid
from tests.conftest import SharedRun
from tests.scripts.verdict_figures import LAPTOP_PX, leaderboard_width_px

# The default grid swept over the long Codex rollouts: minutes.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def crowded(codex_sweep: SharedRun) -> Path:
    return codex_sweep.folder


def _text(page: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


def test_identical_settings_are_one_note_not_one_per_pair(crowded: Path) -> None:
    page = (crowded / "report.html").read_text(encoding="utf-8")
    groups = json.loads((crowded / "summary.json").read_text())["same_by_construction"]
    pairs = len(DEFAULT_THRESHOLDS) * len(DEFAULT_KEEP)  # summarize and iterative-merge at each threshold and budget
    assert len(groups) == pairs == 24
    # Before: 24 paragraphs "One result under 2 names: ..."; now one note naming how many rows.
    assert page.count('class="note same-by-construction"') == 1 and "One result under" not in page
    assert f"{pairs} rows each name settings that are one result under several names" in _text(page)


def test_the_pareto_plot_names_only_the_frontier_and_the_pick(crowded: Path) -> None:
    run = load_run(crowded)
    figures, recommendation = figures_and_recommendation(run)
    boxes: list = []
    svg, key = pareto_chart(figures, recommendation, colours_for(run.labels), placed=boxes)
    named = figures[figures["setting"].isin(recommendation.frontier) | (figures["setting"] == recommendation.setting)]
    distinct = named[["removed_share_mean", "preservation_or_untouched_mean"]].round(12).drop_duplicates()
    # Before issue 33: every setting's marker carried a name or a number beside it (29 labels, 16 of them numbers,
    # on the 64-point grid). Names are for the frontier and the pick only; since issue 43 every marker carries
    # its number inside it and the key beside the plot names them all.
    assert len(figures) == len(grid(DEFAULT_STRATEGIES, DEFAULT_THRESHOLDS)) and 0 < len(boxes) <= len(distinct) < 10
    assert [number for number, _ in key] == [str(n) for n in range(1, len(key) + 1)]
    assert sorted(name for _, names in key for name in names) == sorted(figures["setting"])
    assert recommendation.setting in key[0][1] and svg.startswith("<svg") and svg.count("<title>") == len(key)


def test_one_next_grid_that_does_not_send_the_user_back(crowded: Path) -> None:
    sweep = json.loads((crowded / "sweep.json").read_text())
    picked = sweep["recommendation"]["setting"]
    assert len(sweep["warnings"]) <= 1
    if sweep["warnings"]:
        command = sweep["warnings"][0].split("Next grid: ")[1]
        thresholds = [float(t) for t in re.search(r"--thresholds ([\d. ]+)", command).group(1).split()]
        swept = sorted({p["threshold"] for p in sweep["points"]})
        pick = next(p for p in sweep["points"] if p["setting"] == picked)["threshold"]
        # The pick is inside the next grid, not at its other edge: the next sweep cannot send the user back.
        if pick in (swept[0], swept[-1]):
            assert min(thresholds) < pick < max(thresholds) or pick == 1.0


def test_the_headline_says_what_the_strategy_is_what_the_cost_counts_and_the_windows(crowded: Path) -> None:
    text = _text((crowded / "report.html").read_text(encoding="utf-8"))
    summary = json.loads((crowded / "summary.json").read_text())
    strategy = summary["recommendation"]["setting"].split("@")[0]
    start = text.index("Which strategy should I use")
    headline = text[start : text.index("Leaderboard", start)]
    assert re.search(rf"{re.escape(strategy)} ?: \S", headline) and "Source: " in headline
    assert "an LLM summarizer's calls are not in it" in headline
    recorded = summary["windows"]["recorded"]
    assert recorded and "a simulated 64,000-token window for every model" in headline
    for model, tokens in recorded.items():
        assert f"{model} {tokens:,}" in headline
    assert f"rests on {summary['recommendation']['compactions']} compactions" in headline
    # Every strategy of the leaderboard with its one line and source, beside the table.
    about = text[text.index("What each strategy is") : text.index("Which differences are real?", start)]
    for name in DEFAULT_STRATEGIES:
        assert name in about
    assert about.count("Source: ") == len(DEFAULT_STRATEGIES)


def test_the_leaderboard_fits_the_terminal(crowded: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    summary = json.loads((crowded / "summary.json").read_text())
    board = pd.DataFrame(summary["leaderboard"]).fillna(float("nan"))
    recommendation = Recommendation.from_json(summary["recommendation"])
    same = [SameGroup.from_json(g) for g in summary["same_by_construction"]]
    wide = format_leaderboard(board, recommendation, same)
    assert max(map(len, wide.splitlines())) > 300  # before: every line as long as the full table
    for width in (80, 120):
        narrow = format_leaderboard(board, recommendation, same, width=width)
        assert max(map(len, narrow.splitlines())) <= width
        assert recommendation.setting in narrow
    # What did not fit is said, not dropped silently.
    narrow = " ".join(format_leaderboard(board, recommendation, same, width=80).split())
    assert "every figure is in summary.json and --json" in narrow
    # The command fits the terminal it prints to (a pipe gets every figure).
    monkeypatch.setattr(cli_runs, "terminal_width", lambda: 90)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["run", "--dataset", "codex-rollouts", "--strategy", "summarize", "prune", "--out", str(tmp_path / "r")]) == 0
    table = printed.getvalue().split("\n\n")[0].splitlines()
    assert table and max(map(len, table)) <= 90


def test_the_reports_leaderboard_fits_a_laptop_screen(crowded: Path) -> None:
    # Before: about 1,840 px (the settings' names on one line, .84rem, .55rem padding): it scrolled sideways.
    page = (crowded / "report.html").read_text(encoding="utf-8")
    assert "#leaderboard-table td:first-child" in page
    assert leaderboard_width_px(page) <= LAPTOP_PX
