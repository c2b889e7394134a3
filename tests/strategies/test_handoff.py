"""The handoff baseline (issue 48) on a real session: at each compaction the history is replaced by
one extraction (goal, decisions, files, next step) and nothing of it is kept verbatim; the extraction
ends with the goal it is directed at, the user's latest request."""

from __future__ import annotations

from compactlab.replay.replay import replay
from compactlab.replay.setting import Setting
from compactlab.sessions.messages import is_summary, pinned_head, summary_text
from compactlab.strategies.handoff import GOAL, goal_of
from compactlab.strategies.registry import get_strategy
from compactlab.tokens.context_windows import ContextWindows
from tests.strategies.test_preset_rule_checks import Spy, with_llm
from tests.strategies.test_seed_rules import MANIFEST

AT_40K = ContextWindows(overrides={"": 40_000})


def _replayed(strategy=None, summarizer=None):
    return replay(MANIFEST, Setting("handoff", "handoff"), AT_40K, summarizer=summarizer, strategy=strategy)


def test_a_handoff_keeps_no_tail_and_ends_with_the_goal() -> None:
    done = _replayed()
    assert len(done.compacted) >= 2, "the session should compact more than once at 40,000"
    for row, context in zip(done.compactions, done.compacted):
        head = pinned_head(context, True)  # the system prompt, instructions and the pinned task (harness default)
        assert len(context) == head + 1 and is_summary(context[head]), "only the extraction follows the head"
        text = summary_text(context[head])
        goal = goal_of(MANIFEST.messages[: row.message_index])
        assert goal and text.endswith(f"{GOAL} {goal}")
        assert text.count(GOAL) == 1, "an earlier extraction's goal line is not carried"
        for section in ("## Goal", "## Recent decisions"):  # the offline extraction's goal and decisions
            assert section in text
    # Some extraction lists the files the session touched (the extraction's files).
    assert any("<read-files>" in summary_text(c[pinned_head(c, True)]) for c in done.compacted)


def test_a_handoff_asks_the_llm_for_goal_decisions_files_and_next_step() -> None:
    spy = Spy()
    strategy = with_llm(get_strategy("handoff"))
    done = _replayed(strategy=strategy, summarizer=spy)
    assert done.compactions and spy.asked
    prompt = spy.asked[0].prompt
    for section in ("## Goal", "## Decisions", "## Files", "## Next step"):
        assert section in prompt
    # The whole history before the first compaction is in the request: nothing was kept out of it.
    first = done.compactions[0].message_index
    head = pinned_head(MANIFEST.messages[:first], True)
    assert len([m for m in spy.asked[0].messages if m.role != "tool" or m.parts]) >= first - head - 1
