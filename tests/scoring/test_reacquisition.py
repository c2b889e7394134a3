"""Validity against behaviour at the bundled real compaction: lost items re-acquired before use."""

from __future__ import annotations

from pathlib import Path

import pytest

from compactlab.replay.replay import replay
from compactlab.replay.setting import Setting
from compactlab.scoring.general_items import UBIQUITOUS_SHARE, is_general
from compactlab.scoring.matching import Item
from compactlab.scoring.preservation import history_count, preservation_at, session_text
from compactlab.scoring.reacquisition import reacquisition_at
from compactlab.sessions.importers import load_file
from compactlab.sessions.loading import load_inputs
from compactlab.sessions.model import Message, TextPart, ToolCallPart, ToolResultPart
from compactlab.tokens.context_windows import ContextWindows
from tests.conftest import bundled
from tests.scripts.reacquisition_filter import Counts, leave_one_out, pooled, separation, session_counts


def test_the_auto_compaction_lost_items_are_what_claude_code_reattached_unseen() -> None:
    [session] = load_file(bundled("m-claude", "3af9b1a7"), lenient=True)
    replayed = replay(session, Setting("recorded", "recorded"), ContextWindows())
    [row], [compacted] = replayed.compactions, replayed.compacted
    found = reacquisition_at(session.messages, row.message_index, compacted)
    # Both items the metric marks lost are files the agent says the re-attached reminders showed it
    # ("I read /tmp/filter-repo-output.log ... pyproject.toml"), never read in the session: the
    # agent had them, so it never re-acquired them (0 of 2). 3 of the 8 kept items came back only in the
    # user's messages, which count in neither share (issue 41), and no tool result held the others.
    assert (found.lost, found.lost_reacquired, found.kept, found.kept_reacquired) == (2, 0, 8, 0)
    assert (found.lost_incidental, found.kept_incidental) == (0, 3)
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
    assert (found.lost, found.lost_reacquired, found.lost_incidental) == (2, 1, 0)
    assert found.lost_not_reacquired == ("path:src/app.py",)
    # src/app.py is used by the very first step: nothing could have brought it back. settings_module
    # is used two messages later, after a tool result that could (and did).
    assert found.lost_at_once == 1


def _real_compactions(shared: Path) -> dict[str, dict[float, Counts]]:
    loaded = load_inputs([str(shared / "m-claude"), str(shared / "pai-claude")], lenient=True)
    return {t.id: session_counts(t) for t in loaded.sessions if t.compactions}


def test_over_every_shared_real_compaction_lost_means_lost(shared: Path) -> None:
    sessions = _real_compactions(shared)
    assert len(sessions) == 6  # m-claude: 2 sessions with one compaction each; pai-claude: 4 with 8
    found = pooled(list(sessions.values()), UBIQUITOUS_SHARE)
    # Issue 27's goal: lost items re-acquired before use >= 80%, and 30 points above kept items.
    # Without setting the general items aside: lost 32 of 40 (80%), kept 64 of 140 (46%). With them
    # aside it was met, 32 of 38 (84%) against 55 of 113 (49%), but 10 of those 32 were calls of a
    # type's own method on a session variable (`sections.push(`, `decisions.length`), which the
    # labelling rule makes noise (issue 27 §2): without them 22 of 28 (79%) against 50 of 105 (48%),
    # 31 points. The 80% half of the goal is not reached (blocked); these are the figures.
    # Issue 41: only a tool result brings an item back (a user message or the agent's own call holding it
    # is neither: 7 kept items), and the extractor's new rules drop 2 kept items: 22 of 28 (79%) against
    # 42 of 96 (44%), 35 points.
    assert (found["lost_reacquired"], found["lost"], found["kept_reacquired"], found["kept"]) == (22, 28, 42, 103)
    assert (found["lost_incidental"], found["kept_incidental"]) == (0, 7)
    assert separation(found) >= 0.30
    # Out of sample: each session at the share chosen on the others gives the same figure.
    chosen, out_of_sample = leave_one_out(sessions)
    assert out_of_sample == found
    assert set(chosen) == set(sessions)


def test_names_every_agent_knows_are_not_needed_at_a_real_compaction(shared: Path) -> None:
    # pai-claude b566e56e's first compaction: the next steps name CLAUDE.md, the instruction file
    # Claude Code loads into every prompt; it was counted lost and never re-acquired.
    [session] = [t for t in load_inputs([str(shared / "pai-claude")], lenient=True).sessions if t.id.startswith("b566e56e")]
    replayed = replay(session, Setting("recorded", "recorded"), ContextWindows())
    row, compacted = replayed.compactions[0], replayed.compacted[0]
    needed = preservation_at(session.messages, row.message_index, compacted, (5,))[5].needed
    assert Item("path", "CLAUDE.md") not in needed and Item("number", "100") not in needed
    assert Item("path", "~/.claude/SESSION_STATUS.md") in needed  # a file of this user's setup is a fact
    assert is_general(Item("path", "CLAUDE.md")) and is_general(Item("number", "100"))


def test_an_item_in_most_of_the_history_is_not_needed() -> None:
    [session] = load_file(bundled("m-claude", "3af9b1a7"), lenient=True)
    replayed = replay(session, Setting("recorded", "recorded"), ContextWindows())
    [row], [compacted] = replayed.compactions, replayed.compacted
    text = session_text(session.messages)
    at_half = preservation_at(session.messages, row.message_index, compacted, (5,))[5].needed
    at_tenth = preservation_at(session.messages, row.message_index, compacted, (5,), ubiquitous=0.1)[5].needed
    # .gitleaks.toml is in 13% of the 275 messages before the compaction: needed when the bar is
    # half the history, set aside when it is a tenth; an item in 1% of them stays either way.
    assert history_count(text, Item("path", ".gitleaks.toml"), row.message_index) == 36
    assert Item("path", ".gitleaks.toml") in at_half and Item("path", ".gitleaks.toml") not in at_tenth
    assert Item("path", "pyproject.toml") in at_half and Item("path", "pyproject.toml") in at_tenth


def test_only_a_tool_result_brings_an_item_back() -> None:
    # Issue 41: after the compaction the user names `load_config` again and the agent greps for it;
    # neither is a response to its loss (the user's words, the agent's own call). The grep's result
    # brings `parse_rows` back, which the next step then uses.
    history = (
        Message("user", (TextPart("fix load_config and parse_rows in app.py"),)),
        Message("assistant", (TextPart("ok"),)),
    )
    after = (
        Message("user", (TextPart("remember load_config"),)),
        Message("assistant", (ToolCallPart("1", "Bash", '{"command": "grep -n def app.py"}'),)),
        Message("tool", (ToolResultPart("1", "3: def parse_rows(rows):"),)),
        Message("assistant", (TextPart("`load_config` and `parse_rows` are in `app.py`"),)),
    )
    summary = (Message("user", (TextPart("summary: we work on app.py"),)),)
    found = reacquisition_at((*history, *after), len(history), summary)
    assert (found.lost, found.lost_reacquired, found.lost_incidental) == (2, 1, 1)
    assert found.lost_share == 1.0  # parse_rows, of the one lost item that counts
    before = reacquisition_at((*history, *after), len(history), summary, rule="any")
    assert (before.lost_reacquired, before.lost_incidental) == (2, 0)
    with pytest.raises(ValueError, match="unknown re-acquisition rule 'every'"):
        reacquisition_at((*history, *after), len(history), summary, rule="every")
