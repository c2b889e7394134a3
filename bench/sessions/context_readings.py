"""Context sizes Claude Code reported itself: its `/context` command, run after a compaction.

A production compaction is checked against the first prompt the agent sent after it. A session
may end before any (a manual `/compact` followed only by `/context`, as m-claude 97b0ffde does);
Claude Code's `/context` output, which the session keeps as local-command output, then gives
the size instead: one line per part of the prompt ("System prompt: 2.9k tokens (1.4%)", "System
tools", "Messages", ...), counted by the provider. The reading is the sum of those parts, so it is
rounded to 0.1k per part (about ±0.1k in all), coarser than a recorded call's count.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace

from compactlab.sessions.model import Session

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


def readings_after_compactions(session: Session) -> dict[int, int]:
    """For each real compaction (by `at_message`) followed by a `/context` output before any call,
    the size that output reports."""
    readings: dict[int, int] = {}
    for marker in session.compactions:
        for message in _until_next_call(session, marker.at_message):
            size = context_reading(message.text()) if message.role == "user" else None
            if size is not None:
                readings[marker.at_message] = size
                break
    return readings


def _until_next_call(session: Session, start: int) -> Iterable:
    for message in session.messages[start:]:
        if message.call is not None:
            return
        yield message


def with_readings(rows: list, readings: dict[int, int]) -> list:
    """Compaction rows (`compactlab.replay.row_schema.CompactionRow`) of real compactions that no call followed,
    checked against the `/context` reading instead: the size right after the compaction (nothing
    was added before the reading) against the reported one."""
    return [
        replace(row, fidelity_predicted=row.event.tokens_after, fidelity_recorded=readings[row.message_index])
        if row.fidelity_recorded is None and row.message_index in readings and not row.event.failed
        else row
        for row in rows
    ]


# Calls between two real compactions below which the second one's next prompt is no test of the
# replay: the ratio and constant the replay sizes it with were measured on a context the first
# compaction had just rebuilt (the held-out data shows errors of +200-300% there).
BACK_TO_BACK_CALLS = 3


def fidelity_exclusions(session: Session) -> dict[int, str]:
    """Real compactions (by `at_message`) whose next prompt cannot test the replay, each with why:
    the next call went to another model (another tokenizer, or a gateway counting another way), or
    the compaction came back to back with the previous one (fewer than `BACK_TO_BACK_CALLS` calls)."""
    calls = [(index, m.call) for index, m in enumerate(session.messages) if m.call is not None]
    excluded: dict[int, str] = {}
    previous_at: int | None = None
    for marker in session.compactions:
        before = [call for index, call in calls if index < marker.at_message]
        after = next((call for index, call in calls if index >= marker.at_message), None)
        since = sum(1 for index, _ in calls if previous_at is not None and previous_at <= index < marker.at_message)
        if before and after is not None and after.model != before[-1].model:
            excluded[marker.at_message] = f"the next call went to another model ({before[-1].model} → {after.model})"
        elif previous_at is not None and since < BACK_TO_BACK_CALLS:
            excluded[marker.at_message] = f"back to back with the previous compaction ({since} call(s) between them)"
        previous_at = marker.at_message
    return excluded
