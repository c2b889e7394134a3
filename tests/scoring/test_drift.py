"""Summary drift across repeated compactions (bench/scoring/drift.py), on a real session compacted several times."""

from __future__ import annotations

import pytest

from compactlab.replay.replay import replay
from compactlab.replay.setting import Setting
from compactlab.results.metrics import calls_frame, compactions_frame, session_summary
from compactlab.scoring.drift import drift_counts
from compactlab.scoring.matching import Item, present
from compactlab.tokens.context_windows import ContextWindows
from tests.strategies.test_seed_rules import MANIFEST

WINDOW = ContextWindows(overrides={"": 64_000})


@pytest.fixture(scope="module")
def codex_rows() -> list[dict]:
    replayed = replay(MANIFEST, Setting("codex", "codex"), WINDOW)
    return [row.values() for row in replayed.compactions]


def test_drift_counts_what_the_next_summary_dropped(codex_rows) -> None:
    summaries = [r for r in codex_rows if r["summary"] and not r["failed"]]
    assert len(summaries) >= 3, "the session is compacted several times"
    counts = drift_counts(codex_rows)
    assert counts[0] is None  # the first summary has none before it
    pairs = [(i, c) for i, c in enumerate(counts) if c is not None]
    assert pairs and any(dropped for _, (_, dropped) in pairs)
    for index, (carried, dropped) in pairs:
        earlier = next(r["summary"] for r in reversed(codex_rows[:index]) if r["summary"] and not r["failed"])
        needed = [Item(*text.split(":", 1)) for text in codex_rows[index]["preservation"]["k5"]["needed"]]
        in_earlier = [i for i in needed if present(i, earlier)]
        assert carried == len(in_earlier)
        assert dropped == sum(not present(i, codex_rows[index]["summary"]) for i in in_earlier)


def test_an_unchanged_or_failed_summary_is_no_new_summary(codex_rows) -> None:
    first = next(r for r in codex_rows if r["summary"])
    repeated = [first, dict(first, call=first["call"] + 1), dict(first, call=first["call"] + 2, summary="other", failed="boom")]
    assert drift_counts(repeated) == [None, None, None]


def test_session_drift_is_dropped_over_carried_in_the_summary_table(codex_rows) -> None:
    replayed = replay(MANIFEST, Setting("codex", "codex"), WINDOW)
    table = session_summary(calls_frame(replayed.calls), compactions_frame(codex_rows))
    counts = [c for c in drift_counts(codex_rows) if c is not None]
    row = table.iloc[0]
    assert row["summary_pairs"] == len(counts)
    assert row["summary_drift"] == pytest.approx(sum(d for _, d in counts) / sum(c for c, _ in counts))
    masked = replay(MANIFEST, Setting("m", "observation-masking"), WINDOW)
    no_summary = session_summary(calls_frame(masked.calls), compactions_frame(masked.compactions)).iloc[0]
    assert no_summary["summary_pairs"] == 0 and no_summary["summary_drift"] != no_summary["summary_drift"]  # NaN


def test_rows_of_many_settings_match_each_pair_once_and_count_as_each_setting_alone() -> None:
    """The rows of several settings of one session (a sweep's, where many write the same summaries)
    give each row the counts its setting's rows give alone."""
    keep = "keep_recent_tokens"
    settings = [Setting("codex", "codex"), Setting("codex-again", "codex")]
    # Compacting where the others do with other summaries: the same needed items, other texts to match.
    settings += [Setting(f"summarize/{n}", "summarize", ((keep, n),)) for n in (4_000, 8_000, 16_000)]
    per_setting = [[row.values() for row in replay(MANIFEST, setting, WINDOW).compactions] for setting in settings]
    together = drift_counts([row for rows in per_setting for row in rows])
    alone = [count for rows in per_setting for count in drift_counts(rows)]
    assert together == alone
    assert sum(count is not None for count in alone) >= 4  # pairs of summaries compared, in more than one setting
