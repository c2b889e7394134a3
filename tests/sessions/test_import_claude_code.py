"""The Claude Code importer on the real bundled sessions, checked against independent counts."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from compactlab.sessions.importers import load_file
from compactlab.sessions.model import ThinkingPart, ToolCallPart, ToolResultPart
from compactlab.sessions.source import SessionError
from tests.conftest import DATASETS, bundled

CLAUDE_FILES = sorted((DATASETS / "claude-code-log" / "sessions").glob("*.gz")) + sorted(
    (DATASETS / "m-claude" / "sessions").glob("*.gz")
)


def independent_count(path: Path) -> tuple[int, int]:
    """Calls and largest prompt straight from the raw lines, written without the importer's code:
    distinct `message.id` of non-synthetic assistant lines, prompt = input + cache creation + cache read."""
    prompts: dict[str, int] = {}
    for raw in gzip.decompress(path.read_bytes()).splitlines():
        try:
            line = json.loads(raw)
        except ValueError:
            continue  # damaged line: skipped by the importer too
        if line.get("type") != "assistant" or line["message"].get("model") == "<synthetic>":
            continue
        u = line["message"]["usage"]
        prompts[line["message"]["id"]] = (
            u["input_tokens"] + u.get("cache_creation_input_tokens", 0) + u.get("cache_read_input_tokens", 0)
        )
    return len(prompts), max(prompts.values())


@pytest.mark.parametrize("path", CLAUDE_FILES, ids=lambda p: p.name[:40])
def test_calls_and_max_prompt_match_an_independent_count(path: Path) -> None:
    sessions = load_file(path, lenient=True)
    calls = sum(len(t.calls) for t in sessions)
    max_prompt = max(t.max_prompt_tokens or 0 for t in sessions)
    assert (calls, max_prompt) == independent_count(path)


@pytest.mark.parametrize(
    ("dataset", "stem", "calls", "max_prompt"),
    [
        # Read off the raw files by hand (and equal to ../shared/transcripts/MANIFEST.md).
        ("m-claude", "3af9b1a7", 114, 154990),
        ("claude-code-log", "-Users-dain-workspace-claude-code-log-sample__12a546d1", 36, 42994),
        ("claude-code-log", "-src-deep-manifest__a7da6a22", 103, 134276),
        ("m-claude", "agent-a5992a3", None, 42537),
    ],
)
def test_hand_computed_counts(dataset: str, stem: str, calls: int | None, max_prompt: int) -> None:
    [session] = load_file(bundled(dataset, stem), lenient=True)
    if calls is not None:
        assert len(session.calls) == calls
    assert session.max_prompt_tokens == max_prompt


def test_lines_of_one_response_merge_into_one_message_with_final_usage() -> None:
    [session] = load_file(bundled("claude-code-log", "-Users-dain-workspace-claude-code-log-sample__07f2e15c"))
    first = next(m for m in session.messages if m.role == "assistant")
    # Lines 6 and 7 of the file share msg_017qPCFf6YmMExyMJ5meuqtY: a text block, then a TodoWrite call.
    assert first.source_id == "msg_017qPCFf6YmMExyMJ5meuqtY"
    assert [p.kind for p in first.parts] == ["text", "tool_call"]
    assert first.parts[1].name == "TodoWrite"
    assert first.call.prompt_tokens == 4 + 15329 + 0
    assert first.call.cache_write_tokens == 15329


def test_usage_of_split_response_is_taken_from_its_last_line() -> None:
    [session] = load_file(bundled("m-claude", "7fcdbdcd"))
    [assistant_call] = session.calls
    # Lines 5-7 share one id; output_tokens is 7, 7, then 618 on the last line.
    assert assistant_call.output_tokens == 618
    assert assistant_call.prompt_tokens == 9 + 11257 + 13339
    # The three <synthetic> error stubs are not calls, but they are counted.
    assert dict(session.ignored)["assistant line with model <synthetic>: a local error stub, not an LLM call"] == 3


def test_real_auto_compaction_becomes_a_marker() -> None:
    [session] = load_file(bundled("m-claude", "3af9b1a7"), lenient=True)
    [marker] = session.compactions
    assert (marker.trigger, marker.pre_tokens) == ("auto", 155554)
    assert marker.summary.startswith("This session is being continued from a previous conversation")
    # The summary is not replayed as a message; the next message is the first one after it.
    assert all("This session is being continued" not in m.text() for m in session.messages)
    after = session.messages[marker.at_message]
    assert after.line > marker.line


def test_real_manual_compaction() -> None:
    [session] = load_file(bundled("m-claude", "97b0ffde"))
    [marker] = session.compactions
    assert (marker.trigger, marker.pre_tokens, marker.line) == ("manual", 31469, 138)


def test_damaged_lines_stop_strict_mode_with_file_and_line() -> None:
    path = bundled("m-claude", "21037e11")
    with pytest.raises(SessionError) as error:
        load_file(path)
    assert error.value.line == 3
    assert str(error.value).startswith(f"{path}:3: invalid JSON")
    assert "--lenient" in str(error.value)


def test_damaged_lines_are_counted_in_lenient_mode() -> None:
    [session] = load_file(bundled("m-claude", "21037e11"), lenient=True)
    damaged = [s for s in session.skipped if s.reason.startswith("invalid JSON")]
    assert len(damaged) == 28
    assert damaged[0].line == 3


def test_inline_sidechain_lines_become_their_own_session() -> None:
    main, agent = load_file(bundled("m-claude", "72dfed17"), lenient=True)
    assert not main.is_subagent and agent.is_subagent
    assert agent.id.endswith("/agent-abadced")
    assert (len(main.calls), len(agent.calls)) == (114, 15)
    assert agent.models == ("claude-haiku-4-5-20251001",)


def test_subagent_file_is_flagged() -> None:
    [session] = load_file(bundled("m-claude", "agent-a5992a3"))
    assert session.is_subagent


def test_thinking_and_tool_pairing_on_a_real_session() -> None:
    [session] = load_file(bundled("claude-code-log", "-Users-dain-workspace-JSSoundRecorder"))
    parts = [p for m in session.messages for p in m.parts]
    assert any(isinstance(p, ThinkingPart) and p.text for p in parts)
    calls = {p.id for p in parts if isinstance(p, ToolCallPart)}
    results = [p for m in session.messages for p in m.parts if isinstance(p, ToolResultPart)]
    assert results and all(r.call_id in calls for r in results)
    assert all(m.role == "tool" for m in session.messages if any(isinstance(p, ToolResultPart) for p in m.parts))


def test_a_response_block_written_again_is_added_once_and_blocks_that_differ_are_kept() -> None:
    from compactlab.sessions.importers.claude_code_messages import Draft as _Draft

    draft = _Draft(role="assistant", line=1, source_id="r")
    text = {"type": "text", "text": "hello"}
    call = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}
    assert not draft.seen(text) and draft.seen(dict(text))
    assert not draft.seen(call) and draft.seen({"input": {"command": "ls"}, "name": "Bash", "id": "t1", "type": "tool_use"})
    assert not draft.seen({**call, "input": {"command": "pwd"}})  # the same id with another input is another block
    assert not draft.seen({"type": "text", "text": ["a"]}) and draft.seen({"type": "text", "text": ["a"]})  # compared by JSON
    assert not draft.seen({"type": "text", "text": True}) and not draft.seen({"type": "text", "text": 1})  # true is not 1
    assert not draft.seen({"type": "text", "text": float("nan")}) and draft.seen({"type": "text", "text": float("nan")})
