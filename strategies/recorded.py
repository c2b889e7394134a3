"""Recorded: the summary a production agent actually wrote, as a strategy.

The replay runs it exactly where the source compacted (Claude Code's `compact_boundary`, a
condenser log line, Codex's `compacted` item), with the summary recorded there, so real
compactions are scored on the same metrics as every other strategy. It replaces the history with
that summary, as the production agent did, keeping only the system prompt.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from strategies.base import CompactionRequest, CompactionResult, Context, leading_system, setting, summary_message


@dataclass(frozen=True)
class Recorded:
    """The production agent's own summary, applied where it really compacted."""

    name: ClassVar[str] = "recorded"
    source: ClassVar[str] = "the compaction markers of the transcript itself"
    summary: str = setting("", "the recorded summary text (the replay fills it in at each real compaction)")

    def compact(self, context: Context, request: CompactionRequest) -> CompactionResult:
        if not self.summary:
            return CompactionResult(context, 0, note="no recorded compaction here")
        head = leading_system(context.messages)
        messages = (*context.messages[:head], summary_message(self.summary))
        removed = len(context.messages) - head
        return CompactionResult(replace(context, messages=messages, summary=self.summary), removed, note="the production agent's summary")
