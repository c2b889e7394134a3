"""Archive (seed 000): keep the full pre-compaction history, and let the summary point to it.

Another strategy (summarize by default) compacts as usual; the complete history it replaced is
kept in `Context.archives`, and the summary message says where it is, so an agent with a
retrieval tool could read it back. The archive costs no prompt tokens; what it changes is that
nothing is lost for good, which the report shows beside the strategy's other numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from compactlab.contract import CompactionRequest, CompactionResult, Context, Strategy
from compactlab.sessions.messages import is_summary
from compactlab.sessions.model import TextPart
from compactlab.strategies.base import named_strategy, strategy_setting


@dataclass(frozen=True)
class Archive:
    """Compact with an inner strategy and archive the full history it replaced (seed 000)."""

    name: ClassVar[str] = "archive"
    source: ClassVar[str] = "seed 000 (main agent)"
    inner: str | Strategy = strategy_setting(
        "summarize", "the strategy that compacts (registered name, file.py:Name or a strategy)"
    )

    def compact(self, context: Context, request: CompactionRequest) -> CompactionResult:
        inner = named_strategy(self.inner, "archive's inner")
        result = inner.compact(context, request)
        if result.messages_removed == 0:
            return result
        number = len(context.archives) + 1
        reference = (
            f"\n\n[The full conversation before this point ({len(context.messages)} messages) is archived as "
            f"archive #{number}; ask for it to be retrieved if a detail is missing from this summary.]"
        )
        messages = tuple(
            replace(m, parts=(*m.parts, TextPart(reference))) if is_summary(m) else m for m in result.context.messages
        )
        archived = replace(result.context, messages=messages, archives=(*context.archives, context.messages))
        return replace(result, context=archived, note=f"{result.note}; archived {len(context.messages)} messages as #{number}")
