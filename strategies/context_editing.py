"""Anthropic's context editing: old tool results cleared in place (`clear_tool_uses_20250919`).

The API clears, before the prompt reaches the model, the results of every tool use but the newest
`keep`, oldest first, each replaced by a placeholder; with `clear_tool_inputs` the tool calls'
parameters too. Tools named in `exclude_tools` are never cleared, and nothing is cleared unless at
least `clear_at_least` tokens would go. Messages are never removed, yet the edit breaks the prompt
cache at the first cleared result, and Anthropic reads a prefix only up to a cache breakpoint before
it: what stays cached is the head the agent marks (the replay's `prefix_tokens`,
`compactlab.replay.prompt_cache`). The rules, their sources and dates: `compactlab.strategies.provider_rules`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from compactlab.contract import CompactionRequest, CompactionResult, Context
from compactlab.sessions.model import Message, Part, ToolCallPart, ToolResultPart
from compactlab.strategies.base import setting

# The documentation says a cleared result is replaced "with placeholder text to let Claude know the
# tool result was removed" but not with which text: this one is assumed (LangChain's copy of the
# edit, ClearToolUsesEdit, writes "[cleared]").
PLACEHOLDER = "[cleared]"
CLEARED_INPUT = "{}"  # a cleared call's parameters (the documentation does not say what remains of them: none, here)
DEFAULT_TRIGGER = 100_000  # input tokens (the documentation's default trigger)


@dataclass(frozen=True)
class ClearToolUses:
    """Clear the results of all but the newest `keep` tool uses, in place (Anthropic's context editing).

    A tool use is a tool result with its call, counted by position, those cleared before included,
    so the newest `keep` stay whatever was cleared earlier and a second run changes nothing. The
    edit is made only when it clears at least `clear_at_least` tokens. Needs no LLM.
    """

    name: ClassVar[str] = "clear-tool-uses"
    source: ClassVar[str] = (
        "Anthropic context editing, clear_tool_uses_20250919 "
        "(platform.claude.com/docs/en/build-with-claude/context-editing, read 2026-12-02)"
    )

    trigger_tokens: int = setting(DEFAULT_TRIGGER, "input tokens the prompt must exceed before clearing begins (trigger)")
    keep: int = setting(3, "the newest tool uses whose results stay (keep: 3 tool uses)")
    clear_at_least: int = setting(0, "clear only when at least this many tokens would go (clear_at_least; 0: none asked)")
    exclude_tools: tuple[str, ...] = setting((), "tools whose uses are never cleared (exclude_tools)")
    clear_tool_inputs: bool = setting(False, "clear the cleared uses' call parameters too (clear_tool_inputs)")
    placeholder: str = setting(PLACEHOLDER, "the text a cleared result holds (not documented: assumed)")

    def __post_init__(self) -> None:
        for field_name in ("trigger_tokens", "keep", "clear_at_least"):
            value = getattr(self, field_name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{self.name}: setting {field_name} must be a whole number >= 0, got {value!r}")

    def compact(self, context: Context, request: CompactionRequest) -> CompactionResult:
        messages = context.messages
        calls = {  # each call's id → where it is (message and part index) and the call
            p.id: (m_index, p_index, p)
            for m_index, m in enumerate(messages)
            for p_index, p in enumerate(m.parts)
            if isinstance(p, ToolCallPart)
        }
        uses = [
            (m_index, p_index, part)
            for m_index, message in enumerate(messages)
            for p_index, part in enumerate(message.parts)
            if isinstance(part, ToolResultPart)
        ]
        older = uses[: max(0, len(uses) - self.keep)]
        excluded = set(self.exclude_tools)
        edits: dict[int, dict[int, Part]] = {}  # message index → part index → its cleared part
        skipped = 0
        for m_index, p_index, part in older:
            found = calls.get(part.call_id)
            if found is not None and found[2].name in excluded:
                skipped += 1
                continue
            if part.content != self.placeholder:
                edits.setdefault(m_index, {})[p_index] = replace(part, content=self.placeholder)
            if self.clear_tool_inputs and found is not None and found[2].arguments != CLEARED_INPUT:
                c_message, c_part, call = found
                edits.setdefault(c_message, {})[c_part] = replace(call, arguments=CLEARED_INPUT)
        counts = f"{len(uses)} tool uses, the newest {min(self.keep, len(uses))} kept"
        counts += f", {skipped} of excluded tools kept" if skipped else ""
        if not edits:
            return CompactionResult(context=context, messages_removed=0, note=f"nothing to clear: {counts}")
        new_messages = list(messages)
        for m_index, parts in edits.items():
            message = messages[m_index]
            new_messages[m_index] = replace(message, parts=tuple(parts.get(i, p) for i, p in enumerate(message.parts)))
        cleared = _size(request, messages) - _size(request, new_messages)
        if cleared < self.clear_at_least:
            # The documented rule: context is modified only if at least clear_at_least tokens can be removed.
            return CompactionResult(
                context=context,
                messages_removed=0,
                note=f"nothing cleared: {cleared:,} tokens clearable, under clear_at_least {self.clear_at_least:,} ({counts})",
            )
        new = replace(context, messages=tuple(new_messages), known_usage=None)
        edited = sum(len(parts) for parts in edits.values())
        return CompactionResult(
            context=new, messages_removed=0, note=f"cleared {edited} tool parts ({cleared:,} tokens; {counts})"
        )


def _size(request: CompactionRequest, messages: list[Message] | tuple[Message, ...]) -> int:
    """The prompt size of `messages` in the engine's units (the size clear_at_least is compared with)."""
    measure = request.prompt_tokens or request.count_tokens
    return measure(messages)
