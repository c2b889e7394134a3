"""The opencode importer on stores written by opencode's own binaries (tests/fixtures/opencode)."""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path

import pytest

from compactlab.sessions.importers import load_file
from compactlab.sessions.source import SessionError
from tests.conftest import REPO

FIXTURES = REPO / "tests" / "fixtures" / "opencode"
DATABASE = FIXTURES / "opencode-1.18.33.db.gz"
STORAGE = FIXTURES / "storage-1.1.65"


def _database(tmp_path: Path) -> Path:
    path = tmp_path / "opencode.db"
    path.write_bytes(gzip.decompress(DATABASE.read_bytes()))
    return path


def _steps(infos_and_parts: list[tuple[dict, list[dict]]]) -> list[dict]:
    """The tokens of every step of the conversation's assistant messages (the summarizer's aside)."""
    return [
        part["tokens"]
        for info, parts in infos_and_parts
        if info["role"] == "assistant" and not info.get("summary")
        for part in parts
        if part["type"] == "step-finish"
    ]


def _rows(path: Path) -> list[tuple[dict, list[dict]]]:
    with sqlite3.connect(path) as db:
        messages = db.execute("select id, data from message order by time_created, id").fetchall()
        return [
            (
                json.loads(data),
                [json.loads(p) for (p,) in db.execute("select data from part where message_id = ? order by id", (mid,))],
            )
            for mid, data in messages
        ]


def test_the_database_s_calls_are_its_steps_with_usage_as_recorded(tmp_path: Path) -> None:
    path = _database(tmp_path)
    (session,) = load_file(path)
    steps = _steps(_rows(path))
    assert len(session.calls) == len(steps) == 12
    # opencode stores `input` without the cached tokens: the prompt is input + cache read + write.
    assert [c.prompt_tokens for c in session.calls] == [s["input"] + s["cache"]["read"] + s["cache"]["write"] for s in steps]
    assert [c.output_tokens for c in session.calls] == [s["output"] for s in steps]
    assert load_file(DATABASE)[0].calls == session.calls  # the gzipped copy reads the same


def test_the_database_s_compaction_keeps_the_tail_opencode_named(tmp_path: Path) -> None:
    path = _database(tmp_path)
    (session,) = load_file(path)
    rows = _rows(path)
    compactions = [p for _, parts in rows for p in parts if p["type"] == "compaction"]
    (marker,) = session.compactions
    assert len(compactions) == 1 and marker.trigger == "auto"
    tail = compactions[0]["tail_start_id"]
    assert session.messages[marker.kept[0]].source_id == tail and marker.kept[-1] == marker.at_message - 1
    summarizer = next(info for info, _ in rows if info.get("summary") is True)
    assert marker.usage is not None and marker.usage.input_tokens == summarizer["tokens"]["input"]
    with sqlite3.connect(path) as db:
        (summarizer_id,) = db.execute("select id from message where data like '%\"summary\":true%'").fetchone()
    assert marker.summary.startswith("## Goal") and all(summarizer_id not in str(m.source_id) for m in session.messages)


def test_the_json_storage_s_calls_and_compactions_are_its_files(tmp_path: Path) -> None:
    (session_file,) = STORAGE.glob("session/*/ses_*.json")
    (session,) = load_file(session_file)
    rows = []
    for message in sorted((STORAGE / "message").glob("*/msg_*.json")):
        info = json.loads(message.read_text())
        rows.append((info, [json.loads(p.read_text()) for p in sorted((STORAGE / "part" / message.stem).glob("*.json"))]))
    rows.sort(key=lambda row: row[0]["time"]["created"])
    steps = _steps(rows)
    assert len(session.calls) == len(steps) == 17
    assert [c.input_tokens for c in session.calls] == [s["input"] for s in steps]
    compactions = sum(p["type"] == "compaction" for _, parts in rows for p in parts)
    assert len(session.compactions) == compactions == 5 and all(m.kept == () for m in session.compactions)


def test_a_part_that_is_not_json_is_a_damaged_record_naming_it(tmp_path: Path) -> None:
    path = _database(tmp_path)
    with sqlite3.connect(path) as db:
        (part_id,) = db.execute("select id from part where data like '%step-finish%' order by id limit 1").fetchone()
        db.execute('update part set data = \'{"type": "step-fin\' where id = ?', (part_id,))
    with pytest.raises(SessionError, match=f"part {part_id}: its JSON is not valid"):
        load_file(path)
    (session,) = load_file(path, lenient=True)
    # The part is skipped, and the step it ended runs on into the next one: one call fewer.
    assert [s.reason[:30] for s in session.skipped] == [f"part {part_id}: its JSON"[:30]] and len(session.calls) == 11


def test_a_database_of_another_program_is_refused_naming_its_tables(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as db:
        db.execute("create table sessions (id text)")
    with pytest.raises(SessionError, match="without opencode's tables"):
        load_file(path, format="opencode")
    with pytest.raises(SessionError, match="unknown session format"):
        load_file(path)
