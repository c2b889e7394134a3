"""opencode V2's compaction (anomalyco/opencode packages/core/src/session/compaction.ts, as the search
index stores it at 031a4a9c): a checkpoint replaces the history. The newest messages, up to
`keep_recent_tokens` (15,000) of their serialized text, are kept, but serialized: one text of
"[User]: ...", "[Assistant]: ...", "[Assistant tool call]: name(input)" and "[Tool result]: ..." lines,
each tool result cut to `tool_output_chars` (2,000) characters, inside the checkpoint after the
summary of everything before them (findTailStart, serializeRecentMessage, truncateToolOutput). A
later compaction updates the previous checkpoint's summary with the history since (buildPrompt's
update mode): the checkpoint, its serialized tail too, is what the summarizer updates.

The tail (findTailStart): walking back from the newest entry, entries are kept while their serialized
tokens fit the allowance (the newest always), then the start moves back to a user message, so an
assistant's tool calls and results stay together; when it reaches the first entry (everything fits),
only the latest exchange is kept, from the latest user message, so that an older part is left to
summarize; with no user message but the first, everything is summarized and nothing kept."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

from compactlab.contract import CompactionRequest, CompactionResult, Context
from compactlab.sessions.messages import (
    is_instruction,
    is_summary,
    is_user_turn_start,
    pinned_head,
    summary_message,
    summary_text,
)
from compactlab.sessions.model import Message, TextPart, ThinkingPart, ToolCallPart, ToolResultPart
from compactlab.strategies.base import setting
from compactlab.strategies.summarize import Summarize

TRUNCATED = "\n[truncated]"  # truncateToolOutput's marker


@dataclass(frozen=True)
class OpencodeCheckpoint(Summarize):
    """A checkpoint replaces the history: the summary of all but the newest ~15,000 tokens, which follow it serialized, each
    tool result cut to 2,000 characters; a later one updates the earlier checkpoint."""

    name: ClassVar[str] = "opencode-checkpoint"
    source: ClassVar[str] = "anomalyco/opencode packages/core/src/session/compaction.ts (V2), 031a4a9c"

    keep_recent_tokens: int | None = setting(15_000, "tokens of the newest messages' serialized text kept in the checkpoint")
    tool_output_chars: int = setting(2_000, "each tool result in the serialized tail is cut to this many characters")
    template: str = setting("opencode_v2.j2", "prompt template of the summary and of its updates")
    update_template: str = setting("opencode_v2.j2", "prompt template that updates the earlier checkpoint")
    iterative: bool = setting(True, "a later compaction updates the earlier checkpoint")
    track_files: bool = setting(False, "the template's Relevant Files section lists them: no file lists appended")
    append_last_request: bool = setting(False, "nothing appended to the summary but the serialized tail")

    def compact(self, context: Context, request: CompactionRequest) -> CompactionResult:
        messages = context.messages
        head = pinned_head(messages, request.pin_task)
        previous = messages[head] if head < len(messages) and is_summary(messages[head]) else None
        body = messages[head + (previous is not None) :]
        serialize = lambda m: serialized(m, self.tool_output_chars)  # noqa: E731
        count = lambda text: request.count_tokens([Message(role="user", parts=(TextPart(text),))])  # noqa: E731
        start = tail_start(body, self.keep_recent_tokens or 0, serialize, count, previous is not None)
        if start is None:
            return CompactionResult(context, 0, note="nothing to compact yet")
        span = [m for m in body[:start] if not is_instruction(m)]
        # Instructions stay verbatim, outside the checkpoint, those of the tail too ("checkpoints and instruction
        # updates are handled outside the serialized tail").
        kept = [m for m in body if is_instruction(m)]
        recent = "\n\n".join(text for text in map(serialize, body[start:]) if text)
        previous_text = summary_text(previous) if previous is not None else None
        text, calls, prompt_hash = self.summary_of(span, previous_text, request, messages)
        checkpoint = f"{text}\n\n<recent-context>\n{recent}\n</recent-context>" if recent else text
        compacted = replace(
            context, messages=(*messages[:head], *kept, summary_message(checkpoint)), summary=checkpoint, kept_tail=0
        )
        removed = len(span) + sum(1 for m in body[start:] if not is_instruction(m)) + (previous is not None)
        note = f"summarized {len(span)} messages, {len(body) - start} serialized into the checkpoint"
        return CompactionResult(compacted, removed, tuple(calls), prompt_hash, note)


def serialized(message: Message, tool_output_chars: int) -> str:
    """serializeRecentMessage: a message as the checkpoint's lines ("" for instructions and checkpoints)."""
    if is_instruction(message) or is_summary(message):
        return ""
    if is_user_turn_start(message):
        return f"[User]: {message.text()}"
    lines = []
    for part in message.parts:
        if isinstance(part, TextPart) and part.text:
            lines.append(f"[Assistant]: {part.text}" if message.role == "assistant" else f"[User]: {part.text}")
        elif isinstance(part, ThinkingPart) and part.text:
            lines.append(f"[Assistant reasoning]: {part.text}")
        elif isinstance(part, ToolCallPart):
            lines.append(f"[Assistant tool call]: {part.name}({part.arguments})")
        elif isinstance(part, ToolResultPart):
            kind = "[Tool error]" if part.is_error else "[Tool result]"
            lines.append(f"{kind}: {truncated(part.content, tool_output_chars)}")
    return "\n".join(lines)


def truncated(text: str, limit: int) -> str:
    """truncateToolOutput: the first `limit` characters and "[truncated]" when there were more."""
    return text if len(text) <= limit else text[:limit] + TRUNCATED


def tail_start(
    body: Sequence[Message],
    keep_tokens: int,
    serialize: Callable[[Message], str],
    count: Callable[[str], int],
    after_checkpoint: bool,
) -> int | None:
    """findTailStart: where the kept (serialized) tail starts in `body`; len(body) keeps none; None: nothing
    to compact (no message with text)."""
    entries = [(index, text) for index, message in enumerate(body) if (text := serialize(message))]
    if not entries:
        return None
    total, start = 0, len(entries)
    for at in range(len(entries) - 1, -1, -1):
        grown = total + count(entries[at][1])
        if start < len(entries) and grown > keep_tokens:
            break
        total, start = grown, at
    # Back to a user message, so an assistant's tool calls and results stay together.
    while start > 0 and not is_user_turn_start(body[entries[start][0]]):
        start -= 1
    if start > 0:
        return entries[start][0]
    users = [at for at, (index, _) in enumerate(entries) if is_user_turn_start(body[index])]
    if users and users[-1] > 0:  # everything fits: only the latest exchange, so an older part is left to summarize
        return entries[users[-1]][0]
    return entries[0][0] if after_checkpoint else len(body)
