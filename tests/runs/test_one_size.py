"""One size, one definition (issue 27 §3): what a strategy budgets its kept tail in is what the
replay measures the next prompt in, and `compactlab compact` prints the sizes `compactlab run` does."""

from __future__ import annotations

from dataclasses import replace

import pytest

from compactlab.replay.replay import replay
from compactlab.replay.setting import Setting
from compactlab.runs.preview import compact
from compactlab.sessions.importers import load_file
from compactlab.strategies.presets import SOURCE_HARNESS
from compactlab.strategies.registry import get_strategy
from compactlab.tokens.context_windows import ContextWindows
from tests.conftest import bundled
from tests.scripts.guard_retry import session_figures

WINDOW = ContextWindows({"": 64_000})
# A Claude Code session whose measured ratio is high: a quarter of the window counted with the bare
# chars/4 estimate was well over a quarter of it measured, and every compaction left the context due.
HIGH_RATIO = load_file(bundled("m-claude", "554b9fa6"), lenient=True)[0]


@pytest.mark.parametrize("stem", ["554b9fa6", "21037e11", "agent-abc3cb6"])
def test_compact_and_run_agree_on_a_real_session(stem: str) -> None:
    session = load_file(bundled("m-claude", stem), lenient=True)[0]
    first = replay(session, Setting("summarize", "summarize"), WINDOW).compactions[0]
    preview = compact(session, "summarize", windows=WINDOW)
    assert (preview.call, preview.chosen_by) == (first.call, "trigger")
    assert (preview.event.tokens_before, preview.event.tokens_after) == (first.event.tokens_before, first.event.tokens_after)
    # `--at` another call: the size before is the run's uncompacted size there, within rounding.
    full = replay(session, Setting("truncate", "truncate"), ContextWindows({"": 10**7})).calls["full_tokens"]
    at = compact(session, "summarize", at_call=first.call - 2, windows=WINDOW)
    assert abs(at.event.tokens_before - full[first.call - 2]) <= 1


def test_the_kept_tail_is_budgeted_in_the_units_the_next_prompt_is_measured_in() -> None:
    measured = session_figures(HIGH_RATIO, "summarize", 64_000)
    bare = session_figures(HIGH_RATIO, "summarize", 64_000, pieces="estimator")
    # Counted with the bare estimator, every compaction left the context at or above the trigger and
    # the calls after them went over the window; counted as the replay measures, none does.
    assert bare["left_high"] == bare["compactions"] > 0 and bare["over_window"] > 100
    assert measured["left_high"] == 0 and measured["over_window"] == 0
    # After each compaction the context is at most what the engine keeps (a quarter of the window
    # for the tail, plus the summary and the fixed part), far below the trigger.
    done = replay(HIGH_RATIO, Setting("summarize", "summarize"), WINDOW)
    assert done.compactions and all(row.event.tokens_after < 0.8 * 64_000 for row in done.compactions)


def test_presets_count_their_tail_with_their_sources_estimator() -> None:
    # pi and opencode count their kept tail with chars/4 (estimateTokens, Token.estimate): the mismatch
    # with provider tokens is theirs. Claude Code's rule is not public: the measured size stays.
    assert SOURCE_HARNESS.pieces == "estimator"
    assert get_strategy("claude-code").harness.pieces == "measured"
    pi = get_strategy("pi")
    # Asked before every call, so that this session's one long prompt run compacts at all (pi itself
    # checks only between runs: Harness.checks); what is measured here is the tail's count alone.
    pi = replace(pi, harness=replace(pi.harness, checks="every-call"))
    at_source = replay(HIGH_RATIO, Setting("pi", "pi"), WINDOW, strategy=pi)
    measured = replay(
        HIGH_RATIO, Setting("pi", "pi"), WINDOW, strategy=replace(pi, harness=replace(pi.harness, pieces="measured"))
    )
    # The measured budget keeps less of the tail, so the context after each compaction is smaller.
    after = [row.event.tokens_after for row in at_source.compactions]
    assert after and max(row.event.tokens_after for row in measured.compactions) < max(after)
