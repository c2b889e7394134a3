"""Records damaged as a writer damages them are noticed, not read as more of the session (issue 45).

Each test takes a real file (a fixture or a bundled dataset), damages it as two writers, a copy or
an edit would, and asserts what compactlab does: strictly an error naming the file and line, leniently
a counted skip; or, for a change that keeps the file valid (a byte-order mark), the undamaged result.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from compactlab.sessions.importers import load_file
from compactlab.sessions.importers.canonical import write_canonical
from compactlab.sessions.loading import load_inputs
from compactlab.sessions.source import SessionError
from tests.damaged_inputs import interleaved

REPO = Path(__file__).resolve().parents[2]
CLAUDE = REPO / "datasets/claude-code-log/sessions/-src-experiments-claude_p__2b4ed4c0-b905-41de-9238-273db3ec737a.jsonl.gz"
CLAUDE_SMALL = REPO / "datasets/m-claude/sessions/91b751c5-d980-47ef-bfae-1daff58e4470.jsonl.gz"
RESUMED = REPO / "datasets/m-claude/sessions/ff33b5b0-cc51-4271-a3eb-545a85882e5f.jsonl.gz"  # holds its parent's lines
CODEX = REPO / "tests/fixtures/codex/streaming-order-compaction.jsonl"
PI = REPO / "datasets/pi-sessions/sessions/compact.jsonl.gz"
OPENAI = REPO / "tests/fixtures/json_chat/real_openai_gpt4o_mini_image_tool.json"
MINI = REPO / "tests/fixtures/mini_swe_agent/v1_modelled_django__django-11099.traj.json"
ANTHROPIC = REPO / "tests/fixtures/json_chat/real_anthropic_tool_with_thinking.json"


def lines_of(path: Path) -> list[bytes]:
    data = path.read_bytes()
    return [line for line in (gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data).split(b"\n") if line.strip()]


def write(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def shape(sessions) -> list[tuple]:
    """What a damaged record must not change: message counts, calls and compactions (lines aside)."""
    return [(len(t.messages), tuple(t.calls), tuple((c.at_message, c.kept, c.summary) for c in t.compactions)) for t in sessions]


def refused_and_counted(path: Path, line: int, says: str) -> list:
    """Strict: an error naming `path`:`line` and saying `says`; lenient: the sessions, with that skip
    counted first (what follows from it, a tool result whose call was skipped say, is counted too)."""
    with pytest.raises(SessionError) as error:
        load_file(path)
    assert error.value.path == str(path) and error.value.line == line and says in error.value.what
    sessions = load_file(path, lenient=True)
    assert [(s.line, says in s.reason) for s in sessions[0].skipped][:1] == [(line, True)]
    return sessions


# --- two sessions in one file ----------------------------------------------------------------------


def test_two_claude_code_sessions_interleaved_in_one_file_are_read_as_the_two(tmp_path: Path) -> None:
    first, second = load_file(CLAUDE), load_file(CLAUDE_SMALL)
    path = tmp_path / CLAUDE.name.removesuffix(".gz")
    path.write_bytes(interleaved(b"\n".join(lines_of(CLAUDE)), b"\n".join(lines_of(CLAUDE_SMALL))))
    sessions = load_file(path)
    assert shape(sessions) == shape(first) + shape(second)
    assert [t.id for t in sessions] == [first[0].id, f"{first[0].id}/session-{CLAUDE_SMALL.name.split('.')[0]}"]


def test_a_resumed_session_carrying_its_parents_ids_stays_one_session() -> None:
    # Its first lines are its parent's, under the parent's sessionId, linked by parentUuid.
    ids = {json.loads(line).get("sessionId") for line in lines_of(RESUMED)} - {None}
    assert len(ids) == 2
    assert [t.id for t in load_file(RESUMED)] == [RESUMED.name.split(".")[0]]


# --- a record written twice --------------------------------------------------------------------------


@pytest.mark.parametrize(("source", "kind"), [(CODEX, "compacted"), (PI, "compaction")])
def test_a_compaction_written_twice_is_a_damaged_record(tmp_path: Path, source: Path, kind: str) -> None:
    lines = lines_of(source)
    at = next(i for i, line in enumerate(lines) if json.loads(line).get("type") == kind)
    path = write(tmp_path / source.name.removesuffix(".gz"), lines[: at + 1] + lines[at:])
    sessions = refused_and_counted(path, at + 2, "written twice")
    assert [c.kept for c in sessions[0].compactions] == [c.kept for c in load_file(source)[0].compactions]


def test_a_canonical_compaction_written_twice_is_a_damaged_record(tmp_path: Path) -> None:
    lines = lines_of(write_canonical(load_file(CODEX), tmp_path / "codex.jsonl"))
    at = next(i for i, line in enumerate(lines) if json.loads(line).get("type") == "compaction")
    path = write(tmp_path / "twice.jsonl", lines[: at + 1] + lines[at:])
    sessions = refused_and_counted(path, at + 2, "written twice")
    assert len(sessions[0].compactions) == 1


def test_a_pi_message_written_twice_is_a_damaged_record(tmp_path: Path) -> None:
    lines = lines_of(PI)
    path = write(tmp_path / "pi.jsonl", lines[:3] + lines[2:])
    sessions = refused_and_counted(path, 4, "written twice")
    assert shape(sessions) == shape(load_file(PI))


# --- records out of order ------------------------------------------------------------------------------


def test_a_canonical_tool_result_before_its_call_is_an_error(tmp_path: Path) -> None:
    lines = lines_of(write_canonical(load_file(CLAUDE), tmp_path / "c.jsonl"))
    result = next(i for i, line in enumerate(lines) if b'"tool_result"' in line)
    moved = [lines[0], lines[result], *(line for i, line in enumerate(lines[1:], 1) if i != result)]
    path = write(tmp_path / "moved.jsonl", moved)
    sessions = refused_and_counted(path, 2, "orphan tool result")
    assert len(sessions[0].messages) < len(load_file(CLAUDE)[0].messages)


def test_claude_code_lines_swapped_against_their_parent_links_are_an_error(tmp_path: Path) -> None:
    lines = lines_of(CLAUDE)
    records = [json.loads(line) for line in lines]
    at = next(
        i
        for i in range(len(lines) - 1)
        if records[i].get("type") == "assistant" and records[i + 1].get("parentUuid") == records[i].get("uuid")
    )
    lines[at], lines[at + 1] = lines[at + 1], lines[at]
    refused_and_counted(write(tmp_path / "swapped.jsonl", lines), at + 1, "records out of order")


# --- usage that is no count ----------------------------------------------------------------------------


def _usage_line(lines: list[bytes], key: str) -> int:
    return next(i for i, line in enumerate(lines) if f'"{key}"'.encode() in line)


@pytest.mark.parametrize("value", [None, 10**9, 2**53])
def test_a_claude_code_usage_count_null_or_huge_is_a_damaged_record(tmp_path: Path, value: object) -> None:
    lines = lines_of(CLAUDE)
    at = _usage_line(lines, "cache_read_input_tokens")
    record = json.loads(lines[at])
    record["message"]["usage"]["cache_read_input_tokens"] = value
    lines[at] = json.dumps(record).encode()
    refused_and_counted(write(tmp_path / "usage.jsonl", lines), at + 1, "cache_read_input_tokens")


@pytest.mark.parametrize("value", ["null", "Infinity", "1000000000"])
def test_a_pi_usage_count_null_infinite_or_huge_is_a_damaged_record(tmp_path: Path, value: str) -> None:
    lines = lines_of(PI)
    at = _usage_line(lines, "cacheRead")
    record = json.loads(lines[at])
    record["message"]["usage"]["cacheRead"] = "MARK"
    lines[at] = json.dumps(record).replace('"MARK"', value).encode()
    refused_and_counted(write(tmp_path / "usage.jsonl", lines), at + 1, "usage.cacheRead")


@pytest.mark.parametrize(("source", "key"), [(OPENAI, "prompt_tokens"), (ANTHROPIC, "input_tokens")])
def test_a_json_chat_usage_count_null_or_huge_is_a_damaged_record(tmp_path: Path, source: Path, key: str) -> None:
    for value in ("null", "1000000000"):
        path = tmp_path / source.name
        path.write_text(source.read_text().replace(f'"{key}": ', f'"{key}": {value}, "was": ', 1))
        with pytest.raises(SessionError, match=key):
            load_file(path)
        assert load_file(path, lenient=True)[0].skipped


def test_a_mini_swe_agent_cached_count_null_is_a_damaged_record(tmp_path: Path) -> None:
    doc = json.loads(MINI.read_text())
    usage = next(m["extra"]["response"]["usage"] for m in doc["messages"] if "response" in m.get("extra", {}))
    usage["prompt_tokens_details"]["cached_tokens"] = None
    path = tmp_path / MINI.name
    path.write_text(json.dumps(doc))
    with pytest.raises(SessionError, match="cached_tokens: null"):
        load_file(path)
    assert load_file(path, lenient=True)[0].skipped


def test_a_canonical_call_count_past_any_context_is_a_damaged_record(tmp_path: Path) -> None:
    lines = lines_of(write_canonical(load_file(CLAUDE_SMALL), tmp_path / "c.jsonl"))
    at = _usage_line(lines, "cache_read_tokens")
    record = json.loads(lines[at])
    record["call"]["cache_read_tokens"] = 10**9
    lines[at] = json.dumps(record).encode()
    refused_and_counted(write(tmp_path / "huge.jsonl", lines), at + 1, "cache_read_tokens")


# --- a byte-order mark ---------------------------------------------------------------------------------


@pytest.mark.parametrize("source", [CLAUDE, CODEX, PI, OPENAI, "canonical"])
def test_a_utf8_byte_order_mark_is_read(tmp_path: Path, source: Path | str) -> None:
    if source == "canonical":
        source = write_canonical(load_file(CLAUDE), tmp_path / "canonical.jsonl")
    assert isinstance(source, Path)
    data = source.read_bytes()
    data = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
    name = source.name.removesuffix(".gz")
    (tmp_path / "bom").mkdir()
    plain, zipped = tmp_path / "bom" / name, tmp_path / "bom" / f"z-{name}.gz"
    plain.write_bytes(b"\xef\xbb\xbf" + data)
    zipped.write_bytes(gzip.compress(b"\xef\xbb\xbf" + data))
    for path in (plain, zipped):
        sessions = load_file(path)
        assert shape(sessions) == shape(load_file(source)) and not any(t.skipped for t in sessions)


# --- links out of the dataset folder ---------------------------------------------------------------------


def test_file_links_out_of_the_dataset_folder_are_not_read(tmp_path: Path) -> None:
    folder, outside = tmp_path / "data", tmp_path / "elsewhere"
    folder.mkdir()
    outside.mkdir()
    (folder / CLAUDE_SMALL.name).write_bytes(CLAUDE_SMALL.read_bytes())
    (outside / CLAUDE.name).write_bytes(CLAUDE.read_bytes())
    (folder / "other.jsonl.gz").symlink_to(outside / CLAUDE.name)
    (folder / "passwd.jsonl").symlink_to("/etc/passwd")
    (folder / "inside.jsonl.gz").symlink_to(folder / CLAUDE_SMALL.name)  # inside: the same file, read once
    loaded = load_inputs([str(folder)], lenient=True, workers=1)
    assert [t.id for t in loaded.sessions] == [CLAUDE_SMALL.name.split(".")[0]]
    assert sorted((f.path.name, f.error.split(": ", 1)[1]) for f in loaded.failed) == [
        ("other.jsonl.gz", f"a link to the file {outside / CLAUDE.name}, outside the folder named: not read"),
        ("passwd.jsonl", "a link to the file /etc/passwd, outside the folder named: not read"),
    ]
    with pytest.raises(SessionError, match="outside the folder named: not read"):
        load_inputs([str(folder)], workers=1)
    # A link the user names is what they asked for: it is read.
    assert load_inputs([str(folder / "other.jsonl.gz")], workers=1).sessions
