"""Observation masking: keep the last N tool outputs, replace older ones with a line count."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import ClassVar

from compactlab.contract import CompactionRequest, CompactionResult, Context
from compactlab.sessions.model import Message, ToolResultPart
from compactlab.strategies.base import setting

# The wording of SWE-agent's LastNObservations history processor, which "The Complexity Trap"
# (Lindenbauer et al., 2025, arXiv:2508.21433) used as its observation-masking strategy with n = 10
# (Recursive-Safeguarding/the-complexity-trap, config/default_no_demo_N=1_M=10.yaml:
# `history_processors: - type: last_n_observations, n: 10`). SWE-agent/SWE-agent,
# sweagent/agent/history_processors.py:
#     data["content"] = f"Old environment output: ({num_text_lines} lines omitted)"
# with num_text_lines = len(content.splitlines()). OpenHands' ObservationMaskingCondenser does the
# same with the text "<MASKED>" and an attention window counted in events.
PLACEHOLDER = "Old environment output: ({lines} lines omitted)"


@dataclass(frozen=True)
class ObservationMasking:
    """Keep the last `keep_last` tool outputs intact and replace older ones with a line-count placeholder.

    Every tool result counts as one observation, by position, already masked ones included, so
    the window is always the newest `keep_last` results and a second run changes nothing. Tool
    calls, assistant reasoning and user messages are never touched; no message is removed. An
    output no larger than its placeholder is left as it is. Needs no LLM.
    """

    name = "observation-masking"
    source: ClassVar[str] = (
        "Lindenbauer et al. 2025, 'The Complexity Trap: Simple Observation Masking Is as Efficient as LLM "
        "Summarization for Agent Context Management' (JetBrains Research, arXiv:2508.21433): SWE-agent "
        "LastNObservations with n = 10; OpenHands ObservationMaskingCondenser"
    )

    keep_last: int = setting(10, "how many of the newest tool outputs stay intact (the study's window: 10)")
    placeholder: str = setting(PLACEHOLDER, "replacement text; {lines} is the number of lines omitted (SWE-agent's wording)")

    def compact(self, context: Context, request: CompactionRequest) -> CompactionResult:
        messages = context.messages
        if self.keep_last < 0:
            raise ValueError(f"keep_last must be >= 0, got {self.keep_last}")
        masked_pattern = re.compile(re.escape(self.placeholder).replace(re.escape("{lines}"), r"\d+"))
        positions = [
            (m_index, p_index)
            for m_index, message in enumerate(messages)
            for p_index, part in enumerate(message.parts)
            if isinstance(part, ToolResultPart)
        ]
        older = positions[: max(0, len(positions) - self.keep_last)]
        new_messages = list(messages)
        masked = already = small = 0
        for m_index, p_index in older:
            message = new_messages[m_index]
            part = message.parts[p_index]
            assert isinstance(part, ToolResultPart)
            if masked_pattern.fullmatch(part.content):
                already += 1
                continue
            masked_message = self._masked(request, message, p_index)
            if masked_message is None:
                small += 1
                continue
            new_messages[m_index] = masked_message
            masked += 1
        counts = f"{len(positions)} tool outputs, the last {min(self.keep_last, len(positions))} kept"
        counts += f", {already} masked before" if already else ""
        counts += f", {small} too small to mask" if small else ""
        if not masked:
            return CompactionResult(context=context, messages_removed=0, note=f"nothing to do: {counts}")
        new = replace(context, messages=tuple(new_messages), known_usage=None)
        return CompactionResult(context=new, messages_removed=0, note=f"masked {masked} older tool outputs ({counts})")

    def _masked(self, request: CompactionRequest, message: Message, index: int) -> Message | None:
        """`message` with its part at `index` masked; None when the placeholder would not be smaller.
        (Computed afresh each time: a strategy keeps no state between compactions.)"""
        part = message.parts[index]
        assert isinstance(part, ToolResultPart), part  # the caller passes a tool result's index
        replacement = replace(part, content=self.placeholder.format(lines=len(part.content.splitlines())))
        if _size(request, message, index, replacement) < _size(request, message, index, part):
            return replace(message, parts=(*message.parts[:index], replacement, *message.parts[index + 1 :]))
        return None


def _size(request: CompactionRequest, message: Message, index: int, part: ToolResultPart) -> int:
    """The tokens of `message` holding only `part` in place of its part at `index`."""
    return request.count_tokens([replace(message, parts=(part,))])
