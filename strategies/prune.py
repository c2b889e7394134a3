"""Prune: clear the content of old tool results, keeping the newest tool output (opencode)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

from compactlab.contract import CompactionRequest, CompactionResult, Context
from compactlab.sessions.messages import is_summary, turn_boundaries, turn_starts
from compactlab.sessions.model import Message, ToolCallPart, ToolResultPart
from compactlab.strategies.base import setting

# opencode's replacement text for a pruned tool output (sst/opencode,
# packages/opencode/src/session/compaction.ts: `part.state.time.compacted ? "[Old tool result
# content cleared]" : ...`). A result whose content is exactly this counts as already pruned.
PLACEHOLDER = "[Old tool result content cleared]"


@dataclass(frozen=True)
class Prune:
    """Replace old tool outputs with a placeholder once enough of them can be cleared (opencode).

    Walks the history backwards, skipping the last `protect_turns` turns (user turns; the steps of
    the task's turn when it is the last one, see `turn_boundaries`). The newest
    `protect_tokens` tokens of tool output are kept; every older tool output is cleared, but only
    if more than `minimum_tokens` would be cleared in total. Tools in `protected_tools` are never
    pruned. Messages are never removed, only tool-result content; a cleared result keeps its call.
    Running it again on its own output changes nothing. Needs no LLM.
    """

    name = "prune"
    source: ClassVar[str] = (
        "opencode SessionCompaction.prune (sst/opencode packages/opencode/src/session/compaction.ts: "
        "PRUNE_PROTECT = 40_000, PRUNE_MINIMUM = 20_000, PRUNE_PROTECTED_TOOLS = ['skill']); seed 002 (RFC 007)"
    )

    protect_tokens: int = setting(40_000, "newest tool-output tokens never cleared (opencode PRUNE_PROTECT)")
    minimum_tokens: int = setting(20_000, "clear only if more than this many tokens would be cleared (opencode PRUNE_MINIMUM)")
    protected_tools: tuple[str, ...] = setting(
        ("skill",), "tools whose output is never cleared, case-insensitive (opencode PRUNE_PROTECTED_TOOLS)"
    )
    protect_turns: int = setting(2, "the last N user turns are skipped entirely (opencode: `if (turns < 2) continue`)")
    placeholder: str = setting(PLACEHOLDER, "text that replaces a cleared tool output (and marks it as pruned)")
    protected_prefixes: tuple[str, ...] = setting(
        (), "tools whose name starts with one of these are never pruned (seed 002: 'tool-')"
    )
    stop_at_pruned: bool = setting(
        True, "stop at an already pruned output (opencode); False: skip it and go on (seed 002's compactedAt marker)"
    )
    max_part_tokens: int = setting(0, "cap on one output's estimate (seed 002: MAX_TOKENS_PER_PART 50,000); 0 = no cap")
    prune_errors: bool = setting(
        True, "clear a result flagged as an error too; False: only completed outputs, as opencode (an error is never cleared)"
    )
    keep_small: bool = setting(
        True, "leave an output no larger than the placeholder alone; False: clear it too, as opencode does"
    )
    steps_as_turns: bool = setting(
        True,
        "in a session whose last user turn is the task's, each step counts as a turn (see `turn_boundaries`); False: only "
        "user messages do, as in opencode, which so never prunes a single-prompt session",
    )

    def compact(self, context: Context, request: CompactionRequest) -> CompactionResult:
        # Follows opencode's prune() loop (sst/opencode, packages/opencode/src/session/compaction.ts,
        # commits 3df4a255 and 31e22f65):
        #   for msgIndex from last to first:
        #     if user message: turns++;  if (turns < 2) continue        -> last 2 user turns skipped
        #     if assistant summary: break                              -> stop at an earlier compaction
        #     for each part, last to first: only completed tool parts, skip PRUNE_PROTECTED_TOOLS,
        #       if already compacted: break                            -> stop at an earlier prune
        #       total += estimate; if (total <= PRUNE_PROTECT) continue; pruned += estimate; mark it
        #   if (pruned > PRUNE_MINIMUM) clear every marked part
        # Here a turn starts where `turn_boundaries` says: at a real user message, and at each step of
        # the task's own turn when it is the last one (a single-task agent such as mini-swe-agent has
        # no other user turn, so opencode's rule would protect its whole session). The earlier compaction is
        # our summary message, and every tool result counts as "completed", errors included: opencode's
        # "error" status is a tool that threw (its short error text is never pruned), while recorded
        # sessions also flag commands that ran and failed (Claude Code: a failing test run, often
        # 10k characters), which opencode records as completed output.
        messages = context.messages
        tool_names = {p.id: p.name for m in messages for p in m.parts if isinstance(p, ToolCallPart)}
        protected = {t.lower() for t in self.protected_tools}
        part_tokens = _part_counter(request.count_tokens)
        placeholder_tokens: dict[str, int] = {}

        def placeholder_size(message: Message, part: ToolResultPart) -> int:
            if message.role not in placeholder_tokens:
                placeholder_tokens[message.role] = part_tokens(message, replace(part, content=self.placeholder))
            return placeholder_tokens[message.role]

        turns = total = pruned = 0
        marked: list[tuple[int, int]] = []
        stopped_at = ""
        boundaries = set(turn_boundaries(messages) if self.steps_as_turns else turn_starts(messages))
        for m_index in range(len(messages) - 1, -1, -1):
            message = messages[m_index]
            if m_index in boundaries:
                turns += 1
            if turns < self.protect_turns:
                continue
            if is_summary(message):
                stopped_at = "the summary of an earlier compaction"
                break
            for p_index in range(len(message.parts) - 1, -1, -1):
                part = message.parts[p_index]
                if not isinstance(part, ToolResultPart):
                    continue
                tool = tool_names.get(part.call_id, "").lower()
                if tool in protected or any(tool.startswith(prefix.lower()) for prefix in self.protected_prefixes):
                    continue
                if part.is_error and not self.prune_errors:
                    continue  # opencode: only a "completed" tool part is looked at, an "error" one is skipped
                if part.content == self.placeholder:
                    if not self.stop_at_pruned:
                        continue  # seed 002: a part marked `compactedAt` is skipped, the scan goes on
                    stopped_at = "an earlier prune"
                    break
                estimate = part_tokens(message, part)
                if self.max_part_tokens:
                    estimate = min(estimate, self.max_part_tokens)
                total += estimate
                if total <= self.protect_tokens:
                    continue
                # Deviation from opencode: an output no larger than the placeholder is left alone
                # (clearing it would not make the context smaller). It still counts in `total`.
                if self.keep_small and estimate <= placeholder_size(message, part):
                    continue
                pruned += estimate
                marked.append((m_index, p_index))
            if stopped_at:
                break

        where = f" (stopped at {stopped_at})" if stopped_at else ""
        if not marked or pruned <= self.minimum_tokens:
            return CompactionResult(
                context=context,
                messages_removed=0,
                note=(
                    f"nothing to do: {pruned:,} tokens of tool output prunable beyond the newest "
                    f"{self.protect_tokens:,} (minimum {self.minimum_tokens:,}){where}"
                ),
            )
        new_messages = list(messages)
        by_message: dict[int, list[int]] = {}
        for m_index, p_index in marked:
            by_message.setdefault(m_index, []).append(p_index)
        for m_index, p_indexes in by_message.items():
            parts = list(new_messages[m_index].parts)
            for p_index in p_indexes:
                part = parts[p_index]
                assert isinstance(part, ToolResultPart), part  # only tool results are marked
                parts[p_index] = replace(part, content=self.placeholder)
            new_messages[m_index] = replace(new_messages[m_index], parts=tuple(parts))
        new = replace(context, messages=tuple(new_messages), known_usage=None)
        return CompactionResult(
            context=new,
            messages_removed=0,
            note=(
                f"cleared {len(marked)} tool results ({pruned:,} tokens), keeping the newest "
                f"{self.protect_tokens:,} tokens of tool output and the last {self.protect_turns} user turns{where}"
            ),
        )


def _part_counter(count_tokens: Callable[[Sequence[Message]], int]) -> Callable[[Message, ToolResultPart], int]:
    """Tokens of one tool result: its message holding only that part, minus an empty message's.

    Subtracting the empty message removes per-message and per-prompt overhead (e.g. the `words`
    estimator's +50), so what is counted is the output itself, as opencode's
    `Token.estimate(part.state.output)`.
    """
    overhead: dict[str, int] = {}

    def count(message: Message, part: ToolResultPart) -> int:
        if message.role not in overhead:
            overhead[message.role] = count_tokens([replace(message, parts=())])
        return max(0, count_tokens([replace(message, parts=(part,))]) - overhead[message.role])

    return count
