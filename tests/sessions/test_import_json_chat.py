"""The openai-chat and anthropic-messages importers (whole-file JSON chat requests + usage).

Fixtures in tests/fixtures/json_chat/: `real_*` are assembled from real recorded API exchanges
(their `_source` key says where from); the rest are hand-written to cover each feature once.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from compactlab.sessions.importers.anthropic_messages import AnthropicMessagesImporter
from compactlab.sessions.importers.openai_chat import OpenAIChatImporter
from compactlab.sessions.model import ImagePart, Session, TextPart, ThinkingPart, ToolCallPart, ToolResultPart
from compactlab.sessions.source import RecordIssues, SessionError, Source

FIXTURES = Path(__file__).parents[1] / "fixtures" / "json_chat"
OPENAI = OpenAIChatImporter()
ANTHROPIC = AnthropicMessagesImporter()


def load(importer, path: Path, lenient: bool = False) -> Session:
    [session] = importer.load(Source(path), RecordIssues(path, lenient))
    return session


def write(tmp_path: Path, data: object, name: str = "conv.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def kinds(message) -> list[str]:
    return [part.kind for part in message.parts]


# --- OpenAI Chat Completions ------------------------------------------------------------------


def test_openai_full_fixture_structure() -> None:
    t = load(OPENAI, FIXTURES / "openai_full.json")
    assert t.id == "openai_full" and t.source_format == "openai-chat"
    assert [m.role for m in t.messages] == [
        "system",
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert [m.source_id for m in t.messages] == [f"messages[{i}]" for i in range(11)]
    assert all(m.line is None for m in t.messages)
    assert t.models == ("deepseek-chat", "gpt-4o")
    assert t.skipped == ()
    user = t.messages[2]
    assert kinds(user) == ["text", "image", "image", "image", "image", "text"]
    png, url_image, audio, pdf, unknown = user.parts[1:]
    assert png == ImagePart(media_type="image/png", byte_size=73, width=3, height=2)
    assert url_image == ImagePart(media_type="image/jpeg", byte_size=0)  # URLs are not fetched
    assert (audio.media_type, audio.byte_size) == ("audio/wav", 4)
    assert (pdf.media_type, pdf.byte_size) == ("application/pdf", 8)
    assert unknown == TextPart(text="[video_url part not imported]")  # kept, not dropped


def test_openai_tool_calls_reasoning_and_results() -> None:
    t = load(OPENAI, FIXTURES / "openai_full.json")
    assistant = t.messages[3]
    assert assistant.parts[0] == ThinkingPart(text="I should look at the repo first.")
    assert assistant.parts[1:] == (
        ToolCallPart(id="call_1", name="read_file", arguments='{"path": "a.py"}'),
        ToolCallPart(id="call_2", name="list_dir", arguments='{"path": "."}'),
    )
    assert t.messages[4].parts == (ToolResultPart(call_id="call_1", content="print('hi')"),)
    assert t.messages[5].parts == (ToolResultPart(call_id="call_2", content="a.py\nb.py"),)
    # A legacy function_call has no id: the `function` message answering it gets the synthetic one.
    [legacy] = t.messages[8].parts
    assert isinstance(legacy, ToolCallPart) and legacy.name == "get_time"
    assert t.messages[9].parts == (ToolResultPart(call_id=legacy.id, content="12:00"),)
    assert t.messages[10].parts == (TextPart(text="I can't help with that."),)  # refusal part


def test_openai_usage_mapping() -> None:
    t = load(OPENAI, FIXTURES / "openai_full.json")
    first = t.messages[3].call
    # prompt_tokens (1200) already includes the 1000 cached tokens.
    assert (first.model, first.input_tokens, first.cache_read_tokens, first.cache_write_tokens) == ("gpt-4o", 200, 1000, 0)
    assert first.output_tokens == 40 and first.cost_usd == pytest.approx(0.0012)
    assert first.prompt_tokens == 1200
    assert t.messages[6].call is None  # null entry in the usage list: nothing recorded
    deepseek = t.messages[8].call  # per-message usage wins over the list entry
    assert (deepseek.model, deepseek.input_tokens, deepseek.cache_read_tokens) == ("deepseek-chat", 92, 1408)
    assert deepseek.prompt_tokens == 1500
    assert t.messages[10].call.prompt_tokens == 1600
    assert t.max_prompt_tokens == 1600


def test_openai_real_recorded_session() -> None:
    t = load(OPENAI, FIXTURES / "real_openai_gpt4o_mini_image_tool.json")
    assert len(t.messages) == 11 and t.skipped == ()
    assert t.models == ("gpt-4o-mini-2024-07-18",)
    assert [c.prompt_tokens for c in t.calls] == [94, 231, 272, 345, 529]
    assert [c.output_tokens for c in t.calls] == [63, 29, 59, 86, 35]
    calls = [p for m in t.messages for p in m.parts if isinstance(p, ToolCallPart)]
    results = [p for m in t.messages for p in m.parts if isinstance(p, ToolResultPart)]
    assert [c.id for c in calls] == [r.call_id for r in results]
    assert json.loads(calls[1].arguments)["description"].startswith("A majestic wolf")


def test_openai_bare_array_and_plain_strings() -> None:
    t = load(OPENAI, FIXTURES / "bare_array_openai.json")
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert t.models == () and t.calls == []
    t = load(OPENAI, FIXTURES / "plain_strings.json")
    assert [m.text() for m in t.messages] == ["hi", "hello"]


def test_openai_gz_and_empty_assistant_keeps_its_call(tmp_path: Path) -> None:
    data = {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None}],
        "usage": [{"prompt_tokens": 7, "completion_tokens": 0}],
    }
    path = tmp_path / "conv.json.gz"
    path.write_bytes(gzip.compress(json.dumps(data).encode()))
    t = load(OPENAI, path)
    assert t.id == "conv"
    assert t.messages[1].parts == (TextPart(text=""),) and t.messages[1].call.prompt_tokens == 7


# --- Anthropic Messages -----------------------------------------------------------------------


def test_anthropic_full_fixture_structure() -> None:
    t = load(ANTHROPIC, FIXTURES / "anthropic_full.json")
    assert t.source_format == "anthropic-messages" and t.skipped == ()
    assert [m.role for m in t.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    assert t.messages[0].source_id == "system" and t.messages[0].text() == "You are Claude Code."
    assert t.models == ("claude-opus-4-1", "claude-sonnet-4-5")
    user = t.messages[1]
    assert kinds(user) == ["text", "image", "text", "image"]
    assert user.parts[1] == ImagePart(media_type="image/png", byte_size=73, width=3, height=2)
    assert user.parts[2] == TextPart(text="README contents")  # plain-text document
    assert (user.parts[3].media_type, user.parts[3].byte_size) == ("application/pdf", 8)


def test_anthropic_tool_results_become_tool_messages_before_the_rest() -> None:
    t = load(ANTHROPIC, FIXTURES / "anthropic_full.json")
    assistant = t.messages[2]
    assert assistant.parts[0] == ThinkingPart(text="Let me check the file.")
    read = assistant.parts[2]
    assert read == ToolCallPart(id="toolu_1", name="Read", arguments=json.dumps({"file_path": "/tmp/ä.py"}, ensure_ascii=False))
    assert "ä" in read.arguments
    first, second, rest = t.messages[3:6]
    assert [m.source_id for m in (first, second, rest)] == ["messages[2]"] * 3
    assert first.parts == (ToolResultPart(call_id="toolu_1", content="x = 1"),)
    assert second.parts[0] == ToolResultPart(call_id="toolu_2", content="ls: permission denied", is_error=True)
    assert isinstance(second.parts[1], ImagePart) and second.parts[1].width == 3
    assert rest.role == "user" and rest.text() == "Also check the tests."


def test_anthropic_server_tools_redacted_thinking_and_unknown_blocks() -> None:
    t = load(ANTHROPIC, FIXTURES / "anthropic_full.json")
    parts = t.messages[6].parts
    assert parts[0] == ThinkingPart(text="[redacted thinking]")
    assert parts[1] == ToolCallPart(id="srvtoolu_1", name="web_search", arguments='{"query": "pytest fixtures"}')
    assert isinstance(parts[2], ToolResultPart) and parts[2].call_id == "srvtoolu_1"
    assert json.loads(parts[2].content)[0]["url"] == "https://docs.pytest.org"
    assert parts[4] == TextPart(text="[fancy_new_block block not imported]")


def test_anthropic_usage_mapping() -> None:
    t = load(ANTHROPIC, FIXTURES / "anthropic_full.json")
    first, opus, last = t.calls
    assert (first.input_tokens, first.cache_write_tokens, first.output_tokens) == (10, 2000, 50)
    assert first.prompt_tokens == 2010 and first.model == "claude-sonnet-4-5"
    assert (opus.model, opus.prompt_tokens) == ("claude-opus-4-1", 2105)  # per-message usage and model
    assert (last.cache_read_tokens, last.prompt_tokens, last.cost_usd) == (2100, 2120, pytest.approx(0.0031))


def test_anthropic_real_recorded_exchange() -> None:
    t = load(ANTHROPIC, FIXTURES / "real_anthropic_tool_with_thinking.json")
    assert [m.role for m in t.messages] == ["user", "assistant", "tool", "assistant"]
    assert kinds(t.messages[1]) == ["thinking", "text", "tool_call"]
    assert t.messages[1].parts[2].arguments == "{}"
    assert t.messages[2].parts == (ToolResultPart(call_id="toolu_01YGzqpRE16Vricda3Aqcejo", content="Mexico"),)
    assert [c.prompt_tokens for c in t.calls] == [398, 566]
    assert t.models == ("claude-sonnet-4-20250514",)


# --- Orphans and damage -----------------------------------------------------------------------

ORPHANS = {
    "openai": (
        OPENAI,
        {
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "tool", "tool_call_id": "call_missing", "content": "lost"},
                {"role": "assistant", "content": "ok"},
            ]
        },
    ),
    "anthropic": (
        ANTHROPIC,
        {
            "messages": [
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_missing", "content": "lost"}]},
                {"role": "assistant", "content": "ok"},
            ]
        },
    ),
}


@pytest.mark.parametrize("case", sorted(ORPHANS))
def test_orphan_tool_result(tmp_path: Path, case: str) -> None:
    importer, data = ORPHANS[case]
    path = write(tmp_path, data)
    with pytest.raises(SessionError, match="orphan"):
        load(importer, path)
    t = load(importer, path, lenient=True)
    assert len(t.skipped) == 1 and "orphan" in t.skipped[0].reason
    assert not any(isinstance(p, ToolResultPart) for m in t.messages for p in m.parts)
    assert t.messages[-1].text() == "ok"


OK_USER = {"role": "user", "content": "still here"}
DAMAGE = [
    # (importer, document, fragment of the error, messages kept in lenient mode)
    (OPENAI, {"messages": "hello"}, "top-level `messages` is a string", 0),
    (OPENAI, 42, "top-level JSON value is a number", 0),
    (OPENAI, {"messages": [42, OK_USER]}, "messages[0] must be an object, got number", 1),
    (OPENAI, {"messages": [{"role": "user", "content": 5}, OK_USER]}, "messages[0].content must be a string", 1),
    (OPENAI, {"messages": [{"role": "robot", "content": "x"}, OK_USER]}, "unknown role 'robot'", 1),
    (OPENAI, {"messages": [{"role": "tool", "content": "x"}, OK_USER]}, "has no string `tool_call_id`", 1),
    (
        OPENAI,
        {"messages": [{"role": "user", "content": ["bare", {"type": "text", "text": "ok"}]}]},
        "messages[0].content[0] must be an object with a string `type`, got string",
        1,
    ),
    (
        OPENAI,
        {"messages": [OK_USER, {"role": "assistant", "content": "a", "tool_calls": {"id": "x"}}]},
        "tool_calls must be an array",
        2,
    ),
    (
        OPENAI,
        {"messages": [OK_USER, {"role": "assistant", "content": "a", "usage": {"prompt_tokens": "many"}}]},
        "messages[1].usage: usage `prompt_tokens` must be a non-negative integer",
        2,
    ),
    (
        OPENAI,
        {"messages": [OK_USER, {"role": "assistant", "content": "a"}], "usage": [{"prompt_tokens": 1}, {"prompt_tokens": 2}]},
        "top-level `usage` has 2 entries but `messages` has 1 assistant",
        2,
    ),
    (
        OPENAI,
        {
            "messages": [
                OK_USER,
                {
                    "role": "assistant",
                    "content": "a",
                    "usage": {"prompt_tokens": 5, "prompt_tokens_details": {"cached_tokens": 9}},
                },
            ]
        },
        "exceed prompt_tokens (5)",
        2,
    ),
    (ANTHROPIC, {"messages": [{"role": "user", "content": 5}, OK_USER]}, "messages[0].content must be a string or an array", 1),
    (ANTHROPIC, {"system": 7, "messages": [OK_USER]}, "top-level `system` must be a string", 1),
    (ANTHROPIC, {"messages": [{"role": "tool", "content": "x"}, OK_USER]}, "unknown role 'tool'", 1),
    (
        ANTHROPIC,
        {
            "messages": [
                OK_USER,
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": "ls"}]},
            ]
        },
        "`input` must be an object, got string",
        2,
    ),
    (
        ANTHROPIC,
        {"messages": [{"role": "user", "content": [{"type": "tool_result", "content": "x"}, {"type": "text", "text": "y"}]}]},
        "has no string `tool_use_id`",
        1,
    ),
    (
        ANTHROPIC,
        {"messages": [OK_USER, {"role": "assistant", "content": "a", "usage": {"output_tokens": 3}}]},
        "usage has no `input_tokens`",
        2,
    ),
]


@pytest.mark.parametrize(("importer", "data", "fragment", "kept"), DAMAGE)
def test_wrong_types_are_reported(tmp_path: Path, importer, data, fragment: str, kept: int) -> None:
    path = write(tmp_path, data)
    with pytest.raises(SessionError) as error:
        load(importer, path)
    assert fragment in str(error.value) and "--lenient" in str(error.value)
    t = load(importer, path, lenient=True)
    assert len(t.skipped) == 1 and fragment in t.skipped[0].reason
    assert len(t.messages) == kept


def test_invalid_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"messages": [\n  {"role": "user", "content": "hi"},\n  oops\n]}', encoding="utf-8")
    with pytest.raises(SessionError) as error:
        load(OPENAI, path, lenient=True)
    assert error.value.line == 3 and "invalid JSON" in str(error.value)


# --- Detection --------------------------------------------------------------------------------

DETECTED = {
    "openai_full.json": "openai-chat",
    "real_openai_gpt4o_mini_image_tool.json": "openai-chat",
    "bare_array_openai.json": "openai-chat",
    "plain_strings.json": "openai-chat",  # ambiguous plain strings: the documented default
    "anthropic_full.json": "anthropic-messages",
    "real_anthropic_tool_with_thinking.json": "anthropic-messages",
    "plain_strings_anthropic_usage.json": "anthropic-messages",  # Anthropic usage field names decide
    "mixed_markers.json": None,
    "not_chat_response.json": None,
}


@pytest.mark.parametrize("name", sorted(DETECTED))
def test_match_claims_each_file_for_at_most_one_format(name: str) -> None:
    source = Source(FIXTURES / name)
    claimed = [imp.name for imp in (OPENAI, ANTHROPIC) if imp.match(source) is None]
    assert claimed == ([DETECTED[name]] if DETECTED[name] else [])


def test_match_reasons_are_informative(tmp_path: Path) -> None:
    assert "mixes Anthropic markers" in OPENAI.match(Source(FIXTURES / "mixed_markers.json"))
    reason = ANTHROPIC.match(Source(FIXTURES / "not_chat_response.json"))
    assert "no top-level `messages` array" in reason and "`choices`" in reason
    assert "block type 'thinking'" in OPENAI.match(Source(FIXTURES / "real_anthropic_tool_with_thinking.json"))
    assert "role 'tool'" in ANTHROPIC.match(Source(FIXTURES / "real_openai_gpt4o_mini_image_tool.json"))
    jsonl = tmp_path / "lines.jsonl"
    jsonl.write_text('{"a": 1}\n{"b": 2}\n', encoding="utf-8")
    assert OPENAI.match(Source(jsonl)).startswith("not a single JSON document")
    trajectory = write(tmp_path, {"messages": [OK_USER], "trajectory_format": "mini-swe-agent-1.1"})
    assert "trajectory" in OPENAI.match(Source(trajectory))


def test_load_file_detects_both_formats_and_lists_reasons_otherwise(tmp_path: Path) -> None:
    from compactlab.sessions.importers import load_file  # needs every sibling importer module

    assert load_file(FIXTURES / "openai_full.json")[0].source_format == "openai-chat"
    assert load_file(FIXTURES / "anthropic_full.json")[0].source_format == "anthropic-messages"
    path = write(tmp_path, {"conversation": [{"speaker": "a", "text": "hi"}]}, "other.json")
    with pytest.raises(SessionError) as error:
        load_file(path)
    message = str(error.value)
    assert "unknown session format" in message
    assert "openai-chat: no top-level `messages` array" in message
    assert "anthropic-messages: no top-level `messages` array" in message
