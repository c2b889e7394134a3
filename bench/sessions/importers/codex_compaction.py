"""What Codex keeps verbatim when it compacts (codex-rs/core/src/compact.rs, compact_remote.rs).

Local compaction (`run_compact_task_inner`) replaces the history with `build_compacted_history`:
the initial context (instructions, AGENTS.md, the environment context), then the newest user
messages that fit `COMPACT_USER_MESSAGE_MAX_TOKENS` (20,000, counted by `approx_token_count`: UTF-8
bytes / 4, rounded up; the first that does not fit is truncated to the tokens left and the walk
stops), then the summary. Earlier summaries are not user messages (`is_summary_message`).

Remote compaction (`run_remote_compact_task_inner`, every compaction of the Codex 0.142-0.146
development rollouts) replaces the history with the `replacement_history` the server returned and
writes it whole: user messages, the developer message and AGENTS.md again, and an encrypted
`compaction` item. That history is the summary here, every message's text in order and a
placeholder for the encrypted item, whose size is Codex's own estimate of it
(`estimate_reasoning_length` in context_manager/history.rs: 3/4 of the base64 length less 650
bytes, at 4 bytes a token) in `summary_tokens`. Only the base instructions, which Codex sends apart
from the history with every request, are kept beside it. The first prompt after the compaction is
then a fresh prompt like the session's first one, plain messages and the tools, so the replay sizes
it as that first call was measured (`compactlab.tokens.metering`, `Meter.written`).

A truncated message is kept whole here (the session has no truncated copy): the kept size can be
up to one message's excess high.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from compactlab.sessions.model import CompactionMarker, Message

USER_MESSAGE_BUDGET = 20_000
# What a remote compaction's summary shows for its encrypted item: what that item kept cannot be read.
UNREADABLE_SUMMARY = "[encrypted compaction summary, unreadable]"
SUMMARY_PREFIX = "Another language model started to solve this problem and produced a summary of its thinking process."


def approx_tokens(text: str) -> int:
    """Codex's `approx_token_count`: UTF-8 bytes / 4, rounded up."""
    return (len(text.encode("utf-8")) + 3) // 4


def _is_user_message(message: Message) -> bool:
    return message.role == "user" and not message.instruction and not message.text().startswith(SUMMARY_PREFIX)


def kept_locally(messages: Sequence[Message], at: int) -> tuple[int, ...]:
    """The indices of `messages[:at]` local compaction keeps: instructions, and the newest user messages in the budget."""
    instructions = [i for i in range(at) if messages[i].role == "system" or messages[i].instruction]
    chosen, remaining = [], USER_MESSAGE_BUDGET
    for index in reversed([i for i in range(at) if _is_user_message(messages[i])]):
        if remaining == 0:
            break
        tokens = approx_tokens(messages[index].text())
        chosen.append(index)
        if tokens > remaining:
            break  # truncated to what is left: kept (whole) as the last one
        remaining -= tokens
    return tuple(sorted([*instructions, *chosen]))


def encrypted_tokens(encrypted_content: str) -> int:
    """Codex's estimate of an encrypted item's tokens (`estimate_reasoning_length`, then bytes / 4)."""
    return (max(0, len(encrypted_content) * 3 // 4 - 650) + 3) // 4


def compaction_marker(
    payload: dict, messages: Sequence[Message], pre_tokens: int | None, line: int, base: int | None = None
) -> CompactionMarker:
    """The marker of a `compacted` item read after `messages`: its summary and what Codex kept
    (`base`: the index of the base instructions' message, if the rollout records them). Nothing in
    the rollout says whether /compact or the token limit started it."""
    replacement = payload.get("replacement_history")
    at = len(messages)
    if isinstance(replacement, list):
        summary = payload["message"] or _replacement_text(replacement)
        hidden = sum(encrypted_tokens(item["encrypted_content"]) for item in _encrypted(replacement))
        kept = (base,) if base is not None and base < at else ()
        return CompactionMarker(at, "unknown", pre_tokens, summary, line, kept, hidden)
    return CompactionMarker(at, "unknown", pre_tokens, payload["message"], line, kept_locally(messages, at))


def repointed(marker: CompactionMarker, before: Sequence[Message], after: Sequence[Message]) -> CompactionMarker:
    """The marker re-pointed after check_tool_pairing dropped messages of `before` (kept ones keep their line)."""
    kept_lines = {m.line for m in after}
    new_index = {old: new for new, old in enumerate(i for i, m in enumerate(before) if m.line in kept_lines)}
    if len(new_index) == len(before):
        return marker
    return replace(
        marker,
        at_message=sum(1 for old in new_index if old < marker.at_message),
        kept=tuple(new_index[i] for i in marker.kept if i in new_index),
    )


def _texts(content: object) -> list[str]:
    return (
        [c["text"] for c in content if isinstance(c, dict) and isinstance(c.get("text"), str)]
        if isinstance(content, list)
        else []
    )


def _replacement_text(history: list) -> str:
    """A remote compaction's summary: the text of its replacement history."""
    chunks: list[str] = []
    for item in history:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "message":
            chunks += _texts(item.get("content"))
        elif item.get("type") in ("compaction", "compaction_summary"):
            chunks.append(UNREADABLE_SUMMARY)
    return "\n\n".join(chunks)


def _encrypted(history: list) -> list[dict]:
    """The encrypted summary items of a remote compaction's replacement history."""
    return [
        item
        for item in history
        if isinstance(item, dict)
        and item.get("type") in ("compaction", "compaction_summary")
        and isinstance(item.get("encrypted_content"), str)
    ]
