"""Codex 0.142 on writes the outputs of tools that ran while a response streamed before that
response's usage. The importer gives the usage to the response all the same: a real rollout (Codex
0.80, usage right after a response's items) with its tools' outputs moved above the usage of every
response that called tools, each move one controlled edit of the record order."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from compactlab.sessions.importers import load_file
from tests.conftest import bundled

ROLLOUT = bundled("codex-rollouts", "Kocoro-lab__Shannon")


def _is_usage(record: dict) -> bool:
    payload = record["payload"]
    return record["type"] == "event_msg" and payload.get("type") == "token_count" and bool(payload.get("info"))


def outputs_before_usage(tmp_path: Path) -> tuple[Path, int]:
    """The rollout with each usage that directly follows a tool call moved below the tool outputs
    that come right after it, and how many usages were moved."""
    lines = gzip.open(ROLLOUT, "rt", encoding="utf-8").read().splitlines()
    records = [json.loads(line) for line in lines]
    order, moved, i = [], 0, 0
    while i < len(lines):
        outputs = i + 1
        while outputs < len(lines) and records[outputs]["payload"].get("type") in (
            "function_call_output",
            "custom_tool_call_output",
        ):
            outputs += 1
        after_call = i > 0 and records[i - 1]["payload"].get("type") in ("function_call", "custom_tool_call")
        if _is_usage(records[i]) and after_call and outputs > i + 1:
            order += [*range(i + 1, outputs), i]
            moved, i = moved + 1, outputs
        else:
            order.append(i)
            i += 1
    path = tmp_path / "rollout-outputs-first.jsonl"
    path.write_text("\n".join(lines[k] for k in order) + "\n", encoding="utf-8")
    return path, moved


def test_usage_after_its_tools_outputs_stays_with_its_response(tmp_path: Path) -> None:
    [original] = load_file(ROLLOUT)
    path, moved = outputs_before_usage(tmp_path)
    [edited] = load_file(path)  # strict: an orphaned usage would be an error
    assert moved > 50
    assert not edited.skipped
    assert [(m.line is not None, m.role, m.text(), m.call) for m in edited.messages] == [
        (m.line is not None, m.role, m.text(), m.call) for m in original.messages
    ]
