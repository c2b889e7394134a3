"""Codex's real compactions replayed as Codex made them: a real rollout with one `compacted` item
inserted (edited in one controlled place, as no shared rollout holds one), and Codex's own rules for
what it keeps verbatim and what the next prompt holds (`compactlab.sessions.importers.codex_compaction`)."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path

from compactlab.replay.replay import replay
from compactlab.replay.setting import Setting
from compactlab.sessions.importers import load_file
from compactlab.sessions.importers.codex_compaction import SUMMARY_PREFIX, USER_MESSAGE_BUDGET, approx_tokens
from compactlab.tokens.metering import Meter
from tests.conftest import bundled
from tests.scripts import codex_fidelity

ROLLOUT = bundled("codex-rollouts", "Kocoro-lab__Shannon")


def with_compaction(tmp_path: Path, near_line: int, summary: str) -> Path:
    """The real rollout with a local compaction's `compacted` item before the first user message
    from line `near_line` on (where Codex compacts: between turns)."""
    lines = gzip.open(ROLLOUT, "rt", encoding="utf-8").read().splitlines()
    at_line = next(
        i
        for i in range(near_line, len(lines))
        if (record := json.loads(lines[i]))["type"] == "response_item"
        and record["payload"].get("role") == "user"
        and not record["payload"]["content"][0].get("text", "").startswith(("<environment_context>", "# AGENTS.md"))
    )
    item = {"timestamp": "2026-01-10T21:00:00.000Z", "type": "compacted", "payload": {"message": summary}}
    path = tmp_path / "rollout-compacted.jsonl"
    path.write_text("\n".join([*lines[:at_line], json.dumps(item), *lines[at_line:]]) + "\n", encoding="utf-8")
    return path


def test_codex_keeps_its_instructions_and_newest_user_messages(tmp_path: Path) -> None:
    [original] = load_file(ROLLOUT)
    summary = f"{SUMMARY_PREFIX} Here is the summary:\nThe gateway was refactored; tests pass."
    [session] = load_file(with_compaction(tmp_path, 900, summary))
    [marker] = session.compactions
    assert [(m.role, m.text()) for m in session.messages] == [(m.role, m.text()) for m in original.messages]
    before = session.messages[: marker.at_message]
    users = [i for i, m in enumerate(before) if m.role == "user" and not m.instruction]
    instructions = [i for i, m in enumerate(before) if m.role == "system" or m.instruction]
    kept_users = [i for i in marker.kept if i in users]
    assert set(instructions) <= set(marker.kept) and kept_users == users[-len(kept_users) :]
    # Newest first while they fit 20,000 approximate tokens; the first that does not fit is the last kept.
    sizes = [approx_tokens(before[i].text()) for i in kept_users]
    assert sum(sizes[1:]) <= USER_MESSAGE_BUDGET
    if len(kept_users) < len(users):
        assert (
            sum(sizes) > USER_MESSAGE_BUDGET
            or sum(sizes) + approx_tokens(before[users[-len(kept_users) - 1]].text()) > USER_MESSAGE_BUDGET
        )
    # The recorded replay rebuilds that history: the kept messages and the summary as Codex wrote it.
    replayed = replay(session, Setting("recorded", "recorded"))
    [row] = replayed.compactions
    [context] = replayed.compacted
    assert summary in [m.text() for m in context]
    assert [m for m in context if any(m is before[i] for i in marker.kept)] == [before[i] for i in marker.kept]
    assert row.fidelity_recorded is not None  # the next recorded call is its check


def with_remote_compaction(tmp_path: Path, near_line: int, encrypted_length: int) -> tuple[Path, list[str]]:
    """The real rollout with a remote compaction's `compacted` item in the middle of a turn: after
    the first tool output from line `near_line` on, before the next response (where Codex compacts
    when a turn's prompt reaches its limit). Shaped as Codex writes it (`CompactedItem` with an
    empty message and the `replacement_history` the server returned, compact_remote.rs): the
    rollout's own three newest user messages, then an encrypted `compaction` item of
    `encrypted_length` base64 characters. Also returns the user texts it holds."""
    lines = gzip.open(ROLLOUT, "rt", encoding="utf-8").read().splitlines()
    records = [json.loads(line) for line in lines]
    at_line = 1 + next(
        i
        for i in range(near_line, len(lines))
        if records[i]["payload"].get("type") in ("function_call_output", "custom_tool_call_output")
    )
    users = [
        r["payload"]
        for r in records[:at_line]
        if r["type"] == "response_item" and r["payload"].get("type") == "message" and r["payload"].get("role") == "user"
    ][-3:]
    encrypted = "gAAAAA" + base64.b64encode(bytes(range(256)) * (encrypted_length // 256 + 1)).decode()[: encrypted_length - 6]
    history = [*users, {"type": "compaction", "encrypted_content": encrypted}]
    item = {
        "timestamp": records[at_line - 1]["timestamp"],
        "type": "compacted",
        "payload": {"message": "", "replacement_history": history},
    }
    path = tmp_path / "rollout-remote-compacted.jsonl"
    path.write_text("\n".join([*lines[:at_line], json.dumps(item), *lines[at_line:]]) + "\n", encoding="utf-8")
    return path, ["\n".join(c["text"] for c in u["content"] if "text" in c) for u in users]


def test_codex_remote_compaction_is_sized_as_a_fresh_prompt(tmp_path: Path) -> None:
    """The replacement history is the summary; the first prompt after it is the per-session
    constant, the summary's text at its estimate (not at the session's ratio) and Codex's own
    estimate of the encrypted item (3/4 of its length less 650 bytes, 4 bytes a token)."""
    path, user_texts = with_remote_compaction(tmp_path, 900, 12_000)
    [session] = load_file(path)
    [marker] = session.compactions
    assert marker.summary_tokens == (12_000 * 3 // 4 - 650 + 3) // 4 == 2088
    assert marker.kept == ()  # this rollout records no base instructions, and nothing else stays
    assert all(text in marker.summary for text in user_texts)
    next_call = session.messages[marker.at_message]
    assert next_call.call is not None  # mid-turn: the next response is the first call after it

    meter = Meter(session, "hybrid")
    replayed = replay(session, Setting("recorded", "recorded"), meter=meter)
    [row] = replayed.compactions
    [context] = replayed.compacted
    assert [m.text() for m in context] == [marker.summary]
    expected = round(meter.local.prompt_overhead + meter.offset + meter.message_tokens(context[0]) + 2088)
    assert row.fidelity_predicted == expected
    assert row.fidelity_recorded == next_call.call.prompt_tokens

    # At the session's ratio instead, the prediction would be far off: the rule is what the test sees.
    at_ratio = Meter(session, "hybrid", fresh_prompt=False)
    [other] = replay(session, Setting("recorded", "recorded"), meter=at_ratio).compactions
    assert abs(other.fidelity_predicted - expected) > 1_000


def test_codex_fidelity_measures_the_edited_rollout(tmp_path: Path) -> None:
    path, _ = with_remote_compaction(tmp_path, 900, 12_000)
    [session] = load_file(path)
    [row] = codex_fidelity.rows(session)
    assert (
        row["error"] == row["predicted"] - row["recorded"]
        and row["recorded"] == session.messages[session.compactions[0].at_message].call.prompt_tokens
    )
    # A fork's copy of the same compaction counts once.
    assert codex_fidelity.distinct([row, {**row, "session": "fork"}]) == [row]
    # The call after it really sent the whole history (the compaction is inserted), so the figures
    # here say nothing of accuracy: only that each rule and the out-of-sample choice are measured.
    report = codex_fidelity.measure([session])
    assert report.count("estimate: n=1:") == len(codex_fidelity.grid()) and "leave one session out: n=1" in report
