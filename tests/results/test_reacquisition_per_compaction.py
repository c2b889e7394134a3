"""Issue 41: re-acquisition is given per compaction first (the items of one compaction are not
independent), copies, repeats and encrypted summaries are counted in no figure, and the rule of
which fetches count is chosen leaving one repository out."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pandas as pd
import pytest

from compactlab.replay.setting import Setting
from compactlab.results.reacquisition_figures import UNREADABLE, PerCompaction, reacquisition_summary
from compactlab.runs.run_config import RunConfig
from compactlab.runs.runs import run
from compactlab.runs.sweep import grid
from compactlab.scoring.reacquisition import COUNTS
from compactlab.sessions.importers.codex_compaction import UNREADABLE_SUMMARY
from tests.scripts import reacquisition_validity


def _counts(**given: int) -> dict:
    return {**dict.fromkeys(COUNTS, 0), "lost_not_reacquired": [], "k": 5, **given}


def _row(session: str, call: int, summary: str, **given: int) -> dict:
    return {
        "session": session,
        "setting": "recorded",
        "call": call,
        "message_index": 10,
        "summary": summary,
        "reacquisition": _counts(**given),
    }


def test_one_compaction_with_many_items_does_not_outweigh_the_others() -> None:
    # One read brought back 96 lost names at one compaction; three others lost a name each, never back.
    rows = [
        _row("a", 3, "one", lost=96, lost_reacquired=96, kept=4, kept_reacquired=1),
        _row("b", 3, "two", lost=1, kept=4, kept_reacquired=1),
        _row("c", 3, "three", lost=1, kept=4, kept_reacquired=1),
        _row("d", 3, "four", lost=1, kept=4, kept_reacquired=1),
    ]
    found = reacquisition_summary(pd.DataFrame(rows))
    assert found["lost_share"] == pytest.approx(96 / 99)  # pooled: the one compaction decides
    per = found["per_compaction"]
    assert per["lost_mean"] == pytest.approx(0.25) and per["lost_median"] == 0
    assert per["difference_mean"] == pytest.approx(0.25 - 0.25)
    assert per["difference_low"] <= per["difference_mean"] <= per["difference_high"]
    assert list(found)[0] == "per_compaction"  # first, before the pooled counts


def test_copies_repeats_and_encrypted_summaries_are_listed_but_not_counted() -> None:
    rows = [
        _row("main", 5, "the summary", lost=2, lost_reacquired=2),
        _row("sub-agent", 0, "the summary", lost=2),  # a copy: no call before it in its file
        _row("saved twice", 5, "the summary", lost=2),  # a repeat: the same summary met before
        _row("codex", 7, f"user text\n\n{UNREADABLE_SUMMARY}", lost=5, kept=1),
    ]
    found = reacquisition_summary(pd.DataFrame(rows))
    why = [row["left_out"] for row in found["compactions"]]
    assert why[0] == "" and why[1].startswith("a copy") and why[2].startswith("a repeat of main call 5")
    assert why[3] == UNREADABLE
    assert found["counted"] == 1 and found["lost"] == 2 and found["per_compaction"]["lost_mean"] == 1.0


def test_incidental_items_are_in_neither_share() -> None:
    found = PerCompaction.of([_counts(lost=4, lost_reacquired=1, lost_incidental=2, kept=2, kept_incidental=2)])
    assert found.lost_mean == 0.5  # 1 of the 2 lost items that count
    assert found.kept_mean is None and found.with_both == 0  # no kept item counts


def test_the_validity_script_chooses_the_rule_leaving_one_repository_out(shared: Path) -> None:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = reacquisition_validity.main([str(shared / "m-claude"), str(shared / "pai-claude")])
    assert code == 0
    out = printed.getvalue()
    assert "leave one repository out" in out and "out of sample, Anthropic" in out
    for rule in ("'any'", "'for the item'", "'names it'", "'results' (shipped)"):
        assert f"rule {rule}" in out
    assert "per compaction: lost items re-acquired" in out and "pooled over items (not independent)" in out


def test_the_rows_carrying_the_counts_are_read_as_every_row_holds_them(tmp_path: Path) -> None:
    # summary.json reads only the compaction rows that carry re-acquisition counts (the real
    # compactions'), not every row of the run: the figures must be those of the whole frame.
    settings = (*grid(("truncate", "summarize"), (0.5, 0.8), (8_000,)), Setting("recorded", "recorded"))
    config = RunConfig(datasets=("m-claude", "codex-rollouts"), strategies=settings, window=32_000, lenient=True)
    result = run(config, tmp_path / "run", workers=1)
    from_holding = reacquisition_summary(result.compactions_holding("reacquisition"))
    every_row = result.compactions
    assert from_holding["counted"] > 0 and len(from_holding["compactions"]) < len(every_row)
    assert from_holding == reacquisition_summary(every_row)
    assert reacquisition_summary(result.compactions_holding("reacquisition")) == from_holding  # (from the frame read since)
