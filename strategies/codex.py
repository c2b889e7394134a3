"""Codex's local compaction as it is at openai/codex e06dd0e5 (codex-rs/core/src/compact.rs): the whole
history summarized, the newest user messages (up to 20,000 tokens) kept before the summary, and the
initial context (developer instructions, AGENTS.md, the environment context) placed where the model
expects it, which depends on the phase the compaction ran in:

- pre-turn (before the first call of a turn, the user's new prompt pending: `InitialContextInjection::
  DoNotInject`): the replacement history is the user messages and the summary; the next regular turn
  re-injects the initial context, then records the new prompt. So: users, summary, initial context,
  the new prompt.
- mid-turn (between the calls of a tool loop: `BeforeLastUserMessage`): "the model is trained to see
  the compaction summary as the last item in history after mid-turn compaction", so the initial
  context goes just above the last real user message (or above the summary when none is kept), and
  the summary stays last.

In a replay the phase is read from the context: its last message is a user's prompt (a turn starts at
this call) or not (the tool loop goes on)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from compactlab.contract import CompactionRequest, CompactionResult, Context
from compactlab.sessions.messages import is_instruction, is_summary, is_user_turn_start
from compactlab.sessions.model import Message
from compactlab.strategies.summarize import Summarize


@dataclass(frozen=True)
class CodexCompaction(Summarize):
    """Codex (e06dd0e5): the whole history summarized after the newest 20,000 tokens of user messages; the
    initial context after the summary before a turn, before the last user message within one."""

    name: ClassVar[str] = "codex-compaction"
    source: ClassVar[str] = "openai/codex e06dd0e5 codex-rs/core/src/compact.rs"

    def compact(self, context: Context, request: CompactionRequest) -> CompactionResult:
        messages = context.messages
        pre_turn = bool(messages) and is_user_turn_start(messages[-1])
        # Pre-turn, Codex compacts before it records the new prompt: the prompt is neither summarized nor kept among the users.
        body = replace(context, messages=messages[:-1]) if pre_turn else context
        result = super().compact(body, request)
        compacted = result.context.messages
        if not result.messages_removed or not any(is_summary(m) for m in compacted):
            return result if not pre_turn else replace(result, context=context)
        placed = pre_turn_history(compacted, messages[-1]) if pre_turn else mid_turn_history(compacted)
        phase = (
            "pre-turn: the initial context and the new prompt after the summary"
            if pre_turn
            else ("mid-turn: the initial context before the last user message, the summary last")
        )
        return replace(result, context=replace(result.context, messages=placed), note=f"{result.note}; {phase}")


def pre_turn_history(compacted: tuple[Message, ...], prompt: Message) -> tuple[Message, ...]:
    """compact.rs DoNotInject, then the next turn's re-injection: users, summary, initial context, the prompt."""
    instructions = [m for m in compacted if is_instruction(m)]
    return (*(m for m in compacted if not is_instruction(m)), *instructions, prompt)


def mid_turn_history(compacted: tuple[Message, ...]) -> tuple[Message, ...]:
    """compact.rs insert_initial_context_before_last_real_user_or_summary: the initial context just above the
    last real user message, else above the summary, so the summary stays last."""
    instructions = [m for m in compacted if is_instruction(m)]
    rest = [m for m in compacted if not is_instruction(m)]
    users = [i for i, m in enumerate(rest) if is_user_turn_start(m)]
    at = users[-1] if users else next(i for i, m in enumerate(rest) if is_summary(m))
    return (*rest[:at], *instructions, *rest[at:])
