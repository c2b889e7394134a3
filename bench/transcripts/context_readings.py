"""Context sizes Claude Code reported itself: its `/context` command, run after a compaction.

A production compaction is checked against the first prompt the agent sent after it. A session
may end before any (a manual `/compact` followed only by `/context`, as m-claude 97b0ffde does);
Claude Code's `/context` output, which the transcript keeps as local-command output, then gives
the size instead: one line per part of the prompt ("System prompt: 2.9k tokens (1.4%)", "System
tools", "Messages", ...), counted by the provider. The reading is the sum of those parts, so it is
rounded to 0.1k per part (about ±0.1k in all), coarser than a recorded call's count.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace

from compactlab.transcripts.model import Transcript

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_PART = re.compile(r"^[^\w\n]*([A-Z][\w ]*?):\s*([\d.]+)(k?) tokens \([\d.]+%\)", re.MULTILINE)
_NOT_IN_PROMPT = frozenset({"Free space", "Autocompact buffer"})


def context_reading(text: str) -> int | None:
    """The prompt size a `/context` output reports (the sum of its parts), or None if `text` is not one."""
    plain = _ANSI.sub("", text)
    if "Context Usage" not in plain:
        return None
    parts = [(name, float(value) * (1000 if k else 1)) for name, value, k in _PART.findall(plain) if name not in _NOT_IN_PROMPT]
    return round(sum(tokens for _, tokens in parts)) if parts else None


def readings_after_compactions(transcript: Transcript) -> dict[int, int]:
    """For each real compaction (by `at_message`) followed by a `/context` output before any call,
    the size that output reports."""
    readings: dict[int, int] = {}
    for marker in transcript.compactions:
        for message in _until_next_call(transcript, marker.at_message):
            size = context_reading(message.text()) if message.role == "user" else None
            if size is not None:
                readings[marker.at_message] = size
                break
    return readings


def _until_next_call(transcript: Transcript, start: int) -> Iterable:
    for message in transcript.messages[start:]:
        if message.call is not None:
            return
        yield message


def with_readings(rows: list, readings: dict[int, int]) -> list:
    """Compaction rows (`compactlab.replay.walk.CompactionRow`) of real compactions that no call followed,
    checked against the `/context` reading instead: the size right after the compaction (nothing
    was added before the reading) against the reported one."""
    return [
        replace(row, fidelity_predicted=row.tokens_after, fidelity_recorded=readings[row.message_index])
        if row.fidelity_recorded is None and row.message_index in readings and not row.failed
        else row
        for row in rows
    ]
