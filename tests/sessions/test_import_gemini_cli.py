"""The Gemini CLI importer against a session file written by Gemini CLI's own recording code
(tests/fixtures/gemini_cli/README.md says how). The counts compared are taken straight from the JSON
lines here, not through the importer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compactlab.sessions.importers import detect, load_file
from compactlab.sessions.model import ToolCallPart, ToolResultPart
from compactlab.sessions.source import SessionError, Source

[FIXTURE] = sorted((Path(__file__).resolve().parents[1] / "fixtures" / "gemini_cli").glob("*.jsonl"))


def _lines() -> list[dict]:
    return [json.loads(line) for line in FIXTURE.read_text().splitlines() if line.strip()]


def test_the_calls_are_the_replies_with_tokens_on_the_path_the_session_ended_on() -> None:
    lines = _lines()
    # Independent count: message ids in first-recorded order, $rewindTo cutting the list at its id.
    order: list[str] = []
    tokens: dict[str, dict] = {}
    for record in lines:
        if "$rewindTo" in record:
            del order[order.index(record["$rewindTo"]) :]
        elif "id" in record and record["id"] not in order:
            order.append(record["id"])
        if record.get("type") == "gemini" and record.get("tokens"):
            tokens[record["id"]] = record["tokens"]
    recorded = [tokens[i] for i in order if i in tokens]
    [session] = load_file(FIXTURE)
    assert detect(Source(FIXTURE)).name == "gemini-cli" and session.id == lines[0]["sessionId"]
    assert len(session.calls) == len(recorded) == 8
    assert [c.prompt_tokens for c in session.calls] == [t["input"] + t["tool"] for t in recorded]
    assert [c.cache_read_tokens for c in session.calls] == [t["cached"] for t in recorded]
    assert [c.output_tokens for c in session.calls] == [t["output"] + t["thoughts"] for t in recorded]
    assert all(c.prompt_tokens + c.output_tokens == t["total"] for c, t in zip(session.calls, recorded))
    assert dict(session.ignored) == {"rewound_message": 2} and session.models == ("gemini-2.5-pro",)


def test_the_compression_rewrite_is_a_real_compaction_with_its_summary_and_kept_tail() -> None:
    lines = _lines()
    [rewrite] = [n for n, record in enumerate(lines, start=1) if "messages" in record.get("$set", {})]
    new = lines[rewrite - 1]["$set"]["messages"]
    [session] = load_file(FIXTURE)
    [marker] = session.compactions
    assert marker.line == rewrite and marker.summary.startswith(new[0]["content"][0]["text"])
    # Kept: the rewrite's messages after the summary pair, by their ids.
    assert [session.messages[k].source_id for k in marker.kept] == [m["id"] for m in new[2:]]
    before = {r["id"] for r in lines[: rewrite - 1] if "id" in r and r["type"] != "gemini" or r.get("tokens")}
    assert all(m.source_id in before for m in session.messages[: marker.at_message])
    assert session.messages[marker.at_message].text() == "Now run the tests."
    # The summary turns are the compaction's summary, not messages.
    assert not {m["id"] for m in new[:2]} & {m.source_id for m in session.messages}


def test_tool_calls_pair_with_the_recorded_tool_responses_once() -> None:
    [session] = load_file(FIXTURE)
    calls = [p.id for m in session.messages for p in m.parts if isinstance(p, ToolCallPart)]
    results = [p.call_id for m in session.messages for p in m.parts if isinstance(p, ToolResultPart)]
    assert calls == results == ["call-1", "call-2", "call-3", "call-4"]


def test_a_damaged_line_names_its_line_or_is_counted(tmp_path: Path) -> None:
    lines = FIXTURE.read_text().splitlines()
    lines[3] = lines[3].replace('"type":"gemini"', '"type":"narrator"')
    damaged = tmp_path / FIXTURE.name
    damaged.write_text("\n".join(lines) + "\n")
    with pytest.raises(SessionError, match=r":4: `type`: expected one of .*'narrator'"):
        load_file(damaged)
    [session] = load_file(damaged, lenient=True)
    assert [s.line for s in session.skipped] == [4]


def test_a_rewrite_moved_before_the_turns_it_keeps_is_damage_not_a_different_history(tmp_path: Path) -> None:
    lines = FIXTURE.read_text().splitlines()
    [rewrite] = [n for n, line in enumerate(lines) if '"$set":{"messages"' in line]
    response = next(n for n, line in enumerate(lines) if '"type":"user","content":[{"functionResponse":{"id":"call-3"' in line)
    moved = lines[:response] + [lines[rewrite]] + lines[response:rewrite] + lines[rewrite + 1 :]
    damaged = tmp_path / FIXTURE.name
    damaged.write_text("\n".join(moved) + "\n")
    with pytest.raises(
        SessionError, match=rf":{response + 2}: message .* recorded after the history rewrite at line {response + 1}"
    ):
        load_file(damaged)
    [session] = load_file(damaged, lenient=True)
    assert session.skipped and all("recorded after the history rewrite" in s.reason for s in session.skipped)
