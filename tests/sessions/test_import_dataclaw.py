"""The dataclaw importer on a file written by DataClaw 0.4.2 from bundled real sessions (tests/fixtures/dataclaw)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from compactlab.sessions.importers import load_file
from compactlab.sessions.importers.dataclaw import NO_USAGE
from compactlab.sessions.model import ToolCallPart
from compactlab.sessions.source import SessionError
from tests.conftest import REPO

EXPORT = REPO / "tests" / "fixtures" / "dataclaw" / "conversations.jsonl.gz"


def _rows() -> list[dict]:
    return [json.loads(line) for line in gzip.decompress(EXPORT.read_bytes()).splitlines()]


def test_each_line_is_a_session_with_the_tool_uses_dataclaw_counted() -> None:
    sessions, rows = load_file(EXPORT), _rows()
    assert len(sessions) == len(rows) == 9 and len({t.id for t in sessions}) == 9
    shared = {r["session_id"] for r in rows if sum(o["session_id"] == r["session_id"] for o in rows) > 1}
    of = {f"{r['session_id']}@{r['start_time']}" if r["session_id"] in shared else r["session_id"]: r for r in rows}
    assert sorted(of) == [t.id for t in sessions]
    for session in sessions:
        row = of[session.id]
        calls = [p for m in session.messages for p in m.parts if isinstance(p, ToolCallPart)]
        assert len(calls) == row["stats"]["tool_uses"]
        assert sum(m.role == "user" for m in session.messages) == row["stats"]["user_messages"]
        # DataClaw keeps no call's usage: no recorded call, every assistant message counted as ignored.
        assert session.calls == [] == [m for m in row["messages"] if "usage" in m]
        assert dict(session.ignored)[NO_USAGE] == sum(m["role"] == "assistant" for m in row["messages"])
        assert session.models == (row["model"],)


def test_lines_of_one_session_id_are_named_by_their_start_and_a_repeated_line_is_damage(tmp_path: Path) -> None:
    ids = [t.id for t in load_file(EXPORT)]
    shared = [r for r in _rows() if sum(o["session_id"] == r["session_id"] for o in _rows()) > 1]
    assert len(shared) == 7 and sorted(f"{r['session_id']}@{r['start_time']}" for r in shared) == [i for i in ids if "@" in i]
    assert ids == sorted(ids)
    lines = gzip.decompress(EXPORT.read_bytes()).splitlines()
    path = tmp_path / "conversations.jsonl"
    path.write_bytes(b"\n".join([*lines, lines[0]]))
    with pytest.raises(SessionError, match=":10: duplicate of line 1"):
        load_file(path)
    assert len(load_file(path, lenient=True)) == 9
