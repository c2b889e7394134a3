"""Validity against behaviour at the bundled real compaction: lost items re-acquired before use."""

from __future__ import annotations

from compactlab.replay.replay import replay
from compactlab.replay.strategy_config import StrategyConfig
from compactlab.scoring.reacquisition import reacquisition_at
from compactlab.tokens.context_windows import ContextWindows
from compactlab.transcripts.importers import load_file
from compactlab.transcripts.model import Message, TextPart, ToolCallPart, ToolResultPart
from tests.conftest import bundled


def test_the_auto_compaction_lost_items_are_what_claude_code_reattached_unseen() -> None:
    [transcript] = load_file(bundled("m-claude", "3af9b1a7"), lenient=True)
    replayed = replay(transcript, StrategyConfig("recorded", "recorded"), ContextWindows())
    [row], [compacted] = replayed.compactions, replayed.compacted
    found = reacquisition_at(transcript.messages, row.message_index, compacted)
    # Both items the metric marks lost are files the agent says the re-attached reminders showed it
    # ("I read /tmp/filter-repo-output.log ... pyproject.toml"), never read in the transcript: the
    # agent had them, so it never re-acquired them (0 of 2), against 4 of the 9 kept items.
    assert (found.lost, found.lost_reacquired, found.kept, found.kept_reacquired) == (2, 0, 9, 4)
    assert found.lost_not_reacquired == ("path:/tmp/filter-repo-output.log", "path:pyproject.toml")
    # The agent's first step after the compaction names both: no message came between in which they
    # could have come back, so they are counted as used at once.
    assert found.lost_at_once == 2


def test_an_item_is_reacquired_only_before_the_step_that_uses_it() -> None:
    history = (
        Message("user", (TextPart("fix src/app.py and check settings_module"),)),
        Message("assistant", (TextPart("ok"),)),
    )
    after = (
        Message(
            "assistant", (ToolCallPart("1", "Read", '{"file_path": "src/app.py"}'),)
        ),  # uses src/app.py: no re-acquisition before
        Message("tool", (ToolResultPart("1", "import settings_module"),)),  # settings_module arrives again
        Message("assistant", (TextPart("`settings_module` is imported"),)),
    )
    found = reacquisition_at((*history, *after), len(history), (Message("user", (TextPart("summary: nothing"),)),))
    assert (found.lost, found.lost_reacquired) == (2, 1)
    assert found.lost_not_reacquired == ("path:src/app.py",)
    # src/app.py is used by the very first step: nothing could have brought it back. settings_module
    # is used two messages later, after a tool result that could (and did).
    assert found.lost_at_once == 1
