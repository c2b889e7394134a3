"""The one recommendation rule (`compactlab.results.recommendation`): edge cases on hand-made figures, then the rule
on real sessions through the sweep."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from compactlab.cli.main import main
from compactlab.replay.replay import replay
from compactlab.replay.setting import Setting
from compactlab.results.leaderboard import setting_figures
from compactlab.results.metrics import calls_frame, compactions_frame, session_summary
from compactlab.results.recommendation import Rule, recommend
from compactlab.sessions.importers import load_file
from compactlab.tokens.context_windows import ContextWindows
from tests.conftest import VERDICT, bundled


def figures(*rows: tuple[str, float, float, float, int]) -> pd.DataFrame:
    """(label, tokens removed, facts kept over all sessions, facts kept where compacted, over-window calls)."""
    return pd.DataFrame(
        rows,
        columns=[
            "setting",
            "removed_share_mean",
            "preservation_or_untouched_mean",
            "preservation_k1_mean",
            "over_window_calls_total",
        ],
    )


def test_a_setting_with_calls_over_the_window_is_never_recommended_even_when_it_dominates() -> None:
    picked = recommend(figures(("fast", 0.30, 0.99, 0.95, 3), ("safe", 0.10, 0.97, 0.93, 0), ("slow", 0.05, 0.99, 0.99, 0)))
    assert picked.setting == "safe" and picked.frontier == ("slow", "safe")
    assert picked.not_recommendable == {"fast": "3 calls over the context window"}
    assert "no call over the window" in picked.reason and "2 recommendable of 3" in picked.reason


def test_facts_kept_where_compacted_is_part_of_the_stated_rule() -> None:
    picked = recommend(figures(("rare", 0.20, 0.95, 0.60, 0), ("steady", 0.12, 0.96, 0.92, 0)))
    assert picked.setting == "steady"
    assert picked.not_recommendable["rare"] == "keeps 60.0% of the next step's facts where it compacted (under 90%)"
    assert (
        "over the sessions where it compacted" in picked.rule.text
        and "over-window request fails in production" in picked.rule.text
    )


def test_ties_go_to_more_facts_kept_then_the_label() -> None:
    picked = recommend(figures(("b", 0.2, 0.95, 0.95, 0), ("a", 0.2, 0.95, 0.95, 0), ("c", 0.2, 0.93, 0.93, 0)))
    assert picked.setting == "a" and picked.ties == ("b",)


def test_when_nothing_is_recommendable_the_reason_says_why() -> None:
    picked = recommend(figures(("x", 0.3, 0.99, 0.99, 12), ("y", 0.2, 0.80, 0.70, 5), ("z", 0.1, 0.85, 0.85, 0)), Rule(0.95))
    assert picked.setting is None and picked.frontier == ()
    assert picked.reason.startswith(
        "no setting meets the rule: 2 of 3 settings let calls exceed the context window (fewest: y, 5 calls)"
    )
    assert "2 keep less than 95%" in picked.reason and "95%" in picked.rule.text
    assert json.loads(json.dumps(picked.as_json()))["setting"] is None


def test_the_sweep_recommends_by_the_rule_on_real_sessions(tmp_path: Path, capsys) -> None:
    # A session that compacts at a 64k window and one that never reaches it; prune cannot keep the
    # first under the window, summarize can.
    files = [
        str(bundled("claude-code-log", "-Users-dain-workspace-claude-code-log-sample__37f83ec9")),
        str(bundled("m-claude", "97b0ffde")),
    ]
    # prune has no keep budget: the default budgets apply to summarize only (an explicit --keep would be an error).
    code = main(
        [
            "sweep",
            "--dataset",
            *files,
            "--window",
            "64000",
            "--strategy",
            "summarize",
            "prune",
            "--thresholds",
            "0.7",
            "0.9",
            "--out",
            str(tmp_path / "sweep"),
            "--no-report",
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    document = json.loads((tmp_path / "sweep" / "sweep.json").read_text())
    points = {p["setting"]: p for p in document["points"]}
    recommendation = document["recommendation"]
    assert recommendation["rule"] in printed
    for label, point in points.items():
        assert (label in recommendation["not_recommendable"]) == bool(
            point["over_window_calls_total"]
            or point["preservation_or_untouched_mean"] < 0.9
            or (point["preservation_k1_mean"] is not None and point["preservation_k1_mean"] < 0.9)
        )
    eligible = {k: v for k, v in points.items() if k not in recommendation["not_recommendable"]}
    assert [p["setting"] for p in document["frontier"]] == list(recommendation["frontier"])
    if eligible:
        best = max(eligible.values(), key=lambda p: (p["removed_share_mean"], p["preservation_or_untouched_mean"]))
        assert recommendation["setting"] == best["setting"] and best["over_window_calls_total"] == 0
        # Two sessions, a few compactions: the verdict names the pick, and says it is neither clear nor well founded.
        compactions = round(best["compactions_mean"] * best["compactions_n"])
        assert 0 < compactions < 20
        assert f"no clear winner; best at a simulated 64,000-token window (a stress test): {best['setting']} — " in printed
        assert f"rests on {compactions} compactions: too few to go by" in printed
    else:
        assert recommendation["setting"] is None and "no recommendation:" in printed
    # The report of the sweep shows the same pick and the same frontier.
    page = tmp_path / "sweep" / "report.html"
    assert main(["report", str(tmp_path / "sweep"), "--out", str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    if recommendation["setting"]:
        assert re.search(VERDICT + re.escape(f"{recommendation['setting']}</strong>"), text)


def test_calls_over_the_window_of_a_setting_that_could_not_act_are_reported_as_such() -> None:
    # prune at 64k on a real Claude Code session: opencode's protections (40,000 tokens of the newest
    # tool output, and more than 20,000 to clear) leave it nothing to remove, so every attempt is a
    # no-op and the session's calls overflow; truncate acts on the same session.
    [session] = load_file(bundled("m-claude", "95f81cf4"))
    windows = ContextWindows({"": 64_000})
    calls: list[pd.DataFrame] = []
    rows: list = []
    for name in ("prune", "truncate"):
        replayed = replay(session, Setting(name, name), windows)
        calls.append(calls_frame(replayed.calls))
        rows += replayed.compactions
    per_session = session_summary(pd.concat(calls, ignore_index=True), compactions_frame(rows)).set_index("setting")
    prune, truncate = per_session.loc["prune"], per_session.loc["truncate"]
    assert prune["compactions"] == 0 and prune["noop_compactions"] > 0
    assert prune["over_window_unacted_calls"] == prune["over_window_calls"] == 12
    assert truncate["compactions"] > 0 and truncate["over_window_unacted_calls"] == 0
    board = setting_figures(per_session.reset_index(), resamples=200).set_index("setting")
    assert board.loc["prune", "over_window_unacted_calls_total"] == 12
    [why] = Rule().why_not(board.loc["prune"])[:1]
    assert why == "12 calls over the context window (12 in sessions where every attempt removed nothing: it could not act)"
