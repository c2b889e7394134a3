"""A verdict a user can act on, on their own messy data (issue 33), on real sessions: a session no
setting can fit is named and left out of the veto, the verdict says what it rests on, a window that
fits nothing is refused."""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path

import pytest

from compactlab.cli.main import main
from compactlab.sessions.neutralise import read_csv
from tests.conftest import bundled

# Three mini-swe-agent sessions that grow past a 20,000-token window, and one Claude Code session whose
# smallest recorded prompt (its first: system prompt, tools, task, 26,819 tokens) is already over it.
SMALL = (
    "mini-swe-agent-v1/mini-output/django__django-12713.traj.json",
    "mini-swe-agent-v1/mini-reasoning-medium-res-api/sphinx-doc__sphinx-7748.traj.json",
    "mini-swe-agent-v1/gpt5-output/sphinx-doc__sphinx-8548.traj.json",
)
TOO_LARGE = "claude-code-log/-experiments-ideas__03eb5929-52b3-4b13-ada3-b93ae35806b8.jsonl"
UNFIT_ID = "-experiments-ideas__03eb5929-52b3-4b13-ada3-b93ae35806b8"


@pytest.fixture(scope="module")
def messy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.conftest import SHARED

    if not SHARED.is_dir():
        pytest.skip(f"the shared real sessions are not at {SHARED}")
    folder = tmp_path_factory.mktemp("messy") / "sessions"
    folder.mkdir()
    for name in (*SMALL, TOO_LARGE):
        shutil.copy(SHARED / name, folder / Path(name).name)
    return folder


@pytest.fixture(scope="module")
def swept(messy: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("sweep") / "sweep"
    args = ["sweep", "--dataset", str(messy), "--window", "20000", "--strategy", "summarize", "observation-masking"]
    args += ["--thresholds", "0.6", "0.8", "--out", str(out)]
    import contextlib
    import io

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(args)
    return {"code": code, "out": out, "printed": printed.getvalue()}


def test_a_session_no_setting_can_fit_is_named_and_does_not_veto_the_sweep(swept: dict) -> None:
    assert swept["code"] == 0, swept["printed"]
    summary = json.loads((swept["out"] / "summary.json").read_text())
    recommendation = summary["recommendation"]
    # Before: every setting had calls over the window in that one session, so there was no recommendation.
    assert recommendation["setting"] is not None
    assert list(recommendation["unfit_sessions"]) == [UNFIT_ID]
    why = recommendation["unfit_sessions"][UNFIT_ID]
    assert "27,227 tokens against a 20,000-token window" in why and "26,819 tokens and its largest single step 408" in why
    assert UNFIT_ID in swept["printed"] and "1 session left out" in swept["printed"]
    assert (swept["out"] / "recommended.toml").exists()
    # The floor is a true floor: every setting overflowed that session, and each other session fits under some setting.
    table = read_csv(swept["out"] / "sessions.csv")
    over = table.pivot(index="session", columns="setting", values="over_window_calls")
    assert (over.loc[UNFIT_ID] > 0).all()
    assert (over.drop(index=UNFIT_ID).min(axis=1) == 0).all()
    # The recommended setting has calls over the window only in the session left out.
    picked = over[recommendation["setting"]]
    assert picked.drop(index=UNFIT_ID).sum() == 0 and picked[UNFIT_ID] > 0


def test_the_recommended_toml_pasted_into_run_reproduces_the_figures(swept: dict, tmp_path: Path, capsys) -> None:
    toml = swept["out"] / "recommended.toml"
    assert tomllib.loads(toml.read_text())["window"] == 20000
    capsys.readouterr()
    assert main(["run", "--config", str(toml), "--out", str(tmp_path / "run")]) == 0
    printed = capsys.readouterr().out
    assert UNFIT_ID in printed
    again = json.loads((tmp_path / "run" / "summary.json").read_text())
    before = json.loads((swept["out"] / "summary.json").read_text())
    label = before["recommendation"]["setting"]
    assert again["recommendation"]["setting"] == label
    assert again["recommendation"]["unfit_sessions"] == before["recommendation"]["unfit_sessions"]
    [row] = again["leaderboard"]
    [swept_row] = [r for r in before["leaderboard"] if r["setting"] == label]
    for name in ("removed_share_mean", "preservation_or_untouched_mean", "compactions_mean", "over_window_calls_total"):
        assert row[name] == swept_row[name], name


def test_the_verdict_says_how_many_compactions_it_rests_on(swept: dict) -> None:
    recommendation = json.loads((swept["out"] / "summary.json").read_text())["recommendation"]
    table = read_csv(swept["out"] / "sessions.csv")
    counted = table[(table["setting"] == recommendation["setting"]) & (table["session"] != UNFIT_ID)]["compactions"].sum()
    assert recommendation["compactions"] == counted
    # The count is said, and under 20 it is named as too few rather than a confident "recommended"
    # (tests/results/test_recommendation_rule.py's two-session sweep rests on 4).
    assert f"rests on {counted} compactions" in swept["printed"]
    too_few = counted < 20
    assert (f"rests on {counted} compactions: too few" in swept["printed"]) == too_few
    assert ("tentatively recommended:" in swept["printed"]) == (too_few and not recommendation["tied"])
    if too_few:
        assert not recommendation["clear"] and "\nrecommended:" not in swept["printed"]


def test_a_window_no_session_fits_in_is_refused_with_the_numbers(tmp_path: Path, capsys) -> None:
    file = bundled("mini-swe-agent-pr816", "deepseek_chat_dev_pylint-dev__astroid-1333_")
    code = main(["run", "--dataset", str(file), "--window", "100", "--strategy", "truncate", "--out", str(tmp_path / "run")])
    error = capsys.readouterr().err
    assert code == 2
    assert "window 100 tokens is smaller than the smallest possible prompt" in error
    assert "smallest recorded prompt" in error and "deepseek_chat_dev_pylint-dev__astroid-1333" in error
