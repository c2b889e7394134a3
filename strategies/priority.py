"""Priority prune (seed 003, glm-cli HistoryPruner): keep messages by priority, summarize the rest.

Seed 003's "Message Preservation Strategy" keeps, in this order, until the budget is full:

1. system messages (always),
2. the latest user message,
3. the latest assistant message,
4. the last 5 tool messages,
5. older exchanges that fit in the budget,
6. older tool outputs (lowest priority),

and its SummaryGenerator summarizes what was removed. Here a tool call and its results are one
unit (kept or dropped together, so no result loses its call), which is how stages 5 and 6 split an
older exchange: stage 5 keeps its messages with their tool outputs cleared, stage 6 gives the
outputs back, newest first, while they fit. Instructions and the task statement are pinned as by
every strategy. The budget is the engine's target (seed 003's CRITICAL level: 60% of the window);
a WARNING compaction aims at `warning_target` of the window instead, which the seed leaves open.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

from compactlab.contract import CompactionRequest, CompactionResult, Context
from compactlab.sessions.messages import (
    is_summary,
    is_user_turn_start,
    pinned_head,
    pinned_indexes,
    summary_message,
    summary_text,
)
from compactlab.sessions.model import Message, ToolCallPart, ToolResultPart
from compactlab.strategies.base import setting

PLACEHOLDER = "[Old tool output removed by compaction: see the summary]"


@dataclass(frozen=True)
class PriorityPrune:
    """Keep messages by seed 003's priority order until the budget is full; summarize what was removed."""

    name: ClassVar[str] = "priority-prune"
    source: ClassVar[str] = (
        "seed 003 (glm-cli SessionCompactor, core/HistoryPruner.groovy and core/SummaryGenerator.groovy as its "
        "document describes them: 'Message Preservation Strategy', CRITICAL target 60% of max)"
    )

    recent_tool_messages: int = setting(5, "the newest N tool messages are always kept (seed 003: the last 5)")
    warning_target: float = setting(
        0.7, "share of the window a WARNING compaction gets under (seed 003 states only CRITICAL's 60%, the engine's target)"
    )
    summarizer: str = setting("extractive", "'extractive' (deterministic, no LLM) or 'llm' (the run's configured LLM summarizer)")
    template: str = setting("summary.j2", "prompt template for the summary of the removed messages")
    max_summary_tokens: int = setting(1024, "output budget of the summary call")
    placeholder: str = setting(PLACEHOLDER, "text that replaces a tool output kept only as structure (stage 5)")

    def compact(self, context: Context, request: CompactionRequest) -> CompactionResult:
        messages = context.messages
        budget = int(self.warning_target * request.window) if request.reason == "warning" else request.target_tokens
        units = _units(messages)
        must = self._must_keep(messages, units, request.pin_task)
        optional = sorted(
            {units[i] for i in range(len(messages)) if i not in must and not is_summary(messages[i])}, key=max, reverse=True
        )
        lean = {i: self._lean(m) for i, m in enumerate(messages)}
        reserve, calls = 0, ()
        for _ in range(6):  # the summary takes room too: select again with what it took (usually twice)
            full, thin = _select(messages, lean, must, optional, budget - reserve, request)
            if len(full) == len(messages) and not any(is_summary(m) for m in messages):
                return CompactionResult(context, 0, note=f"nothing to remove: the whole context fits {budget:,} tokens")
            new, removed, made = self._rebuilt(messages, lean, full, thin, request)
            calls += made[0]
            size = request.prompt_size(new)
            if size <= budget or len(full) + len(thin) == len(must):
                break
            # Twice the overshoot: keeping less makes the summary longer, so the exact overshoot converges slowly.
            reserve += 2 * (size - budget)
        text = next((summary_text(m) for m in new if is_summary(m)), None)
        over = ""
        if size > budget:
            only_must = len(full) + len(thin) == len(must)
            over = (
                ", over: the messages seed 003 always keeps do not fit"
                if only_must
                else ", over: the summary outgrew the room left"
            )
        note = (
            f"kept {len(full)} messages whole and {len(thin)} with their tool outputs cleared, summarized {removed} removed "
            f"({size:,} of {budget:,} tokens{over})"
        )
        return CompactionResult(replace(context, messages=new, summary=text, known_usage=None), removed, calls, made[1], note)

    def _must_keep(self, messages: Sequence[Message], units: dict[int, frozenset[int]], pin_task: bool) -> set[int]:
        """Priorities 1-4: system messages (with every pinned message), the latest user message, the
        latest assistant message and the last tool messages, each with its unit."""
        keep = set(pinned_indexes(messages, pin_task))
        user = next((i for i in range(len(messages) - 1, -1, -1) if is_user_turn_start(messages[i])), None)
        assistant = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "assistant"), None)
        tools = (
            [i for i, m in enumerate(messages) if _is_tool_message(m)][-self.recent_tool_messages :]
            if self.recent_tool_messages
            else []
        )
        for index in (user, assistant, *tools):
            if index is not None:
                keep |= units[index]
        return keep

    def _lean(self, message: Message) -> Message:
        """The message with its tool outputs cleared (stage 5: the exchange's structure without them)."""
        if not _is_tool_message(message):
            return message
        parts = tuple(replace(p, content=self.placeholder) if isinstance(p, ToolResultPart) else p for p in message.parts)
        return replace(message, parts=parts)

    def _rebuilt(self, messages, lean, full, thin, request) -> tuple[tuple[Message, ...], int, tuple[tuple, str | None]]:
        """The compacted context: the pinned head, the summary of what was removed, the kept messages."""
        from compactlab.strategies.summarize import Summarize  # the summary is written as Summarize writes its own

        previous = next((summary_text(m) for m in messages if is_summary(m)), None)
        dropped = [m for i, m in enumerate(messages) if i not in full and i not in thin and not is_summary(m)]
        # A cleared output is removed content too: its message goes to the summarizer whole.
        summarized = [m for i, m in enumerate(messages) if i not in full and not is_summary(m)]
        writer = Summarize(
            summarizer=self.summarizer,
            template=self.template,
            max_summary_tokens=self.max_summary_tokens,
            track_files=False,
            append_last_request=False,
            fallback="",
        )
        text, calls, prompt_hash = writer.summary_of(summarized, previous, request, messages)
        head = pinned_head(messages, request.pin_task)
        kept = [messages[i] if i in full else lean[i] for i in range(head, len(messages)) if i in full or i in thin]
        new = (*messages[:head], summary_message(text), *kept)
        removed = len(dropped) + sum(is_summary(m) for m in messages)
        return new, removed, (calls, prompt_hash)


def _is_tool_message(message: Message) -> bool:
    return any(isinstance(p, ToolResultPart) for p in message.parts)


def _units(messages: Sequence[Message]) -> dict[int, frozenset[int]]:
    """Each message's unit: itself, joined with the messages holding its tool calls' results (and,
    through them, any other call those messages answer)."""
    parent = list(range(len(messages)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    caller = {p.id: i for i, m in enumerate(messages) for p in m.parts if isinstance(p, ToolCallPart)}
    for index, message in enumerate(messages):
        for part in message.parts:
            if isinstance(part, ToolResultPart) and part.call_id in caller:
                parent[root(index)] = root(caller[part.call_id])
    members: dict[int, set[int]] = {}
    for index in range(len(messages)):
        members.setdefault(root(index), set()).add(index)
    frozen = {r: frozenset(m) for r, m in members.items()}
    return {index: frozen[root(index)] for index in range(len(messages))}


def _select(messages, lean, must, optional, budget, request) -> tuple[set[int], set[int]]:
    """Priorities 5 and 6 on top of the must-keep set: older exchanges with their tool outputs cleared,
    newest first, while they fit; then their outputs back, newest first, while they fit."""
    count = request.count_tokens
    full, thin = set(must), set[int]()
    size = request.prompt_size([messages[i] for i in sorted(must)])
    for unit in optional:
        cost = sum(count([lean[i]]) for i in unit)
        if size + cost <= budget:
            # An exchange without tool outputs is kept whole at once: there is nothing to give back.
            (thin if any(lean[i] is not messages[i] for i in unit) else full).update(unit)
            size += cost
    for unit in optional:
        if not unit <= thin:
            continue
        extra = sum(count([messages[i]]) - count([lean[i]]) for i in unit if lean[i] is not messages[i])
        if size + extra <= budget:
            thin -= unit
            full |= unit
            size += extra
    return full, thin
