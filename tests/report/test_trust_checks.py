"""How far to trust a run's numbers, on real sessions: the bundled auto compaction (3af9b1a7), the
bundled manual one (97b0ffde) and a Claude Code session that never compacted (the replay's own
size error is measured on sessions without a real compaction)."""

from __future__ import annotations

import contextlib
import html
import io
import json
import re

import numpy as np
import pytest

from compactlab.cli.main import main
from compactlab.replay.prompt_size_errors import error_table, kept_tail_errors
from compactlab.replay.replay import replay
from compactlab.replay.setting import Setting
from compactlab.report.names import short_name
from compactlab.scoring.reacquisition import reacquisition_at
from compactlab.sessions.importers import load_file
from compactlab.tokens.context_windows import ContextWindows
from compactlab.tokens.estimation import run_estimation
from tests.conftest import bundled

REAL = (("m-claude", "3af9b1a7"), ("m-claude", "97b0ffde"))
UNCOMPACTED = ("claude-code-log", "-Users-dain-workspace-claude-code-log-sample__37f83ec9")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("trust") / "run"
    files = [str(bundled(*f)) for f in (*REAL, UNCOMPACTED)]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(["run", "--lenient", "--dataset", *files, "--strategy", "recorded", "summarize", "--out", str(out)])
    assert code == 0, printed.getvalue()
    page = html.unescape((out / "report.html").read_text(encoding="utf-8"))
    section = re.search(r'<section id="trust">(.*?)</section>', page, re.S).group(1)
    return {
        "summary": json.loads((out / "summary.json").read_text()),
        "page": page,
        "section": section,
        "printed": printed.getvalue(),
        "files": files,
    }


def test_summary_json_holds_the_reacquisition_at_every_real_compaction(run: dict) -> None:
    found = run["summary"]["trust"]["reacquisition"]
    by_session = {row["session"][:8]: row for row in found["compactions"]}
    assert set(by_session) == {
        "3af9b1a7",
        "97b0ffde",
    }  # one row per real compaction, nothing for the session that never compacted
    for dataset, stem in REAL:
        [session] = load_file(bundled(dataset, stem), lenient=True)
        replayed = replay(session, Setting("recorded", "recorded"), ContextWindows())
        [row], [compacted] = replayed.compactions, replayed.compacted
        expected = reacquisition_at(session.messages, row.message_index, compacted)
        got = by_session[stem]
        assert (got["call"], got["lost"], got["lost_reacquired"], got["kept"], got["kept_reacquired"]) == (
            row.call,
            expected.lost,
            expected.lost_reacquired,
            expected.kept,
            expected.kept_reacquired,
        )
        assert got["lost_not_reacquired"] == list(expected.lost_not_reacquired)
        assert got["lost_at_once"] == expected.lost_at_once
    # The auto compaction: both lost items are files Claude Code re-attached unseen (tests/scoring/test_reacquisition.py).
    # Only tool results bring an item back (issue 41): the 3 kept items came back only in user messages.
    assert (found["lost"], found["lost_reacquired"], found["kept"], found["kept_reacquired"]) == (2, 0, 8, 0)
    assert found["kept_incidental"] == 3
    assert found["lost_share"] == 0 and found["kept_share"] == 0
    assert found["lost_at_once"] == 2  # both named by the first step after the compaction
    assert "2 of the 2 lost items were used before any message could bring them back" in run["printed"]
    # Per compaction first (issue 41): the two compactions, each its own unit.
    per = found["per_compaction"]
    # The auto compaction holds all ten items; the manual one needs none from the history.
    assert (per["with_lost"], per["with_kept"], per["with_both"]) == (1, 1, 1)
    assert per["lost_mean"] == 0 and per["kept_mean"] == 0
    assert per["difference_mean"] == 0 and per["difference_low"] is None  # one compaction: no interval
    assert found["counted"] == 2 and all(row["left_out"] == "" for row in found["compactions"])
    assert "per compaction: lost items re-acquired 0% on average (median 0%, 1 compactions)" in run["printed"]
    assert (
        "pooled over items (not independent): lost 0 of 2 (0%), kept 0 of 5 (0%); in neither share: 0 lost and 3 kept"
        in run["printed"]
    )


def test_the_report_shows_the_four_checks_side_by_side(run: dict) -> None:
    page, section = run["page"], run["section"]
    assert 'href="#trust"' in page and "How far to trust these numbers" in page
    fidelity = re.search(r'id="trust-fidelity-table">(.*?)</table>', section, re.S).group(1)
    for check in run["summary"]["recorded_fidelity"]:
        name = str(short_name(check["session"]))  # a long id cut, whole in its tooltip
        row = re.search(rf"{re.escape(name)}</code></td><td class=\"num\">{check['call']}</td>(.*?)</tr>", fidelity, re.S).group(
            1
        )
        assert f"{check['fidelity_predicted']:,.0f}" in row and f"{check['fidelity_recorded']:,.0f}" in row
        assert f"{100 * check['relative_error']:+.1f}%".replace("-", "−") in row
    per_compaction = re.search(r'id="trust-reacquisition-per-compaction">(.*?)</p>', section, re.S).group(1)
    assert "per compaction: lost items re-acquired 0% on average" in per_compaction
    pooled = re.search(r'id="trust-reacquisition-pooled">(.*?)</p>', section, re.S).group(1)
    assert "lost 0 of 2 (0%), kept 0 of 5 (0%)" in pooled
    assert section.index("trust-reacquisition-per-compaction") < section.index("trust-reacquisition-pooled")
    assert "path:/tmp/filter-repo-output.log" in section
    assert "2 of the 2 lost items were used before any message could bring them back" in section
    # Both are files the agent named in its own calls and never saw read: unknown to the recoverability rule.
    by_label = re.search(r'id="trust-reacquisition-by-label">(.*?)</p>', section, re.S).group(1)
    assert "recoverable 0 of 0; unrecoverable 0 of 0; unknown 0 of 2 (0%)" in " ".join(by_label.split())
    assert run["summary"]["trust"]["reacquisition"]["lost_unknown"] == 2
    at_once = re.search(r'id="trust-reacquisition-table">.*?3af9b1a7.*?</tr>', section, re.S).group(0)
    assert re.findall(r'<td class="num">([^<]*)</td>', at_once) == ["103", "0 of 2 (0%)", "0 of 5 (0%)", "2"]
    # 3. The run's estimator (hybrid) on its undamaged sessions, every call but the first.
    sessions = [t for f in run["files"] for t in load_file(f, lenient=True) if not t.skipped]
    calls = run_estimation(sessions, ["hybrid"]).calls
    rel = calls.loc[~calls["first_call"].astype(bool), "rel_error"].to_numpy(float)
    row = re.search(r'id="trust-estimators-table">.*?<td>hybrid</td>(.*?)</tr>', section, re.S).group(1)
    assert f"{100 * np.abs(rel).mean():.1f}%" in row and f"{len(rel):,}" in row
    assert "Left out: 1 sessions with damaged records" in section
    # ... and per source beside the pooled figure: here one source, so its row and "all" agree.
    by_source = re.search(r'id="trust-estimators-source-table">(.*?)</table>', section, re.S).group(1)
    sources = re.findall(r"<td>hybrid</td><td>([^<]+)</td><td class=\"num\">([^<]+)</td>", by_source)
    assert [name for name, _ in sources][-1] == "all" and len(sources) >= 2
    assert (
        sum(int(n.replace(",", "")) for name, n in sources if name != "all") == len(rel) == int(sources[-1][1].replace(",", ""))
    )
    # 4. The measured-size rule on the one session without a real compaction.
    table = error_table([r for t in sessions for r in kept_tail_errors(t, "hybrid")]).loc["all"]
    assert table["sessions"] == 1
    assert f"Median absolute error <strong>{table['measured_median_abs_pct']:.1f}%</strong>" in section
    assert "What it means for you" in section and section.count("What it means for you") == 4
