"""The summarizer call a log records for a real compaction (`CompactionMarker.usage`).

Only Anthropic's server-side compaction records it in the shared, bundled and development data's
formats (checked in issue 47: pi's compaction entry up to pi 0.58.3 holds summary,
firstKeptEntryId, tokensBefore and details; Claude Code's compact_boundary holds trigger,
preTokens and, from 2.1.8x, postTokens and durationMs; Codex's rollout records
`context_compacted` with no counts, its analytics event going to the analytics endpoint). No real
log holds a compaction iteration, so the response is Anthropic's documented one
(tests/fixtures/json_chat/docs_anthropic_compaction.json, verbatim from the docs), damaged here
for the other cases.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from compactlab.sessions.importers import load_file
from compactlab.sessions.importers.canonical import SCHEMA_PATH, session_lines, write_canonical
from compactlab.sessions.model import TextPart
from compactlab.sessions.source import SessionError

DOCUMENTED = Path(__file__).parents[1] / "fixtures" / "json_chat" / "docs_anthropic_compaction.json"


def documented() -> dict:
    return json.loads(DOCUMENTED.read_text(encoding="utf-8"))


def written(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "conversation.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_the_documented_response_is_a_compaction_billed_apart_from_its_call() -> None:
    [session] = load_file(DOCUMENTED)
    [marker] = session.compactions
    usage = documented()["messages"][1]["usage"]
    compaction, message = usage["iterations"]
    # The summarizer: the compaction iteration (180,000 in, 3,500 out), which the top level leaves out.
    assert marker.usage is not None and marker.usage.model == "claude-opus-4-6"
    assert (marker.usage.input_tokens, marker.usage.output_tokens) == (compaction["input_tokens"], compaction["output_tokens"])
    assert marker.pre_tokens == compaction["input_tokens"] and marker.trigger == "auto"
    assert marker.summary == documented()["messages"][1]["content"][0]["content"]
    # Before the message whose response holds it; the message keeps the blocks after it, and its call
    # is the message iteration (the compacted context), not the top-level 45,000.
    assert marker.at_message == 1 and session.messages[1].parts == (TextPart(text="Based on our conversation so far..."),)
    [call] = session.calls
    assert (call.prompt_tokens, call.output_tokens) == (message["input_tokens"], message["output_tokens"])
    assert call.prompt_tokens != usage["input_tokens"]


def test_a_response_paused_after_compaction_has_no_call_of_its_own(tmp_path: Path) -> None:
    data = documented()
    paused = data["messages"][1]
    paused["content"] = paused["content"][:1]  # "Response contains only the compaction block"
    paused["usage"]["iterations"] = paused["usage"]["iterations"][:1]
    data["messages"] += [{"role": "user", "content": "Now add error handling"}]
    [session] = load_file(written(tmp_path, data))
    [marker] = session.compactions
    assert marker.at_message == 1 and marker.usage is not None and marker.usage.input_tokens == 180000
    assert session.messages[1].call is None and session.calls == []


def test_without_the_threshold_edit_the_trigger_is_unknown(tmp_path: Path) -> None:
    data = documented()
    del data["context_management"]
    [session] = load_file(written(tmp_path, data))
    assert session.compactions[0].trigger == "unknown"


def test_a_damaged_iteration_is_named(tmp_path: Path) -> None:
    data = documented()
    data["messages"][1]["usage"]["iterations"][0]["input_tokens"] = -5
    with pytest.raises(SessionError, match=r"messages\[1\]\.usage\.iterations\[0\]: usage `input_tokens`"):
        load_file(written(tmp_path, data))


def test_a_compaction_iteration_without_a_compaction_block_is_named(tmp_path: Path) -> None:
    data = documented()
    data["messages"][1]["content"] = data["messages"][1]["content"][1:]
    with pytest.raises(SessionError, match=r"iterations holds a compaction iteration but the message has no compaction block"):
        load_file(written(tmp_path, data))


def test_the_canonical_form_keeps_the_summarizer_usage_and_follows_the_schema(tmp_path: Path) -> None:
    [session] = load_file(DOCUMENTED)
    [again] = load_file(write_canonical([session], tmp_path / "one.jsonl"))
    assert again == session and again.compactions[0].usage == session.compactions[0].usage
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text()))
    lines = session_lines(session)
    for line in lines:
        validator.validate(json.loads(json.dumps(line)))
    [compaction] = [line for line in lines if line.get("type") == "compaction"]
    compaction["usage"]["output_tokens"] = -1
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(SessionError, match=r"bad canonical record: usage\.output_tokens"):
        load_file(bad)
