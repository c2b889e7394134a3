"""The providers' own compactions: a summary, written by the provider, that replaces the history.

Anthropic's server compaction (`compact_20260112`) and OpenAI's Responses compaction
(`context_management` with `compact_threshold`) both summarize the conversation when the input
crosses a threshold and drop everything before the block or item they return; the system prompt
(Anthropic's `system`, OpenAI's `instructions`) is not a message and stays. Both are `Summarize`
with nothing kept after the summary, their threshold a setting checked against what the
documentation allows. The rules, their sources and dates: `compactlab.strategies.provider_rules`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from compactlab.strategies.base import setting
from compactlab.strategies.summarize import Summarize

ANTHROPIC_TRIGGER = 150_000  # compact_20260112's default trigger, input tokens
ANTHROPIC_MINIMUM = 50_000  # its documented minimum
# OpenAI documents no default compact_threshold and no size for its opaque item: both assumed.
OPENAI_THRESHOLD = 200_000  # the value of the public examples (OpenRouter's compaction page)
OPENAI_ITEM_TOKENS = 4_096  # the compaction item's size at most: assumed (compactlab's summary budget)


@dataclass(frozen=True)
class AnthropicCompaction(Summarize):
    """Anthropic server compaction: past `trigger_tokens` input tokens, a summary replaces every message
    before it; `keep_recent_tokens` models what a client that pauses after the compaction re-appends."""

    name: ClassVar[str] = "anthropic-compaction"
    source: ClassVar[str] = (
        "Anthropic server compaction, compact_20260112 (platform.claude.com/docs/en/build-with-claude/compaction, "
        "read 2026-12-02)"
    )

    trigger_tokens: int = setting(
        ANTHROPIC_TRIGGER, f"input tokens that trigger the compaction (trigger; at least {ANTHROPIC_MINIMUM:,})"
    )

    def __post_init__(self) -> None:
        value = self.trigger_tokens
        if isinstance(value, bool) or not isinstance(value, int) or value < ANTHROPIC_MINIMUM:
            raise ValueError(
                f"{self.name}: setting trigger_tokens = {value!r} is below compact_20260112's documented minimum: the "
                f"trigger must be at least {ANTHROPIC_MINIMUM:,} input tokens (default {ANTHROPIC_TRIGGER:,})"
            )


@dataclass(frozen=True)
class OpenAICompaction(Summarize):
    """OpenAI Responses compaction: past `compact_threshold` rendered tokens, an opaque compaction item
    replaces every item before it; the item stands in as the run summarizer's text within
    `max_summary_tokens` (its real size is not documented: assumed)."""

    name: ClassVar[str] = "openai-compaction"
    source: ClassVar[str] = (
        "OpenAI Responses API server-side compaction, context_management compact_threshold "
        "(developers.openai.com/api/docs/guides/compaction, read 2026-12-02)"
    )

    compact_threshold: int = setting(
        OPENAI_THRESHOLD, "rendered tokens that trigger the compaction (compact_threshold; no documented default: assumed)"
    )

    def __post_init__(self) -> None:
        value = self.compact_threshold
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{self.name}: setting compact_threshold must be a whole number of tokens >= 1, got {value!r}")
