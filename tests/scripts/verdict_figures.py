"""Measure whether a verdict can be acted on (issue 33), on real sessions.

    python -m tests.scripts.verdict_figures [SHARED] [--out DIR]

1. A messy set: three mini-swe-agent v1 sessions from SHARED (default `../shared/transcripts`) that grow
   past a 20,000-token window, and one Claude Code session whose smallest prompt is already over it.
   A sweep of summarize and observation-masking at thresholds 0.6 and 0.8: does it recommend, which
   sessions does it leave out and why, how many compactions does the verdict rest on, and does its
   recommended.toml, replayed by `compactlab run --config`, give the same figures?
2. A crowded sweep: the default grid (72 settings) on the bundled Codex rollouts. How many notes on
   settings identical by construction the report opens with, how many Pareto markers are named or
   numbered, how many next grids are suggested, how wide the leaderboard is in a terminal (every
   figure, and fitted to 100 columns) and in the report (estimated, `leaderboard_width_px`).
"""

from __future__ import annotations

import argparse
import contextlib
import html
import io
import json
import re
import shutil
from pathlib import Path

import pandas as pd

from compactlab.cli.main import main as compactlab
from compactlab.report.run_charts import colours_for, pareto_chart
from compactlab.report.run_data import figures_and_recommendation, load_run
from compactlab.results.leaderboard import format_leaderboard
from compactlab.results.recommendation import Recommendation
from compactlab.results.same_by_construction import SameGroup

DEFAULT_SHARED = Path(__file__).resolve().parents[3] / "shared" / "transcripts"
MESSY = (
    "mini-swe-agent-v1/mini-output/django__django-12713.traj.json",
    "mini-swe-agent-v1/mini-reasoning-medium-res-api/sphinx-doc__sphinx-7748.traj.json",
    "mini-swe-agent-v1/gpt5-output/sphinx-doc__sphinx-8548.traj.json",
    "claude-code-log/-experiments-ideas__03eb5929-52b3-4b13-ada3-b93ae35806b8.jsonl",
)
MESSY_SWEEP = ["--window", "20000", "--strategy", "summarize", "observation-masking", "--thresholds", "0.6", "0.8"]
COMPARED = ("removed_share_mean", "preservation_or_untouched_mean", "compactions_mean", "over_window_calls_total")

# The report's leaderboard width, estimated without a browser: a character of the table's font is about
# 0.55 em wide (digits of system-ui fonts); the font size, padding and the wrapped first column are the
# stylesheet's. A laptop screen shows `main`, 1180 px, less its 2 × 1.25 rem of padding.
CHAR_EM, REM = 0.55, 16
LAPTOP_PX = 1180 - 2 * 1.25 * REM


def _cli(args: list[str]) -> tuple[int, str]:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = compactlab(args)
    return code, printed.getvalue()


def messy_figures(shared: Path, out: Path) -> dict:
    folder = out / "messy"
    folder.mkdir(parents=True, exist_ok=True)
    for name in MESSY:
        shutil.copy(shared / name, folder / Path(name).name)
    code, _ = _cli(["sweep", "--dataset", str(folder), *MESSY_SWEEP, "--out", str(out / "messy-sweep"), "--no-report"])
    summary = json.loads((out / "messy-sweep" / "summary.json").read_text())
    recommendation = summary["recommendation"]
    figures = {"exit": code, "settings": len(summary["leaderboard"]), **_verdict(recommendation)}
    toml = out / "messy-sweep" / "recommended.toml"
    if toml.exists():
        _cli(["run", "--config", str(toml), "--out", str(out / "messy-replayed")])
        again = json.loads((out / "messy-replayed" / "summary.json").read_text())["leaderboard"]
        swept = next(r for r in summary["leaderboard"] if r["setting"] == recommendation["setting"])
        figures["recommended.toml reproduces"] = all(again[0][k] == swept[k] for k in COMPARED)
    return figures


def _verdict(recommendation: dict) -> dict:
    return {
        "recommended": recommendation["setting"],
        "not recommendable": len(recommendation["not_recommendable"]),
        "sessions left out": recommendation.get("unfit_sessions", {}),
        "compactions it rests on": recommendation.get("compactions"),
        "clear": recommendation.get("clear"),
        "tied": recommendation.get("tied", []),
    }


def crowded_figures(out: Path) -> dict:
    sweep = out / "crowded-sweep"
    code, printed = _cli(["sweep", "--dataset", "codex-rollouts", "--out", str(sweep)])
    page = (sweep / "report.html").read_text(encoding="utf-8")
    summary = json.loads((sweep / "summary.json").read_text())
    run = load_run(sweep)
    figures, recommendation = figures_and_recommendation(run)
    boxes: list = []
    _, key = pareto_chart(figures, recommendation, colours_for(run.labels), placed=boxes)
    board = pd.DataFrame(summary["leaderboard"]).fillna(float("nan"))
    same = [SameGroup.from_json(g) for g in summary["same_by_construction"]]
    shown = Recommendation.from_json(summary["recommendation"])
    return {
        "exit": code,
        "settings": len(board),
        "groups identical by construction": len(same),
        "notes on them in the report": page.count('class="note same-by-construction"'),
        "Pareto labels placed": len(boxes),
        "Pareto markers (each numbered, named in the key)": len(key),
        "next grids suggested": len(json.loads((sweep / "sweep.json").read_text())["warnings"]),
        "terminal leaderboard, widest line (every figure)": max(map(len, format_leaderboard(board, shown, same).splitlines())),
        "terminal leaderboard, widest line at 100 columns": max(
            map(len, format_leaderboard(board, shown, same, width=100).splitlines())
        ),
        "report leaderboard width (px, estimated)": round(leaderboard_width_px(page)),
        "laptop width (px)": LAPTOP_PX,
        **_verdict(summary["recommendation"]),
        "printed lines": len(printed.splitlines()),
    }


def leaderboard_width_px(page: str) -> float:
    """The report's leaderboard width in pixels, estimated from its cells and the page's stylesheet."""
    style = re.search(r"#leaderboard-table \{ font-size: ([\d.]+)rem; \}", page)
    padding = re.search(r"#leaderboard-table th, #leaderboard-table td \{ padding: [\d.]+rem ([\d.]+)rem; \}", page)
    wrap = re.search(r"#leaderboard-table td:first-child \{[^}]*max-width: (\d+)ch;", page)
    # Figures wrap at their spaces where the cells may wrap (issue 33); before, each part kept to one line.
    cells_wrap = re.search(r"#leaderboard-table td \{ white-space: normal; \}", page) is not None
    # Without the leaderboard's own style (before issue 33): the page's table defaults, names on one line.
    font = float(style.group(1)) * REM if style else 0.84 * REM
    pad = float(padding.group(1)) * REM if padding else 0.55 * REM
    name_chars = int(wrap.group(1)) if wrap else None
    table = re.search(r'<table class="sortable" id="leaderboard-table">(.*?)</table>', page, re.S)
    assert table, "no leaderboard in the page"
    columns: dict[int, int] = {}
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table.group(1), re.S):
        header = "<th" in row
        for i, cell in enumerate(re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)):
            parts = [html.unescape(re.sub(r"<[^>]+>", "", p)).strip() for p in cell.split('<span class="ci">')]
            if header:  # headers wrap at spaces and after hyphens
                chars = max((len(word) for word in re.split(r"\s+|(?<=-)", parts[0]) if word), default=0)
            elif i == 0 and name_chars is not None:  # the setting's names wrap within their column
                chars = min(len(parts[0]), name_chars)
            elif cells_wrap:  # a figure, its note and its interval wrap at their spaces
                chars = max((len(word) for p in parts for word in p.split()), default=0)
            else:  # a figure and its interval (on its own line) do not wrap
                chars = max(len(p) for p in parts)
            columns[i] = max(columns.get(i, 0), chars)
    return sum(columns.values()) * CHAR_EM * font + len(columns) * 2 * pad


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shared", nargs="?", type=Path, default=DEFAULT_SHARED, help="the shared real sessions")
    parser.add_argument("--out", type=Path, default=Path("reports/verdict-figures"), help="where the runs are written")
    args = parser.parse_args()
    for own in ("messy", "messy-sweep", "messy-replayed", "crowded-sweep"):  # this script's folders only, from a rerun
        shutil.rmtree(args.out / own, ignore_errors=True)
    for title, figures in (
        ("messy set (a session no setting can fit)", messy_figures(args.shared, args.out)),
        ("crowded sweep (codex-rollouts, default grid)", crowded_figures(args.out)),
    ):
        print(f"{title}:")
        for name, value in figures.items():
            print(f"  {name}: {value}")


if __name__ == "__main__":
    main()
