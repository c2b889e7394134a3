"""Canonical JSONL: lossless round trip on every bundled session, and valid against its schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from compactlab.sessions.importers import load_file
from compactlab.sessions.importers.canonical import SCHEMA_PATH, session_lines, write_canonical
from compactlab.sessions.loading import load_inputs
from compactlab.sessions.source import SessionError

ALL = load_inputs(None).sessions


def test_every_bundled_session_round_trips(tmp_path: Path) -> None:
    assert len(ALL) > 100
    by_file: dict[str, list] = {}
    for session in ALL:
        by_file.setdefault(session.source_path, []).append(session)
    for index, (source_path, sessions) in enumerate(by_file.items()):
        path = write_canonical(sessions, tmp_path / f"{index}.jsonl.gz")
        again = load_file(path)
        assert again == sessions, source_path


def test_round_trip_keeps_markers_skips_and_ignored(tmp_path: Path) -> None:
    [original] = [t for t in ALL if t.id.startswith("3af9b1a7")]
    assert original.compactions and original.skipped and original.ignored
    [again] = load_file(write_canonical([original], tmp_path / "one.jsonl"))
    assert again.compactions == original.compactions
    assert again.skipped == original.skipped
    assert again.ignored == original.ignored
    assert again.calls == original.calls


@pytest.mark.parametrize("source_format", sorted({t.source_format for t in ALL}))
def test_exported_lines_follow_the_schema(source_format: str) -> None:
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text()))
    for session in [t for t in ALL if t.source_format == source_format][:5]:
        for line in session_lines(session):
            validator.validate(json.loads(json.dumps(line)))


def test_unsupported_version_is_named(tmp_path: Path) -> None:
    path = tmp_path / "future.jsonl"
    lines = session_lines(ALL[0])
    lines[0]["version"] = 99
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(SessionError, match="canonical version 99 is not supported") as error:
        load_file(path)
    assert error.value.line == 1


def test_bad_record_is_named(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    lines = session_lines(ALL[0])
    lines[2]["role"] = "robot"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(SessionError, match="unknown role 'robot'") as error:
        load_file(path)
    assert error.value.line == 3
    [session] = load_file(path, lenient=True)
    assert len(session.messages) == len(ALL[0].messages) - 1
