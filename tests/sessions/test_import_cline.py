"""The cline-session importer on Cline's own real session fixtures (tests/fixtures/cline, Apache-2.0)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compactlab.sessions.importers import load_file
from compactlab.sessions.model import ToolCallPart, ToolResultPart
from compactlab.sessions.source import SessionError
from tests.conftest import REPO

FIXTURES = REPO / "tests" / "fixtures" / "cline"


def _recorded_calls(path: Path) -> list[dict]:
    """The metrics of every message that records them, read with json alone."""
    return [m["metrics"] for m in json.loads(path.read_text())["messages"] if m.get("metrics")]


@pytest.mark.parametrize("name", ["session.messages.json", "agentic.compaction.json", "basic.compaction.json"])
def test_calls_are_the_messages_with_metrics_and_usage_is_as_recorded(name: str) -> None:
    path = FIXTURES / name
    (session,) = load_file(path)
    recorded = _recorded_calls(path)
    assert len(session.calls) == len(recorded)
    # inputTokens is the whole prompt (Cline prices inputTokens - cacheRead - cacheWrite as uncached).
    assert [c.prompt_tokens for c in session.calls] == [m["inputTokens"] for m in recorded]
    assert [c.cache_read_tokens for c in session.calls] == [m["cacheReadTokens"] for m in recorded]
    assert [c.output_tokens for c in session.calls] == [m["outputTokens"] for m in recorded]
    assert [c.cost_usd for c in session.calls] == [m["cost"] for m in recorded]
    assert session.source_format == "cline-session" and session.id == "1784094124598_rruoq"


def test_the_uncompacted_session_pairs_every_tool_call_with_its_result() -> None:
    path = FIXTURES / "session.messages.json"
    (session,) = load_file(path)
    blocks = [b for m in json.loads(path.read_text())["messages"] for b in m["content"] if isinstance(b, dict)]
    calls = {p.id for m in session.messages for p in m.parts if isinstance(p, ToolCallPart)}
    results = {p.call_id for m in session.messages for p in m.parts if isinstance(p, ToolResultPart)}
    assert len(calls) == sum(b["type"] == "tool_use" for b in blocks) == 11 and calls == results
    assert session.compactions == () and session.models == ("anthropic/claude-opus-4.8-fast", "mistralai/voxtral-small-24b-2507")


def test_agentic_compaction_is_a_marker_with_cline_s_summary_and_tokens_before() -> None:
    raw = json.loads((FIXTURES / "agentic.compaction.json").read_text())["messages"][0]
    (session,) = load_file(FIXTURES / "agentic.compaction.json")
    (marker,) = session.compactions
    assert marker.summary == raw["content"][0]["text"] and marker.summary.startswith("Context summary:\n\n")
    assert marker.pre_tokens == raw["metadata"]["tokensBefore"] == 21919
    # The turn after the summary was recorded before the compaction (its ts is older than generatedAt): kept.
    assert marker.at_message == len(session.messages) == 2 and marker.kept == (0, 1)
    assert all("Context summary" not in m.text() for m in session.messages)


def test_basic_compaction_is_a_manual_marker_after_the_preserved_replies() -> None:
    (session,) = load_file(FIXTURES / "basic.compaction.json")
    (marker,) = session.compactions
    assert marker.trigger == "manual" and marker.pre_tokens is None
    assert marker.at_message == 10 and marker.kept == tuple(range(10))
    assert "<SYSTEM_NOTICE>" in session.messages[0].text()


def test_metrics_whose_cached_part_exceeds_the_prompt_are_a_damaged_record(tmp_path: Path) -> None:
    data = json.loads((FIXTURES / "session.messages.json").read_text())
    data["messages"][1]["metrics"]["cacheReadTokens"] = data["messages"][1]["metrics"]["inputTokens"] + 1
    path = tmp_path / "damaged.messages.json"
    path.write_text(json.dumps(data))
    with pytest.raises(SessionError, match=r"messages\[1\]: `metrics.inputTokens` is less than"):
        load_file(path)
    (session,) = load_file(path, lenient=True)
    assert len(session.calls) == 15 and len(session.skipped) == 1
