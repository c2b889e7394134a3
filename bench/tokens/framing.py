"""How a provider sees a message: which text counts, and what framing and images add.

Every estimator counts the same view of a message, so estimators differ only in how they turn
text into tokens. What is publicly documented is applied; what is not is stated here and left out
rather than guessed:

- OpenAI chat framing (OpenAI cookbook, "How to count tokens with tiktoken"): 3 tokens per
  message for the role markers, 3 more to prime the reply. Applied by the tiktoken estimators.
  How tool-call JSON and tool definitions are framed is not documented: a tool call counts as its
  name plus its arguments text, a tool result as its content. A call read from the message's own
  text (`from_text`, mini-swe-agent v1) counts nothing: the text holds it already.
- Anthropic publishes no tokenizer and no per-message framing; nothing is added for it beyond the
  text. Images: ≈ width·height/750 tokens after scaling the long edge to at most 1568 px
  (Anthropic vision docs); with unknown size, the documented maximum of about 1600.
- OpenAI images (high detail): 85 + 170 per 512-px tile after fitting in 2048 px and scaling the
  short side to 768 (OpenAI vision docs); with unknown size, 765 (a 1024×1024 image).
- Thinking: Anthropic drops thinking blocks of earlier turns from later prompts (extended-thinking
  docs), so Claude Code thinking is not counted (the current tool loop's thinking, which is kept,
  is a known small undercount). DeepSeek reasoner runs recorded by mini-swe-agent resent their
  reasoning (each prompt exceeds the previous prompt plus output), so it is counted there. Codex
  keeps only encrypted reasoning in the prompt, which is not in the file: its summaries are not counted.
  pi sends thinking back with its signature, and Anthropic drops it from later prompts as for Claude
  Code (pi's sessions in the shared data are all Claude): not counted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from compactlab.sessions.importers import format_facts, importers
from compactlab.sessions.model import ImagePart, Message, TextPart, ThinkingPart, ToolCallPart, ToolResultPart

OPENAI_TOKENS_PER_MESSAGE = 3
OPENAI_REPLY_PRIMING = 3


@dataclass(frozen=True)
class Framing:
    """The view of messages for one source format."""

    count_thinking: bool = True
    anthropic_images: bool = False

    def texts(self, message: Message) -> list[str]:
        """The texts of a message that reach the model's prompt."""
        texts: list[str] = []
        for part in message.parts:
            if isinstance(part, TextPart):
                texts.append(part.text)
            elif isinstance(part, ThinkingPart):
                if self.count_thinking:
                    texts.append(part.text)
            elif isinstance(part, ToolCallPart) and not part.from_text:  # else its text holds it
                texts.append(part.name)
                texts.append(part.arguments)
            elif isinstance(part, ToolResultPart):
                texts.append(part.content)
        return texts

    def image_tokens(self, message: Message) -> int:
        images = [p for p in message.parts if isinstance(p, ImagePart)]
        estimate = anthropic_image_tokens if self.anthropic_images else openai_image_tokens
        return sum(estimate(image) for image in images)


@dataclass(frozen=True)
class SeenFraming(Framing):
    """A framing that makes each message's view once, for every estimator that asks: the estimation
    benchmark counts a session's messages with nine estimators, and making the view of each message
    again for each was a fifth of it. The view is `Framing`'s; `seen` holds each message with it,
    so no id is reused while it lives (one per session: it holds the session's messages)."""

    seen: dict[int, tuple[Message, list[str], int]] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, framing: Framing) -> SeenFraming:
        return cls(count_thinking=framing.count_thinking, anthropic_images=framing.anthropic_images)

    def _view(self, message: Message) -> tuple[Message, list[str], int]:
        found = self.seen.get(id(message))
        if found is None or found[0] is not message:
            found = (message, Framing.texts(self, message), Framing.image_tokens(self, message))
            self.seen[id(message)] = found
        return found

    def texts(self, message: Message) -> list[str]:
        return self._view(message)[1]

    def image_tokens(self, message: Message) -> int:
        return self._view(message)[2]


def framing_for(source_format: str) -> Framing:
    """The view of a source format's messages, from what its importer states (`FormatFacts`)."""
    facts = format_facts(source_format)
    return Framing(count_thinking=facts.thinking_resent, anthropic_images=facts.anthropic_images)


def without_system_prompt() -> frozenset[str]:
    """The source formats whose files hold neither the system prompt nor the tool definitions."""
    return frozenset(name for name, importer in importers().items() if not importer.facts.system_prompt_in_file)


def anthropic_image_tokens(image: ImagePart) -> int:
    if not image.width or not image.height:
        return 1600
    scale = min(1.0, 1568 / max(image.width, image.height))
    return math.ceil(image.width * scale * image.height * scale / 750)


def openai_image_tokens(image: ImagePart) -> int:
    if not image.width or not image.height:
        return 765
    width, height = float(image.width), float(image.height)
    fit = min(1.0, 2048 / max(width, height))
    width, height = width * fit, height * fit
    short = min(1.0, 768 / min(width, height))
    width, height = width * short, height * short
    return 85 + 170 * math.ceil(width / 512) * math.ceil(height / 512)
