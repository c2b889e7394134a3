"""pi's own token estimate of a message (`estimateTokens`), for the pi preset's cut and kept tail.

pi-mono packages/coding-agent/src/core/compaction/compaction.ts `estimateTokens` counts characters
(JavaScript string lengths: UTF-16 code units) and divides by 4, rounding up per message:
- a user message: its text blocks (images count nothing);
- an assistant message: text, thinking, and each tool call's name plus `JSON.stringify(arguments)`
  (no spaces after `,` and `:`);
- a tool result (and a custom message): its text, and 4,800 characters per image;
- a compaction or branch summary: the summary's text (without the prefix pi wraps it in for the model).
`compactlab.tokens.estimators` registers it as the local estimator `pi-chars/4` and the hybrid
`hybrid-pi` (the last usage plus `pi-chars/4` of the messages since), which the pi preset counts with.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from compactlab.sessions.messages import is_summary, summary_text
from compactlab.sessions.model import ImagePart, Message, TextPart, ThinkingPart, ToolCallPart, ToolResultPart
from compactlab.tokens.framing import Framing
from compactlab.tokens.tokenizers import TokenCache

IMAGE_CHARS = 4_800  # "Estimate images as 4000 chars, or 1200 tokens" (the code adds 4,800)


def js_length(text: str) -> int:
    """`text.length` in JavaScript: UTF-16 code units (a character outside the BMP is two)."""
    return len(text.encode("utf-16-le")) // 2


def stringified(arguments: str) -> str:
    """A tool call's arguments as `JSON.stringify` writes the object pi holds (compactlab keeps their
    JSON text; text that is not JSON stays as it is)."""
    try:
        return json.dumps(json.loads(arguments), ensure_ascii=False, separators=(",", ":"))
    except ValueError:
        return arguments


def pi_chars(message: Message) -> int:
    """The characters `estimateTokens` counts in `message`."""
    if is_summary(message):
        return js_length(summary_text(message))
    chars = 0
    for part in message.parts:
        if isinstance(part, TextPart):
            chars += js_length(part.text)
        elif isinstance(part, ThinkingPart) and message.role == "assistant":
            chars += js_length(part.text)
        elif isinstance(part, ToolCallPart) and not part.from_text:
            chars += js_length(part.name) + js_length(stringified(part.arguments))
        elif isinstance(part, ToolResultPart):
            chars += js_length(part.content)
        elif isinstance(part, ImagePart) and message.role == "tool":
            chars += IMAGE_CHARS
    return chars


@dataclass(frozen=True)
class PiEstimate:
    """`estimateTokens`: ceil(characters / 4) per message."""

    prompt_overhead: float = 0.0
    name: str = "pi-chars/4"

    def message_tokens(self, message: Message, framing: Framing, cache: TokenCache) -> float:
        return math.ceil(pi_chars(message) / 4)
