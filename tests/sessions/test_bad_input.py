"""Bad input: every problem names the file and line, and lenient mode counts what it skips.

The broken files are made in the test from real bundled lines, so they look like real input
with one thing wrong.
"""

from __future__ import annotations

import codecs
import gzip
import json
from pathlib import Path

import pytest

from compactlab.sessions.importers import load_file
from compactlab.sessions.loading import load_inputs
from compactlab.sessions.source import SessionError
from tests.conftest import bundled

REAL = bundled("claude-code-log", "-Users-dain-workspace-claude-code-log-sample__07f2e15c")


def real_lines() -> list[bytes]:
    return gzip.decompress(REAL.read_bytes()).splitlines(keepends=True)


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_empty_file(tmp_path: Path) -> None:
    path = write(tmp_path, "empty.jsonl", b"")
    with pytest.raises(SessionError, match="file is empty") as error:
        load_file(path)
    assert error.value.path == str(path)


def test_empty_file_in_lenient_folder_load_is_counted_not_fatal(tmp_path: Path) -> None:
    write(tmp_path, "empty.jsonl", b"\n\n")
    write(tmp_path, "good.jsonl", b"".join(real_lines()))
    write(tmp_path, "notes.txt", b"not a session")
    loaded = load_inputs([str(tmp_path)], lenient=True)
    assert len(loaded.sessions) == 1
    assert [f.path.name for f in loaded.failed] == ["empty.jsonl"]
    assert [p.name for p in loaded.passed_over] == ["notes.txt"]


def test_truncated_gzip_strict_names_the_cut_line(tmp_path: Path) -> None:
    data = REAL.read_bytes()
    path = write(tmp_path, "cut.jsonl.gz", data[: len(data) // 2])
    with pytest.raises(SessionError, match="truncated .gz"):
        load_file(path)


def test_truncated_gzip_lenient_keeps_what_was_there(tmp_path: Path) -> None:
    data = REAL.read_bytes()
    path = write(tmp_path, "cut.jsonl.gz", data[: len(data) // 2])
    [partial] = load_file(path, lenient=True)
    [whole] = load_file(REAL)
    assert 0 < len(partial.messages) < len(whole.messages)
    reasons = [s.reason for s in partial.skipped]
    assert any("gzip stream truncated" in r for r in reasons)
    assert any("cut off" in r for r in reasons)


def test_not_gzip_at_all(tmp_path: Path) -> None:
    path = write(tmp_path, "broken.jsonl.gz", b"\x1f\x8bthis is not deflate data")
    with pytest.raises(SessionError, match="not a valid gzip file"):
        load_file(path)


def test_invalid_utf8_names_the_line(tmp_path: Path) -> None:
    lines = real_lines()
    lines[4] = lines[4].replace(b"Can you", b"Can \xff you")
    path = write(tmp_path, "bad-utf8.jsonl", b"".join(lines))
    with pytest.raises(SessionError, match="invalid UTF-8") as error:
        load_file(path)
    assert error.value.line == 5
    [session] = load_file(path, lenient=True)
    assert [(s.line, s.reason[:13]) for s in session.skipped] == [(5, "invalid UTF-8")]


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda line: codecs.BOM_UTF8 + line, "invalid JSON: Unexpected UTF-8 BOM"),
        (lambda line: line.replace(b"Can you", b"Can \xed\xa0\x80 you"), "invalid UTF-8"),  # an encoded surrogate
    ],
)
def test_a_line_detection_parsed_is_still_read_strictly(tmp_path: Path, damage, reason: str) -> None:
    # Format detection parses the first lines as bytes, which json.loads accepts with a BOM or an
    # encoded surrogate; reading must not take those values over.
    lines = real_lines()
    lines[4] = damage(lines[4])
    path = write(tmp_path, "damaged-head.jsonl", b"".join(lines))
    with pytest.raises(SessionError, match=reason) as error:
        load_file(path)
    assert error.value.line == 5


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: [d], "expected a JSON object, got list"),
        (lambda d: {**d, "message": "hello"}, "has no `message` object"),
        (lambda d: {**d, "message": {**d["message"], "content": 42}}, "must be a string or a list, got int"),
    ],
)
def test_wrong_json_types(tmp_path: Path, change, expected: str) -> None:
    lines = real_lines()
    record = json.loads(lines[4])  # line 5: the first user message
    lines[4] = json.dumps(change(record)).encode() + b"\n"
    path = write(tmp_path, "types.jsonl", b"".join(lines))
    with pytest.raises(SessionError, match=expected) as error:
        load_file(path)
    assert error.value.line == 5
    [session] = load_file(path, lenient=True)
    assert len(session.skipped) == 1 and session.skipped[0].line == 5


def test_wrong_usage_types(tmp_path: Path) -> None:
    lines = real_lines()
    record = json.loads(lines[5])
    record["message"]["usage"]["input_tokens"] = "four"
    lines[5] = json.dumps(record).encode() + b"\n"
    path = write(tmp_path, "usage.jsonl", b"".join(lines))
    with pytest.raises(SessionError, match="input_tokens. must be a non-negative integer") as error:
        load_file(path)
    assert error.value.line == 6


def test_orphan_tool_result(tmp_path: Path) -> None:
    lines = real_lines()
    # Drop lines 6-7 (the assistant response holding the TodoWrite call); its result on line 8 is then an orphan.
    path = write(tmp_path, "orphan.jsonl", b"".join(lines[:5] + lines[7:]))
    with pytest.raises(SessionError, match="orphan tool result") as error:
        load_file(path)
    assert error.value.line == 6  # the result's line in the shortened file
    [session] = load_file(path, lenient=True)
    assert [s.reason.split(":")[0] for s in session.skipped] == ["orphan tool result"]


def test_unknown_format_lists_every_format_tried(tmp_path: Path) -> None:
    path = write(tmp_path, "other.json", json.dumps({"hello": "world"}).encode())
    with pytest.raises(SessionError) as error:
        load_file(path)
    text = str(error.value)
    assert "unknown session format" in text
    for name in ("claude-code", "mini-swe-agent", "codex-rollout", "openai-chat", "anthropic-messages", "canonical"):
        assert f"  - {name}: " in text


def test_unknown_format_name_suggests_the_closest() -> None:
    with pytest.raises(KeyError, match="Did you mean 'claude-code'"):
        load_file(REAL, format="claude-cod")


@pytest.mark.parametrize("workers", [1, 2])
def test_a_damaged_file_among_good_ones_names_file_and_line_with_or_without_worker_processes(
    tmp_path: Path, workers: int
) -> None:
    lines = real_lines()
    write(tmp_path, "a_good.jsonl", b"".join(lines))
    write(tmp_path, "b_bad.jsonl", b"".join(lines[:3] + [b'{"type": "assistant", "message": \n'] + lines[3:]))
    write(tmp_path, "c_good.jsonl", b"".join(lines))
    with pytest.raises(SessionError) as error:
        load_inputs([str(tmp_path)], workers=workers)
    assert error.value.path.endswith("b_bad.jsonl") and error.value.line == 4
    loaded = load_inputs([str(tmp_path)], lenient=True, workers=workers)
    assert [t.source_path.rsplit("/", 1)[-1] for t in loaded.sessions] == ["a_good.jsonl", "b_bad.jsonl", "c_good.jsonl"]
    assert [len(t.skipped) for t in loaded.sessions] == [0, 1, 0]


def test_files_read_by_worker_processes_are_the_files_read_one_by_one() -> None:
    one = load_inputs(["claude-code-log"], workers=1).sessions
    pool = load_inputs(["claude-code-log"], workers=2).sessions
    assert len(one) > 10 and [t.id for t in pool] == [t.id for t in one]
    assert all(a.messages == b.messages and a.skipped == b.skipped for a, b in zip(one, pool))


def test_worker_processes_freeze_what_they_inherit_collect_less_often_and_the_caller_is_left_as_it_was() -> None:
    import gc

    from compactlab.sessions.datasets import resolve_inputs
    from compactlab.sessions.loading import read_files

    files = resolve_inputs(["condenser-pairs-gpt5mini"]).files
    seen = [read.then for read in read_files(files, workers=2, then=lambda sessions: (gc.get_freeze_count(), gc.get_threshold()))]
    assert len(seen) == len(files) > 1 and min(frozen for frozen, _ in seen) > 10_000  # the collector skips the parent's objects
    assert all(threshold[0] >= 50_000 for _, threshold in seen)  # and runs less often
    assert gc.get_freeze_count() == 0 and gc.isenabled() and gc.get_threshold()[0] < 50_000
