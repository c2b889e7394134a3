"""The pi session importer, on the two bundled real pi sessions (and one of them turned into pi's
version-3 tree layout with an abandoned branch, edited in one controlled place)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from compactlab.replay.replay import replay
from compactlab.replay.setting import Setting
from compactlab.sessions.importers import detect, load_file
from compactlab.sessions.importers.canonical import write_canonical
from compactlab.sessions.importers.pi_session import SUMMARY_PREFIX
from compactlab.sessions.source import Source
from tests.conftest import bundled

BEFORE = bundled("pi-sessions", "pi-mono-before-compaction")
COMPACT = bundled("pi-sessions", "compact")


def raw_entries(path: Path) -> list[tuple[int, dict]]:
    """Every entry of a pi file with its line, read independently of the importer (a line may hold
    two JSON objects back to back)."""
    decoder, found = json.JSONDecoder(), []
    for number, line in enumerate(gzip.open(path, "rt", encoding="utf-8").read().split("\n"), 1):
        position, line = 0, line.strip()
        while position < len(line):
            value, position = decoder.raw_decode(line, position)
            found.append((number, value))
    return found


def measured_calls(path: Path) -> list[tuple[int, int, int, int]]:
    """(input, cacheRead, cacheWrite, output) of each assistant message whose usage counts a prompt."""
    calls = []
    for _, entry in raw_entries(path):
        message = entry.get("message") or {}
        usage = message.get("usage") or {}
        if message.get("role") == "assistant" and usage.get("input", 0) + usage.get("cacheRead", 0) + usage.get("cacheWrite", 0):
            calls.append((usage["input"], usage["cacheRead"], usage["cacheWrite"], usage["output"]))
    return calls


@pytest.mark.parametrize("path", [BEFORE, COMPACT], ids=["before-compaction", "compact"])
def test_calls_equal_an_independent_count(path: Path) -> None:
    [session] = load_file(path)  # strict: the real files hold no damaged record
    assert session.source_format == "pi-session"
    calls = [(c.input_tokens, c.cache_read_tokens, c.cache_write_tokens, c.output_tokens) for c in session.calls]
    assert calls == measured_calls(path)
    assert len(calls) == {BEFORE: 471, COMPACT: 498}[path]
    assert session.models == ("claude-opus-4-5",)
    assert all(c.cost_usd is not None and c.cost_usd > 0 for c in session.calls)
    aborted = sum(n for why, n in session.ignored if why.startswith("assistant message with no content"))
    assert aborted == {BEFORE: 13, COMPACT: 6}[path]


@pytest.mark.parametrize("path", [BEFORE, COMPACT], ids=["before-compaction", "compact"])
def test_compactions_with_their_kept_tail(path: Path) -> None:
    [session] = load_file(path)
    entries = raw_entries(path)
    recorded = [entry for _, entry in entries if entry["type"] == "compaction"]
    assert [c.pre_tokens for c in session.compactions] == [e["tokensBefore"] for e in recorded]
    for marker, entry in zip(session.compactions, recorded):
        assert marker.summary == SUMMARY_PREFIX + entry["summary"] + "\n</summary>"
        assert marker.trigger == "unknown"
        first_kept_line = entries[entry["firstKeptEntryIndex"]][0]
        if not marker.kept:  # the compaction kept nothing: its first kept entry is itself
            assert entries[entry["firstKeptEntryIndex"]][1]["type"] == "compaction"
        else:
            assert session.messages[marker.kept[0]].line == first_kept_line
            assert marker.kept == tuple(range(marker.kept[0], marker.at_message))
    assert len(session.compactions) == 2


def test_detected_by_content() -> None:
    assert detect(Source(BEFORE)).name == "pi-session"
    assert detect(Source(bundled("m-claude", "3af9b1a7"))).name == "claude-code"


def test_bash_execution_reaches_the_model_as_user_text() -> None:
    [session] = load_file(BEFORE)
    bash = [m for m in session.messages if m.role == "user" and m.text().startswith("Ran `ls`\n```\nAGENTS.md")]
    assert len(bash) == 2


def test_tree_layout_follows_the_path_to_the_last_entry(tmp_path: Path) -> None:
    """Version 3: ids and parents; an abandoned branch of three entries hangs off the 10th entry."""
    entries = [entry for _, entry in raw_entries(BEFORE)]
    header, body = {**entries[0], "version": 3}, entries[1:]
    for number, entry in enumerate(body):
        entry["id"], entry["parentId"] = f"e{number}", (f"e{number - 1}" if number else None)
        if entry["type"] == "compaction":
            entry["firstKeptEntryId"] = f"e{entry.pop('firstKeptEntryIndex') - 1}"
    branch = [dict(body[20], id=f"b{n}", parentId="e9" if n == 0 else f"b{n - 1}") for n in range(3)]
    path = tmp_path / "tree.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in [header, *body[:10], *branch, *body[10:]]) + "\n", encoding="utf-8")
    [tree] = load_file(path)
    [linear] = load_file(BEFORE)
    assert [m.text() for m in tree.messages] == [m.text() for m in linear.messages]
    assert [(c.at_message, c.kept) for c in tree.compactions] == [(c.at_message, c.kept) for c in linear.compactions]
    assert dict(tree.ignored)["entry on another branch of the session tree (not on the path to the last entry)"] == 3


def test_canonical_round_trip_keeps_the_kept_tail(tmp_path: Path) -> None:
    [session] = load_file(BEFORE)
    [again] = load_file(write_canonical([session], tmp_path / "pi.canonical.jsonl"))
    assert again.compactions == session.compactions


def test_recorded_replay_keeps_pis_tail_and_sizes_the_next_prompt() -> None:
    """pi's compaction replaces the history before its first kept entry with the summary; the
    replay of the recorded strategy predicts the first prompt after each (3 of 4 have one)."""
    [session] = load_file(BEFORE)
    replayed = replay(session, Setting("recorded", "recorded"))
    assert len(replayed.compactions) == 2
    for row, context, marker in zip(replayed.compactions, replayed.compacted, session.compactions):
        assert marker.kept
        kept = tuple(session.messages[i] for i in marker.kept)
        assert context[-len(kept) :] == kept  # pi keeps its recent tail verbatim, after the summary
        assert context[-len(kept) - 1].text() == marker.summary
        assert row.fidelity_recorded is not None and row.fidelity_predicted is not None
        assert abs(row.fidelity_predicted / row.fidelity_recorded - 1) < 0.15
