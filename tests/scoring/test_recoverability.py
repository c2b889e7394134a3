"""Recoverable and unrecoverable loss (docs/recoverability.md) on real sessions of every source."""

from __future__ import annotations

import math
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from compactlab.replay.replay import replay
from compactlab.replay.setting import Setting
from compactlab.results.compaction_values import compaction_values
from compactlab.results.metrics import calls_frame, compactions_frame, session_summary
from compactlab.scoring.matching import Item, present
from compactlab.scoring.preservation import preservation_at
from compactlab.scoring.reacquisition import reacquisition_at
from compactlab.scoring.recoverability import classify, loss_split
from compactlab.sessions.importers import load_file
from compactlab.sessions.loading import load_inputs
from compactlab.sessions.messages import pinned_indexes
from compactlab.sessions.model import Session, ToolCallPart, ToolResultPart
from compactlab.sessions.tool_effects import call_effect
from compactlab.tokens.context_windows import ContextWindows
from tests.conftest import bundled

# Every shared source whose sessions call tools (the condenser pairs hold no steps).
SOURCES = (
    "claude-code-log",
    "m-claude",
    "mini-swe-agent-pr816",
    "mini-swe-agent-v1",
    "codex-rollouts",
    "pai-claude",
    "pi-sessions",
)


@cache
def _sessions(folder: Path) -> tuple[Session, ...]:
    """The three largest sessions of a shared source."""
    loaded = load_inputs([str(folder)], lenient=True).sessions
    return tuple(sorted(loaded, key=lambda t: (-len(t.messages), t.id))[:3])


def _lost_everything(session: Session, index: int):
    """The needed items of the next five steps after `messages[index]` when a compaction kept only
    the pinned messages (instructions and the task): every other needed item is lost."""
    messages = session.messages
    pinned = tuple(messages[i] for i in sorted(pinned_indexes(messages)) if i < index)
    return preservation_at(messages, index, pinned, (5,))[5].lost


@pytest.mark.parametrize("source", SOURCES)
def test_the_rule_labels_lost_items_of_every_shared_source_by_where_they_came_from(source: str, shared: Path) -> None:
    labels: Counter[str] = Counter()
    for session in _sessions(shared / source):
        messages = session.messages
        calls = {p.id: p for m in messages for p in m.parts if isinstance(p, ToolCallPart)}
        for share in (0.3, 0.5, 0.7):
            index = next(i for i in range(int(share * len(messages)), len(messages)) if messages[i].role == "assistant")
            split = loss_split(messages, index, _lost_everything(session, index))
            for found in split.items:
                labels[found.label] += 1
                if found.label != "recoverable":
                    assert found.source is None
                    continue
                # A recoverable item's source is a tool result before the compaction that holds it and
                # answers a read, a fetch or a write of a file, without an error.
                assert found.source is not None and found.source.message < index
                part = messages[found.source.message].parts[found.source.part]
                assert isinstance(part, ToolResultPart) and not part.is_error and present(found.item, part.content)
                assert call_effect(calls[part.call_id]).effect in ("read", "fetch", "write")
                assert found.source.tokens == math.ceil(len(part.content) / 4)
            # The cost counts each tool result once, however many items it holds.
            assert split.reacquisition_calls == len({(c.source.message, c.source.part) for c in split.of("recoverable")})
    # Every source's sessions give both: items the agent could read again and items only the conversation held.
    assert labels["recoverable"] and labels["unrecoverable"], labels


def test_an_item_an_edit_removed_from_the_file_it_was_read_from_is_no_longer_recoverable() -> None:
    # A real session: message 70 shows a file that names webkitRequestFileSystem; the Edit in message
    # 71 replaces the code that named it, and nothing else in the session held it.
    [session] = load_file(bundled("claude-code-log", "-Users-dain-workspace-JSSoundRecorder__7acd37a8"))
    messages, item = session.messages, Item("identifier", "webkitRequestFileSystem")
    edit = next(p for p in messages[71].parts if isinstance(p, ToolCallPart))
    assert edit.name == "Edit" and "webkitRequestFileSystem" not in edit.parsed_arguments()["new_string"]  # type: ignore[index]
    before = classify(messages, 71, item, 71)
    assert (before.label, before.reason) == ("recoverable", "a file read, still holding it")
    assert before.source is not None and before.source.message == 70
    after = classify(messages, 73, item, 73)
    assert after.label == "unrecoverable" and after.source is None


def test_an_item_an_edit_of_its_file_left_alone_stays_recoverable() -> None:
    # The same session: message 12 shows recordLive.js (a Read of message 10), the only message before
    # 55 showing `connected`; the Edit in message 54 changes recordLive.js elsewhere. The file still
    # holds it: one re-read gets it back.
    [session] = load_file(bundled("claude-code-log", "-Users-dain-workspace-JSSoundRecorder__7acd37a8"))
    messages, item = session.messages, Item("identifier", "connected")
    [result] = [p for p in messages[12].parts if isinstance(p, ToolResultPart)]
    [read] = [p for p in messages[10].parts if isinstance(p, ToolCallPart) and p.id == result.call_id]
    [edit] = [p for p in messages[54].parts if isinstance(p, ToolCallPart) and p.name == "Edit"]
    assert call_effect(read).effect == "read" and call_effect(edit).effect == "write"
    assert call_effect(read).paths == call_effect(edit).paths
    assert "connected" not in edit.parsed_arguments()["old_string"]  # type: ignore[index]
    found = classify(messages, 55, item, 55)
    assert (found.label, found.reason) == ("recoverable", "a file read, still holding it")
    assert found.source is not None and found.source.message == 12


def test_a_listing_is_recoverable_only_while_the_session_changed_nothing() -> None:
    [session] = load_file(bundled("mini-swe-agent-pr816", "deepseek_chat_dev_pylint-dev__astroid-1333_"))
    messages = session.messages
    calls = {p.id: (i, p) for i, m in enumerate(messages) for p in m.parts if isinstance(p, ToolCallPart)}
    changes = [i for i, p in calls.values() if call_effect(p).effect in ("write", "side_effect", "run")]
    # The first listing or search with a change after it, and a path it shows that the session
    # names nowhere else before the change.
    for at, message in enumerate(messages):
        result = next((p for p in message.parts if isinstance(p, ToolResultPart)), None)
        if (
            result is None
            or call_effect(calls[result.call_id][1]).effect != "read"
            or call_effect(calls[result.call_id][1]).paths
        ):
            continue
        change = next((i for i in changes if i > at), None)
        for line in result.content.splitlines():
            item = Item("path", line.strip())
            if change is None or not line.strip().endswith(".py") or "/" not in line:
                continue
            if [i for i in range(change) if i != at and present(item, messages[i].text())]:
                continue
            quiet = classify(messages, change, item, change)
            assert (quiet.label, quiet.reason) == ("recoverable", "a listing or search, nothing changed since")
            changed = classify(messages, change + 1, item, change + 1)
            assert changed.label == "unknown", changed  # the change may have altered what it lists
            return
    pytest.fail("no listing followed by a change in the session")


def test_at_the_real_compactions_the_agent_reacquired_the_recoverable_items_and_not_the_unrecoverable(shared: Path) -> None:
    totals: Counter[str] = Counter()
    for source in ("m-claude", "pai-claude", "pi-sessions"):
        sessions = load_inputs([str(shared / source)], lenient=True).sessions
        for session in (t for t in sessions if t.compactions):
            replayed = replay(session, Setting("recorded", "recorded"), ContextWindows())
            for row, compacted in zip(replayed.compactions, replayed.compacted):
                found = reacquisition_at(session.messages, row.message_index, compacted)
                totals.update({k: v for k, v in vars(found).items() if isinstance(v, int) and k != "at_message"})
    assert totals["lost"] == totals["lost_recoverable"] + totals["lost_unrecoverable"] + totals["lost_unknown"]
    assert totals["lost_recoverable"] >= 10, totals
    # The real agent went back for what it could re-read, and could not for what only the conversation held.
    assert totals["lost_recoverable_reacquired"] / totals["lost_recoverable"] >= 0.8, totals
    if totals["lost_unrecoverable"]:
        assert totals["lost_unrecoverable_reacquired"] / totals["lost_unrecoverable"] <= 0.2, totals


def test_the_rows_the_per_session_table_and_the_gate_carry_the_split_of_each_real_compaction() -> None:
    [session] = load_file(bundled("mini-swe-agent-pr816", "deepseek_chat_dev_pylint-dev__astroid-1333_"))
    replayed = replay(session, Setting("truncate", "truncate"), ContextWindows(overrides={"": 16_000}))
    rows = [row.values() for row in replayed.compactions if not row.event.failed]
    assert len(rows) >= 2
    expected = []
    for row, compacted in zip(replayed.compactions, replayed.compacted):
        k5 = row.preservation["k5"]
        split = loss_split(
            session.messages,
            row.message_index,
            preservation_at(session.messages, row.message_index, compacted, (5,))[5].lost,
        )
        # The row's lists are the split of its lost items, in full.
        assert sorted(k5["lost_recoverable"] + k5["lost_unrecoverable"] + k5["lost_unknown"]) == sorted(k5["lost"])
        assert k5["lost_unrecoverable"] == [f"{c.item.kind}:{c.item.text}" for c in split.of("unrecoverable")]
        assert (k5["reacquisition_tokens"], k5["reacquisition_calls"]) == (split.reacquisition_tokens, split.reacquisition_calls)
        if k5["needed"]:
            expected.append((len(k5["lost_unrecoverable"]) / len(k5["needed"]), k5["reacquisition_tokens"]))
    assert any(tokens for _, tokens in expected), "no compaction lost anything recoverable"
    summary = session_summary(calls_frame(replayed.calls), compactions_frame(rows))
    assert summary["unrecoverable_loss"].item() == pytest.approx(sum(u for u, _ in expected) / len(expected))
    assert summary["reacquisition_tokens"].item() == pytest.approx(sum(t for _, t in expected) / len(expected))
    gate = [v for v in compaction_values(rows) if v.metric == "unrecoverable_loss"]
    assert [v.value for v in gate] == pytest.approx([u for u, _ in expected])


def test_a_codex_patch_that_removes_the_line_an_item_was_read_from_makes_it_unrecoverable() -> None:
    # A real Codex session: message 22 runs `rg -n "codex-" -n specs/003-celery-oauth-volumes/spec.md`
    # (a shell argv), whose output in message 23 shows `assigned`; the apply_patch in message 26
    # updates that file and removes the line without adding it back.
    [session] = load_file(bundled("codex-rollouts", "MoonLadderStudios__MoonMind"))
    messages, item = session.messages, Item("identifier", "assigned")
    [search] = [p for p in messages[22].parts if isinstance(p, ToolCallPart)]
    [patch] = [p for p in messages[26].parts if isinstance(p, ToolCallPart)]
    assert call_effect(search).paths == ("specs/003-celery-oauth-volumes/spec.md",) == call_effect(patch).paths
    before = classify(messages, 26, item, 26)
    assert before.label == "recoverable" and before.source is not None and before.source.message == 23
    assert classify(messages, 27, item, 27).label == "unrecoverable"


# What each kind of real command of the bundled sessions does, by its first words.
EXPECTED_BY_START = {
    ("sed", "-i"): "write",
    ("rm",): "side_effect",
    ("git", "status"): "read",
    ("git", "log"): "read",
    ("git", "commit"): "side_effect",
    ("ls",): "read",
    ("grep",): "read",
    ("python",): "run",
    ("python3",): "run",
    ("pip", "install"): "side_effect",
    ("date",): "time",
}


@pytest.mark.parametrize(
    "dataset", ("claude-code-log", "m-claude", "mini-swe-agent-pr816", "mini-swe-agent-v1", "codex-rollouts")
)
def test_real_commands_of_every_bundled_source_are_read_by_what_they_do(dataset: str) -> None:
    seen: Counter[tuple[str, ...]] = Counter()
    for session in load_inputs([dataset], lenient=True).sessions:
        for part in (p for m in session.messages for p in m.parts if isinstance(p, ToolCallPart)):
            effect = call_effect(part)
            # One plain command: no pipeline, list, redirection or heredoc to combine.
            if effect.command is None or any(mark in effect.command for mark in ("|", "&", ";", ">", "<")):
                continue
            words = tuple(effect.command.split())
            for start, expected in EXPECTED_BY_START.items():
                if words[: len(start)] == start:
                    assert effect.effect == expected, (session.id, effect)
                    seen[start] += 1
    # Each source's shell tool is read: Claude Code's Bash, mini-swe-agent's actions (v1: from the reply's
    # text), Codex's argv lists and shell_command.
    assert sum(seen.values()) >= 10, seen
