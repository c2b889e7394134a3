"""Hostile session text never acts on a terminal or a spreadsheet; unwritable outputs are clean errors."""

from __future__ import annotations

import errno
import gzip
import io
import json
from pathlib import Path

import pandas as pd
import pytest

from compactlab.cli.main import main
from compactlab.report.run_data import load_light
from compactlab.sessions.importers import MESSAGE_BUDGET_VARIABLE, load_file
from compactlab.sessions.neutralise import csv_frame, read_csv, terminal_text, write_csv
from compactlab.sessions.source import GUNZIP_LIMIT_VARIABLE, SessionError
from tests.listed_inputs import CLAUDE, claude_lines, jsonl

ESCAPES = "\x1b[2J\x1b]0;owned\x07\x1b]52;c;ZWNobyBoaQ==\x07\x9b31m\r"


def hostile_session(folder: Path, name: str = "=HYPERLINK(1)\x1b]0;t\x07.jsonl") -> Path:
    lines = claude_lines()
    for record in lines:
        if record.get("type") == "user" and isinstance(record["message"].get("content"), str):
            record["message"]["content"] = f"look {ESCAPES} here"
            break
    else:
        raise AssertionError("the session has no plain user text to make hostile")
    path = folder / name
    path.write_bytes(jsonl(lines))
    return path


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_terminal_text_shows_controls_as_escapes_and_keeps_text() -> None:
    assert terminal_text("a\tb\nc ü 日本") == "a\tb\nc ü 日本"
    assert terminal_text("\x1b]52;c;x\x07\x9b\r") == "\\u001b]52;c;x\\u0007\\u009b\\u000d"


@pytest.mark.parametrize("command", [("inspect",), ("compact", "--strategy", "truncate")])
def test_escape_sequences_in_a_session_do_not_reach_the_terminal(tmp_path: Path, capsys, command) -> None:
    path = hostile_session(tmp_path)
    status, out, err = run(capsys, command[0], str(path), *command[1:])
    assert status == 0
    assert not set(out + err) & set("\x1b\x07\x9b\r")
    if command[0] == "compact":
        assert "look \\u001b[2J" in out  # shown, escaped, not dropped


def test_escape_sequences_in_an_error_message_do_not_reach_the_terminal(tmp_path: Path, capsys) -> None:
    path = tmp_path / "bad\x1b]0;t\x07.jsonl"
    path.write_bytes(b"{not json\n")
    status, out, err = run(capsys, "inspect", str(path))
    assert status == 2 and "compactlab: error:" in err and "\x1b" not in err and "\\u001b]0;t" in err


def test_csv_cells_that_a_spreadsheet_would_run_are_neutralised_and_read_back(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {"id": ["=HYPERLINK(1)", "+1", "-Users-x", "@SUM(A1)", "\tx", "'quoted", "plain"], "tokens": [-5, 1, 2, 3, 4, 5, 6]}
    )
    written = csv_frame(frame)
    assert list(written["id"]) == ["'=HYPERLINK(1)", "'+1", "'-Users-x", "'@SUM(A1)", "'\tx", "''quoted", "plain"]
    assert list(written["tokens"]) == [-5, 1, 2, 3, 4, 5, 6]
    write_csv(frame, tmp_path / "t.csv")
    pd.testing.assert_frame_equal(read_csv(tmp_path / "t.csv"), frame)


def test_estimate_calls_csv_holds_no_formula(tmp_path: Path, capsys) -> None:
    path = hostile_session(tmp_path)
    status, _, err = run(capsys, "estimate", str(path), "--out", str(tmp_path / "est"))
    assert status == 0, err
    ids = pd.read_csv(tmp_path / "est" / "calls.csv")["session"]
    assert len(ids) and all(i.startswith("'=HYPERLINK") for i in ids)


def test_run_sessions_csv_holds_no_formula_and_reads_back(tmp_path: Path, capsys) -> None:
    path = hostile_session(tmp_path)
    status, _, err = run(capsys, "run", "--dataset", str(path), "--strategy", "truncate", "--out", str(tmp_path / "run"))
    assert status == 0, err
    ids = pd.read_csv(tmp_path / "run" / "sessions.csv")["session"]
    assert len(ids) and all(i.startswith("'=HYPERLINK") for i in ids)
    assert all(i.startswith("=HYPERLINK") for i in load_light(tmp_path / "run").sessions["session"])  # read back as it was


@pytest.mark.parametrize("command", [("estimate",), ("export",), ("run", "--strategy", "truncate")])
def test_out_naming_an_existing_file_is_a_clean_error(tmp_path: Path, capsys, command) -> None:
    taken = tmp_path / "taken"
    taken.write_text("x")
    inputs = ["--dataset", str(CLAUDE)] if command[0] == "run" else [str(CLAUDE)]
    status, _, err = run(capsys, command[0], *inputs, *command[1:], "--out", str(taken))
    assert status == 2 and f"compactlab: error: {taken}" in err


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EACCES, errno.EROFS])
def test_a_full_disk_or_read_only_folder_at_write_is_a_clean_error(tmp_path: Path, capsys, monkeypatch, code) -> None:
    real_open = io.open

    def failing_open(file, mode="r", *args, **kwargs):
        if any(m in mode for m in "wax") and str(tmp_path / "out") in str(file):
            raise OSError(code, __import__("os").strerror(code), str(file))
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(io, "open", failing_open)
    monkeypatch.setattr("builtins.open", failing_open)
    status, _, err = run(capsys, "export", str(CLAUDE), "--out", str(tmp_path / "out"))
    assert status == 2 and __import__("os").strerror(code) in err and str(tmp_path / "out") in err


def test_a_gzip_bomb_stops_at_the_documented_limit(tmp_path: Path, monkeypatch) -> None:
    bomb = tmp_path / "bomb.jsonl.gz"
    bomb.write_bytes(gzip.compress(b"\0" * (80 << 20), compresslevel=9))
    with pytest.raises(SessionError, match=f"more than 64 MiB.*{GUNZIP_LIMIT_VARIABLE}"):
        load_file(bomb)
    monkeypatch.setenv(GUNZIP_LIMIT_VARIABLE, "100")
    with pytest.raises(SessionError, match="not valid JSON|invalid|unknown session format"):
        load_file(bomb)  # read whole now, and refused for what it is


def test_a_message_over_the_budget_is_a_clean_error_naming_its_line(tmp_path: Path, monkeypatch) -> None:
    lines = claude_lines()
    user = next(i for i, r in enumerate(lines) if r.get("type") == "user" and isinstance(r["message"].get("content"), str))
    lines[user]["message"]["content"] = "x" * (3 << 20)
    path = tmp_path / "huge.jsonl"
    path.write_bytes(jsonl(lines))
    with pytest.raises(SessionError, match="3.0 MiB of text, over the per-message budget of 2 MiB") as error:
        load_file(path, lenient=True)
    assert error.value.line == user + 1
    monkeypatch.setenv(MESSAGE_BUDGET_VARIABLE, "4")
    assert load_file(path)[0].messages


def test_a_non_utf8_file_name_is_read_and_shown(tmp_path: Path, capsys) -> None:
    import os

    path = os.fsdecode(bytes(tmp_path / "s-") + b"\xff.jsonl.gz")
    Path(path).write_bytes(CLAUDE.read_bytes())
    [session] = load_file(path)
    assert session.id == "s-\\xff"
    status, out, _ = run(capsys, "inspect", path)
    assert status == 0 and "s-\\xff" in out
    json.dumps(session.id).encode("utf-8")
