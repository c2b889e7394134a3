"""Codex's real compactions replayed as Codex made them: a real rollout with one `compacted` item
inserted (edited in one controlled place, as no shared rollout holds one), and Codex's own rule for
what it keeps verbatim (`compactlab.sessions.importers.codex_compaction`)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from compactlab.replay.replay import replay
from compactlab.replay.setting import Setting
from compactlab.sessions.importers import load_file
from compactlab.sessions.importers.codex_compaction import SUMMARY_PREFIX, USER_MESSAGE_BUDGET, approx_tokens
from tests.conftest import bundled

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
