"""goose's compaction (block/goose crates/goose/src/context_mgmt/mod.rs, compact_messages): the whole
history summarized, then an assistant message telling the model to carry on, then the user's latest
text message again, so the request the summary serves is read verbatim after it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from compactlab.contract import CompactionRequest, CompactionResult, Context
from compactlab.sessions.messages import is_user_turn_start
from compactlab.sessions.model import Message, TextPart, ToolResultPart
from compactlab.strategies.base import setting
from compactlab.strategies.summarize import Summarize

# mod.rs CONVERSATION_CONTINUATION_TEXT and TOOL_LOOP_CONTINUATION_TEXT, as goose writes them.
_NOT_MENTIONED = (
    "Your context was compacted. The previous message contains a summary of the conversation so far.\n"
    "Do not mention that you read a summary or that conversation summarization occurred.\n"
)
CONVERSATION_CONTINUATION = _NOT_MENTIONED + "Just continue the conversation naturally based on the summarized context."
TOOL_LOOP_CONTINUATION = _NOT_MENTIONED + "Continue calling tools as necessary to complete the task."


@dataclass(frozen=True)
class GooseCompaction(Summarize):
    """Summarize the whole history; then goose's continuation message and the latest user text again."""

    name: ClassVar[str] = "goose-compaction"
    source: ClassVar[str] = "block/goose crates/goose/src/context_mgmt/mod.rs compact_messages"

    keep_recent_tokens: int | None = setting(0, "tokens of recent history kept verbatim: none (goose summarizes all)")
    template: str = setting("goose.j2", "prompt template of the summary (goose's compaction.md, in substance)")
    track_files: bool = setting(False, "goose appends no file lists")
    append_last_request: bool = setting(False, "goose re-appends the latest user text as a message of its own instead")

    def compact(self, context: Context, request: CompactionRequest) -> CompactionResult:
        latest = _latest_user_text(context.messages)
        result = super().compact(context, request)
        if result.messages_removed == 0:
            return result
        # is_most_recent: the latest user text is the context's last message (a new prompt), not a tool loop.
        at_prompt = latest is not None and latest[0] == len(context.messages) - 1
        added = [Message(role="assistant", parts=(TextPart(CONVERSATION_CONTINUATION if at_prompt else TOOL_LOOP_CONTINUATION),))]
        if latest is not None:
            added.append(Message(role="user", parts=(TextPart(latest[1]),)))
        compacted = replace(result.context, messages=(*result.context.messages, *added))
        return replace(result, context=compacted, note=f"{result.note}; continuation and the latest user text appended")


def _latest_user_text(messages) -> tuple[int, str] | None:
    """goose's has_text_only: the newest user message with text and no tool content, and its index."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if is_user_turn_start(message) and not any(isinstance(p, ToolResultPart) for p in message.parts):
            text = "\n".join(p.text for p in message.parts if isinstance(p, TextPart)).strip()
            if text:
                return index, text
    return None
