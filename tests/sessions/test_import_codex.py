"""The Codex CLI rollout importer, on an abridged real rollout and on hand-made ones (see
tests/fixtures/codex/README.md for where each fixture comes from)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from compactlab.sessions.importers.codex import CodexImporter
from compactlab.sessions.model import Session, ThinkingPart, ToolCallPart, ToolResultPart
from compactlab.sessions.source import RecordIssues, SessionError, Source

FIXTURES = Path(__file__).parents[1] / "fixtures" / "codex"
REAL = FIXTURES / "rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl"
STREAMING = FIXTURES / "streaming-order-compaction.jsonl"
LEGACY = FIXTURES / "legacy-2025-05.jsonl"

# last_token_usage of the 8 calls in the real file, counted by hand: (input incl. cached, cached, output)
REAL_CALLS = [
    (10128, 0, 37),
    (10334, 0, 43),
    (11862, 10240, 109),
    (12496, 9216, 52),
    (13982, 12416, 52),
    (15645, 13952, 46),
    (16347, 15616, 52),
    (18325, 16256, 52),
]


def load(path: Path, lenient: bool = False) -> Session:
    source = Source(path)
    [session] = CodexImporter().load(source, RecordIssues(source.path, lenient))
    return session


def write_jsonl(path: Path, records: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


def usage(i: int, c: int, o: int) -> dict:
    return {"input_tokens": i, "cached_input_tokens": c, "output_tokens": o, "reasoning_output_tokens": 0, "total_tokens": i + o}


def token_count(total: tuple[int, int, int], last: tuple[int, int, int]) -> dict:
    info = {"total_token_usage": usage(*total), "last_token_usage": usage(*last), "model_context_window": 400000}
    return {"type": "event_msg", "payload": {"type": "token_count", "info": info, "rate_limits": None}}


def item(payload: dict) -> dict:
    return {"type": "response_item", "payload": payload}


META = {"type": "session_meta", "payload": {"id": "s-1", "cwd": "/w", "originator": "codex_cli_rs", "cli_version": "0.60.1"}}
CONTEXT = {"type": "turn_context", "payload": {"cwd": "/w", "model": "gpt-5.1-codex", "summary": "auto"}}
USER = item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]})
ANSWER = item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hello"}]})


def test_real_rollout_counts_each_call_once_despite_repeated_token_counts():
    session = load(REAL)
    assert session.id == "019a93b9-f380-7600-98ff-940e6b99603c"
    assert session.source_format == "codex-rollout"
    assert [(c.prompt_tokens, c.cache_read_tokens, c.output_tokens) for c in session.calls] == REAL_CALLS
    ignored = dict(session.ignored)
    # 16 token_count events: 1 before any usage, 8 calls, 7 repeats sent when the next stream opened.
    assert ignored["token_count without usage (rate limits only)"] == 1
    assert ignored["token_count repeated (no new model call)"] == 7
    assert session.models == ("gpt-5.1-codex",)
    assert session.context_window == 258400
    assert session.skipped == ()


def test_prompt_tokens_include_cached_input():
    call = load(REAL).calls[2]
    assert (call.input_tokens, call.cache_read_tokens, call.cache_write_tokens) == (1622, 10240, 0)
    assert call.prompt_tokens == 11862  # OpenAI's input_tokens, which already include cached ones
    assert call.model == "gpt-5.1-codex"


def test_one_assistant_message_per_response_with_its_tool_results():
    session = load(REAL)
    roles = [m.role for m in session.messages]
    assert roles == ["user", "user"] + ["assistant", "tool"] * 8
    assert "<environment_context>" in session.messages[0].text()  # injected context is kept
    for assistant, tool in zip(session.messages[2::2], session.messages[3::2]):
        thinking, call = assistant.parts
        assert isinstance(thinking, ThinkingPart) and isinstance(call, ToolCallPart)
        assert assistant.call is not None
        [result] = tool.parts
        assert isinstance(result, ToolResultPart) and result.call_id == call.id
        assert not result.is_error
    first_call = session.messages[2].parts[1]
    assert first_call.name == "shell"
    assert first_call.parsed_arguments()["command"] == ["bash", "-lc", "ls"]


def test_reasoning_summary_becomes_thinking_and_encrypted_content_is_noted():
    session = load(REAL)
    assert session.messages[2].parts[0] == ThinkingPart("**Planning repository inspection**")
    assert dict(session.ignored)["reasoning encrypted_content (unreadable; summary kept when present)"] == 8
    # The event_msg copies of reasoning and user input are not imported a second time.
    assert dict(session.ignored)["event_msg:agent_reasoning (copy of a response item)"] == 8


def test_streaming_order_usage_after_items_and_compaction():
    session = load(STREAMING)
    roles = [m.role for m in session.messages]
    assert roles == [
        "system",
        "system",
        "user",
        "user",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]
    assert session.messages[0].text().startswith("You are Codex")  # base_instructions
    assert "<permissions instructions>" in session.messages[1].text()  # developer message
    assert [c.prompt_tokens for c in session.calls] == [9000, 9600, 10200, 2600]
    # Encrypted-only reasoning leaves no part; the custom (freeform) tool call keeps its raw input.
    [patch] = session.messages[7].parts
    assert patch.name == "apply_patch" and patch.arguments.startswith("*** Begin Patch")
    assert session.messages[8].parts[0].call_id == patch.id
    [marker] = session.compactions
    assert marker.at_message == 10 and session.messages[10].text() == "Now add a test for whitespace-only input"
    assert marker.trigger == "unknown"
    assert marker.pre_tokens == 10200  # prompt of the last call before the compaction
    assert "parse` now returns None for empty input" in marker.summary
    ignored = dict(session.ignored)
    assert ignored["token_count of the compaction summary request"] == 1  # not a conversation call
    assert ignored["response_item:web_search_call (server-side tool, no result recorded)"] == 1
    assert session.context_window == 272000


def test_legacy_layout_without_envelope():
    session = load(LEGACY)
    assert session.id == "5973b6c0-94b8-487b-a530-2aeb6098ae0e"
    assert [m.role for m in session.messages] == ["user", "user", "assistant", "tool", "assistant"]
    [shell] = session.messages[2].parts
    assert shell.name == "local_shell" and shell.parsed_arguments()["command"] == ["ls"]
    [result] = session.messages[3].parts
    assert result.call_id == "call_L1" and result.is_error  # {"content", "success": false}
    assert session.calls == [] and dict(session.ignored)["legacy state record (previous_response_id)"] == 2


def with_line_replaced(tmp_path: Path, number: int, text: str) -> Path:
    lines = REAL.read_text().splitlines()
    lines[number - 1] = text
    path = tmp_path / "damaged.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("bad", ['{"type":"response_item","payload":{"type":"mes', '{"type":"turn_context","payload":"x"}'])
def test_malformed_line_strict_raises_with_line(tmp_path, bad):
    path = with_line_replaced(tmp_path, 5, bad)  # line 5 is a turn_context
    with pytest.raises(SessionError) as error:
        load(path)
    assert error.value.line == 5
    assert f"{path}:5:" in str(error.value)


def test_malformed_line_lenient_is_counted_and_skipped(tmp_path):
    path = with_line_replaced(tmp_path, 5, '{"type":"response_item","payload":{"type":"mes')
    session = load(path, lenient=True)
    assert [s.line for s in session.skipped] == [5]
    assert len(session.calls) == 8


def test_missing_required_fields_are_reported(tmp_path):
    bad_call = item({"type": "function_call", "name": "shell", "arguments": "{}"})  # no call_id
    path = write_jsonl(tmp_path / "r.jsonl", [META, CONTEXT, USER, bad_call, token_count((5, 0, 1), (5, 0, 1)), ANSWER])
    with pytest.raises(SessionError) as error:
        load(path)
    assert error.value.line == 4 and "call_id" in str(error.value)
    session = load(path, lenient=True)
    assert [s.line for s in session.skipped] == [4]
    assert [c.prompt_tokens for c in session.calls] == [5]  # usage before items (older Codex order)


def test_usage_without_assistant_output_is_reported_not_dropped(tmp_path):
    records = [META, CONTEXT, USER, token_count((100, 0, 5), (100, 0, 5)), USER, token_count((300, 0, 7), (200, 0, 2)), ANSWER]
    path = write_jsonl(tmp_path / "r.jsonl", records)
    session = load(path, lenient=True)
    assert [(s.line, "no assistant output" in s.reason) for s in session.skipped] == [(4, True)]
    assert [c.prompt_tokens for c in session.calls] == [200]
    with pytest.raises(SessionError):
        load(path)


def test_estimates_and_rate_limit_refreshes_are_not_calls(tmp_path):
    full = {
        "type": "event_msg",
        "payload": {
            "type": "token_count",
            "info": {
                # set_total_tokens_full after a context-window error: an estimate, no input tokens.
                "total_token_usage": usage(0, 0, 0) | {"total_tokens": 400000},
                "last_token_usage": usage(0, 0, 0) | {"total_tokens": 399000},
                "model_context_window": 400000,
            },
        },
    }
    records = [
        META,
        CONTEXT,
        USER,
        ANSWER,
        token_count((1000, 0, 10), (1000, 0, 10)),
        token_count((1000, 0, 10), (1000, 0, 10)),
        full,
        USER,
        ANSWER,
        token_count((2000, 0, 20), (1000, 900, 10)),
    ]
    session = load(write_jsonl(tmp_path / "r.jsonl", records))
    assert [(c.input_tokens, c.cache_read_tokens) for c in session.calls] == [(1000, 0), (100, 900)]
    assert dict(session.ignored)["token_count estimate (no model call)"] == 1


def test_remote_compaction_summary_comes_from_replacement_history(tmp_path):
    replacement = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"type": "compaction", "encrypted_content": "gAAAA"},
    ]
    compacted = {"type": "compacted", "payload": {"message": "", "replacement_history": replacement}}
    records = [META, CONTEXT, USER, ANSWER, token_count((50, 0, 3), (50, 0, 3)), compacted, USER]
    session = load(write_jsonl(tmp_path / "r.jsonl", records))
    [marker] = session.compactions
    assert marker.at_message == 2 and marker.pre_tokens == 50 and marker.line == 6
    assert marker.summary == "hi\n\n[encrypted compaction summary, unreadable]"


def test_gzip_file_reads_the_same(tmp_path):
    path = tmp_path / f"{REAL.name}.gz"
    path.write_bytes(gzip.compress(REAL.read_bytes()))
    session = load(path)
    assert len(session.calls) == 8 and session.id == "019a93b9-f380-7600-98ff-940e6b99603c"


def test_match_is_specific(tmp_path):
    importer = CodexImporter()
    for path in (REAL, STREAMING, LEGACY):
        assert importer.match(Source(path)) is None
    claude = write_jsonl(tmp_path / "c.jsonl", [{"type": "user", "message": {"role": "user", "content": "hi"}, "uuid": "u1"}])
    assert "session_meta" in importer.match(Source(claude))


def test_detection_through_load_file(tmp_path):
    from compactlab.sessions.importers import load_file  # needs every sibling importer module

    gz = tmp_path / "rollout.jsonl.gz"
    gz.write_bytes(gzip.compress(STREAMING.read_bytes()))
    for path in (REAL, STREAMING, LEGACY, gz):
        [session] = load_file(path)
        assert session.source_format == "codex-rollout"
