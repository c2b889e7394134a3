"""What a strategy author imports: the contract, the session records and the history's cut helpers.

The helpers cut a history where the built-in strategies cut it. A public module (`import compactlab.authoring`), kept
small and stable, so that a strategy file needs no internal module:

    from dataclasses import dataclass, replace

    from compactlab.authoring import CompactionRequest, CompactionResult, Context, pinned_head, setting, turn_boundaries

    @dataclass(frozen=True)
    class KeepLastTurns:
        turns: int = setting(3, "user turns kept after the pinned head")

        def compact(self, context: Context, request: CompactionRequest) -> CompactionResult:
            head = pinned_head(context.messages, request.pin_task)
            cuts = [i for i in turn_boundaries(context.messages) if i > head]
            if len(cuts) <= self.turns:
                return CompactionResult(context=context, messages_removed=0, note="nothing to drop")
            cut = cuts[-self.turns]
            kept = context.messages[:head] + context.messages[cut:]
            return CompactionResult(context=replace(context, messages=kept), messages_removed=cut - head)

Use it with `--strategy path/to/file.py:KeepLastTurns`, or register it in the `compactlab.strategies`
entry-point group (docs/strategies.md). Names are imported when first used, as `compactlab`'s are.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from compactlab.contract import CompactionRequest, CompactionResult, Context, Strategy, SummaryRequest, Trigger
    from compactlab.sessions.messages import (
        is_summary,
        pinned_head,
        pinned_in,
        pinned_indexes,
        safe_cut_points,
        summary_message,
        summary_text,
        turn_boundaries,
    )
    from compactlab.sessions.model import ImagePart, Message, Session, TextPart, ThinkingPart, ToolCallPart, ToolResultPart
    from compactlab.strategies.base import setting

_CONTRACT = ("CompactionRequest", "CompactionResult", "Context", "Strategy", "SummaryRequest", "Trigger")
_RECORDS = ("Message", "Session", "TextPart", "ThinkingPart", "ToolCallPart", "ToolResultPart", "ImagePart")
# Where a history may be cut, what is pinned in front, and the summary message the engine recognises.
_CUTS = ("safe_cut_points", "turn_boundaries", "pinned_head", "pinned_in", "pinned_indexes")
_SUMMARIES = ("summary_message", "is_summary", "summary_text")
_WHERE = {
    **dict.fromkeys(_CONTRACT, "compactlab.contract"),
    **dict.fromkeys(_RECORDS, "compactlab.sessions.model"),
    **dict.fromkeys((*_CUTS, *_SUMMARIES), "compactlab.sessions.messages"),
    "setting": "compactlab.strategies.base",
}
__all__ = [
    "CompactionRequest",
    "CompactionResult",
    "Context",
    "Strategy",
    "SummaryRequest",
    "Trigger",
    "Message",
    "Session",
    "TextPart",
    "ThinkingPart",
    "ToolCallPart",
    "ToolResultPart",
    "ImagePart",
    "safe_cut_points",
    "turn_boundaries",
    "pinned_head",
    "pinned_in",
    "pinned_indexes",
    "summary_message",
    "is_summary",
    "summary_text",
    "setting",
]
assert set(__all__) == set(_WHERE)


def __getattr__(name: str) -> object:
    if name not in _WHERE:
        raise AttributeError(f"module 'compactlab.authoring' has no attribute {name!r}; its names are {sorted(_WHERE)}")
    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
