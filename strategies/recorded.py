"""Recorded: the summary a production agent actually wrote, as a strategy.

The replay runs it exactly where the source compacted (Claude Code's `compact_boundary`, a
condenser log line, Codex's `compacted` item), with the summary recorded there, so real
compactions are scored on the same metrics as every other strategy. It replaces the history with
that summary, as the production agent did, keeping the system prompt and what the agent kept
verbatim (of the system messages only those it names, when it names some: a Codex remote
compaction's summary, its replacement history, holds the developer message again), and adds what
Claude Code re-attaches after compacting (recent files, the todo list, the plan file:
`compactlab.strategies.reattach`), which the session file does not record but the next prompt holds.
Other agents' sessions use none of the tools that re-attachment reads, so for them it adds nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from compactlab.contract import CompactionRequest, CompactionResult, Context
from compactlab.sessions.messages import leading_system, summary_message
from compactlab.sessions.model import Message
from compactlab.strategies.base import setting
from compactlab.strategies.reattach import ReattachSettings, file_tokens, reattach


@dataclass(frozen=True)
class Recorded(ReattachSettings):
    """The production agent's own summary, applied where it really compacted."""

    name: ClassVar[str] = "recorded"
    source: ClassVar[str] = "the compaction markers of the session itself"
    summary: str = setting("", "the recorded summary text (the replay fills it in at each real compaction)")
    reattach: bool = setting(True, "add what Claude Code re-attaches after compacting (recent files, todo list, plan file)")
    kept: tuple[Message, ...] = setting((), "the messages the agent kept verbatim beside its summary (the replay fills them in)")

    def compact(self, context: Context, request: CompactionRequest) -> CompactionResult:
        if not self.summary:
            return CompactionResult(context, 0, note="no recorded compaction here")
        head = leading_system(context.messages)
        wanted = {id(m) for m in self.kept}
        system = context.messages[:head]
        if any(id(m) in wanted for m in system):  # the summary holds the others (Codex's replacement history)
            system = tuple(m for m in system if id(m) in wanted)
        kept = tuple(m for m in context.messages[head:] if id(m) in wanted)
        summarized = tuple(m for m in context.messages[head:] if id(m) not in wanted)
        rules = self.rules()
        extra = reattach(summarized, file_tokens(request, rules), rules=rules) if self.reattach else None
        messages = (
            *system,
            summary_message(self.summary, verbatim=True),
            *kept,
            *(extra.messages if extra else ()),
        )
        note = "the production agent's summary" + (f", {len(kept)} message(s) kept verbatim" if kept else "")
        note += f"; {extra.note()}" if extra and extra.messages else ""
        return CompactionResult(replace(context, messages=messages, summary=self.summary), len(summarized), note=note)
