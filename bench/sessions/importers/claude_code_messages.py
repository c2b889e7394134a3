"""One Claude Code session's messages, built from its lines (`compactlab.sessions.importers.claude_code`
says which lines are one session's and the facts of the format each step relies on).

`SessionBuilder` merges the lines of one API response into one message (blocks kept once, the last
usage winning), turns `tool_result` blocks into `tool` messages, and a `compact_boundary` with its
summary into a `CompactionMarker`.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Literal

from compactlab.sessions.importers.importer import (
    ToolPairing,
    call_counts,
    image_part,
    is_call_count,
    is_count,
    timestamp_seconds,
)
from compactlab.sessions.model import (
    CompactionMarker,
    LLMCall,
    Message,
    Part,
    Role,
    Session,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
)
from compactlab.sessions.source import Record, RecordIssues, Source

FORMAT = "claude-code"  # the format name its sessions carry (the importer's name)
CONVERSATION_TYPES = ("user", "assistant")


@dataclass
class Draft:
    """A message being assembled from one or more lines."""

    role: Role
    line: int
    source_id: str | None
    parts: list[Part] = field(default_factory=list)
    # The content blocks added so far, by a cheap key, each with its JSON text once it was needed.
    seen_blocks: dict[object, list[list]] = field(default_factory=dict)
    call: LLMCall | None = None

    def freeze(self) -> Message:
        return Message(role=self.role, parts=tuple(self.parts), source_id=self.source_id, line=self.line, call=self.call)

    def seen(self, block: dict) -> bool:
        """Whether the same block (the same JSON) was added before; if not, it counts as added now.

        Blocks are told apart by their type, id and text first, and by their whole JSON text only
        when those agree, so that a tool call's whole input is serialized only when it must be."""
        cheap: tuple | None = (block.get("type"), block.get("id"), block.get("text"), block.get("thinking"))
        if not all(value is None or isinstance(value, (str, int)) for value in cheap or ()):
            cheap = None  # a field that is no plain text or number (NaN is not equal to itself): by the JSON
        earlier = self.seen_blocks.setdefault(cheap, [])
        if earlier:
            key = json.dumps(block, sort_keys=True)
            for entry in earlier:
                if entry[1] is None:
                    entry[1] = json.dumps(entry[0], sort_keys=True)
                if entry[1] == key:
                    return True
            earlier.append([block, key])
            return False
        earlier.append([block, None])
        return False


class SessionBuilder:
    """The messages, calls and compactions of one session, added a line at a time, then `build`."""

    def __init__(self, issues: RecordIssues):
        self.issues = issues
        self.items: list[Draft | CompactionMarker] = []
        self.by_response_id: dict[str, Draft] = {}
        # Lines of one response share `message.id` and `requestId`; the latter joins a line whose id is missing.
        self.by_request_id: dict[str, Draft] = {}
        self.request_responses: dict[str, str | None] = {}  # requestId -> the message.id its first line had
        self.ignored: Counter[str] = Counter()
        self.pending_boundary: Record | None = None
        self.session_id: str | None = None

    def ignore(self, why: str) -> None:
        self.ignored[why] += 1

    def _message(self, record: Record) -> dict | None:
        data = record.data
        self.session_id = self.session_id or data.get("sessionId")
        message = data.get("message")
        if not isinstance(message, dict):
            self.issues.report(record.line, f"{data.get('type')} line has no `message` object")
            return None
        content = message.get("content")
        if not isinstance(content, (str, list)):
            self.issues.report(record.line, f"`message.content` must be a string or a list, got {type(content).__name__}")
            return None
        return message

    def add_assistant(self, record: Record) -> None:
        message = self._message(record)
        if message is None:
            return
        model = message.get("model")
        if model == "<synthetic>":
            self.ignore("assistant line with model <synthetic>: a local error stub, not an LLM call")
            return
        response_id, request_id = message.get("id"), record.data.get("requestId")
        response_id = response_id if isinstance(response_id, str) and response_id else None
        request_id = request_id if isinstance(request_id, str) and request_id else None
        if response_id is None and request_id is None:
            self.issues.report(
                record.line, "assistant line has neither `message.id` nor `requestId`: its response cannot be told apart"
            )
            return
        draft = self.by_response_id.get(response_id) if response_id else None
        if draft is None and request_id:
            draft = self.by_request_id.get(request_id)
            # A response's lines share both ids: one without `message.id`, or with another one,
            # is damaged. Read as part of the response its requestId names (not as a call of its
            # own, which would count one call twice), and reported.
            first = self.request_responses.get(request_id)
            if response_id is None:
                self.issues.report(
                    record.line, "assistant line has no `message.id`: read as part of the response its `requestId` names"
                )
            elif draft is not None and first is not None and first != response_id:
                self.issues.report(
                    record.line,
                    f"assistant line's `message.id` {response_id!r:.40} differs from {first!r:.40} of the response its "
                    f"`requestId` names (a damaged id): read as part of that response",
                )
            self.request_responses.setdefault(request_id, response_id)
        if draft is None:
            draft = Draft(role="assistant", line=record.line, source_id=response_id or record.data.get("uuid"))
            self.items.append(draft)
        if response_id:
            self.by_response_id.setdefault(response_id, draft)
        if request_id:
            self.by_request_id.setdefault(request_id, draft)
        for block in _blocks(message["content"]):
            if draft.seen(block):
                continue  # the same block written again by a later line of the same response
            part = self._assistant_part(block, record.line)
            if part is not None:
                draft.parts.append(part)
        usage = message.get("usage")
        if usage is not None:
            call = self._call(usage, model, record)
            if call is not None:
                draft.call = call  # later lines carry the final output_tokens

    def _assistant_part(self, block: dict, line: int) -> Part | None:
        kind = block.get("type")
        if kind == "text":
            return TextPart(text=_str(block.get("text")))
        if kind == "thinking":
            return ThinkingPart(text=_str(block.get("thinking")))
        if kind == "redacted_thinking":
            return ThinkingPart(text="[redacted thinking]")
        if kind in ("tool_use", "server_tool_use"):
            if not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str):
                self.issues.report(line, "tool_use block without a string `id` and `name`")
                return None
            arguments = json.dumps(block.get("input", {}), ensure_ascii=False)
            return ToolCallPart(id=block["id"], name=block["name"], arguments=arguments)
        self.issues.report(line, f"unknown assistant content block type {kind!r}")
        return None

    def _call(self, usage: object, model: object, record: Record) -> LLMCall | None:
        fields = {
            "input_tokens": "input_tokens",
            "cache_read_input_tokens": "cache_read_tokens",
            "cache_creation_input_tokens": "cache_write_tokens",
            "output_tokens": "output_tokens",
        }
        if not isinstance(usage, dict):
            self.issues.report(record.line, f"`message.usage` must be an object of token counts, got {usage!r:.80}")
            return None
        # Absent: none of that kind (older versions write no cache fields). Null is no count: no real
        # file writes one (0 of 27,593 usage lines).
        counts = call_counts(usage, fields.items(), "message.usage", lambda problem: self.issues.report(record.line, problem))
        if counts is None:
            return None
        request_id = record.data.get("requestId")
        # The write's lifetime split (Claude Code from 2.0.x): the one-hour part, where recorded.
        split = usage.get("cache_creation")
        one_hour = split.get("ephemeral_1h_input_tokens") if isinstance(split, dict) else None
        return LLMCall(
            model=str(model or "unknown"),
            **counts,
            request_id=request_id if isinstance(request_id, str) else None,
            timestamp=timestamp_seconds(record.data.get("timestamp")),
            cache_write_1h_tokens=min(int(one_hour), counts["cache_write_tokens"]) if is_call_count(one_hour) else 0,
        )

    def add_user(self, record: Record) -> None:
        message = self._message(record)
        if message is None:
            return
        if record.data.get("isCompactSummary"):
            self._attach_summary(record, message)
            return
        uuid = record.data.get("uuid")
        user = Draft(role="user", line=record.line, source_id=uuid)
        for block in _blocks(message["content"]):
            kind = block.get("type")
            if kind == "tool_result":
                self._tool_result(block, record.line, uuid)
            elif kind == "text":
                user.parts.append(TextPart(text=_str(block.get("text"))))
            elif kind == "image":
                src = block.get("source")
                src = src if isinstance(src, dict) else {}
                user.parts.append(image_part(_str(src.get("media_type")), src.get("data")))
            else:
                self.issues.report(record.line, f"unknown user content block type {kind!r}")
        if user.parts:
            self.items.append(user)

    def _tool_result(self, block: dict, line: int, uuid: str | None) -> None:
        call_id = block.get("tool_use_id")
        if not isinstance(call_id, str):
            self.issues.report(line, "tool_result block without a string `tool_use_id`")
            return
        texts: list[str] = []
        images: list[Part] = []
        content = block.get("content", "")
        for item in [content] if isinstance(content, str) else content if isinstance(content, list) else []:
            if isinstance(item, str):
                texts.append(item)
            elif isinstance(item, dict) and item.get("type") == "text":
                texts.append(_str(item.get("text")))
            elif isinstance(item, dict) and item.get("type") == "image":
                src = item.get("source")
                src = src if isinstance(src, dict) else {}
                images.append(image_part(_str(src.get("media_type")), src.get("data")))
            elif isinstance(item, dict) and item.get("type") == "tool_reference":
                texts.append(f"[tool reference: {item.get('tool_name')}]")
            else:
                self.issues.report(line, f"unknown tool_result content item {item!r:.60}")
        result = ToolResultPart(call_id=call_id, content="\n".join(texts), is_error=bool(block.get("is_error")))
        self.items.append(Draft(role="tool", line=line, source_id=uuid, parts=[result, *images]))

    def add_boundary(self, record: Record) -> None:
        if self.pending_boundary is not None:
            self._close_boundary("")
        self.pending_boundary = record

    def _attach_summary(self, record: Record, message: dict) -> None:
        content = message["content"]
        summary = (
            content
            if isinstance(content, str)
            else "\n".join(_str(b.get("text")) for b in _blocks(content) if b.get("type") == "text")
        )
        if self.pending_boundary is None:
            self.issues.report(record.line, "isCompactSummary line without a preceding compact_boundary")
            return
        self._close_boundary(summary)

    def _close_boundary(self, summary: str) -> None:
        boundary = self.pending_boundary
        assert boundary is not None
        self.pending_boundary = None
        if not summary:
            self.issues.report(boundary.line, "compact_boundary without the isCompactSummary line that holds its summary")
        meta = boundary.data.get("compactMetadata")
        meta = meta if isinstance(meta, dict) else {}
        recorded = meta.get("trigger")
        trigger: Literal["auto", "manual", "unknown"] = (
            "auto" if recorded == "auto" else "manual" if recorded == "manual" else "unknown"
        )
        pre_tokens = int(meta["preTokens"]) if is_count(meta.get("preTokens")) else None
        self.items.append(
            CompactionMarker(at_message=-1, trigger=trigger, pre_tokens=pre_tokens, summary=summary, line=boundary.line)
        )

    def build(self, source: Source, id: str, subagent: bool, version: str | None = None) -> Session:
        if self.pending_boundary is not None:
            self._close_boundary("")
        pairing = ToolPairing(self.issues)
        messages: list[Message] = []
        compactions: list[CompactionMarker] = []
        for item in self.items:
            if isinstance(item, CompactionMarker):
                # Markers sit in the stream where they happened; their index is fixed only now,
                # after empty drafts and orphan tool results have been left out.
                compactions.append(replace(item, at_message=len(messages)))
            elif (message := pairing.filter(item.freeze())) is not None:
                messages.append(message)
        models = tuple(sorted({m.call.model for m in messages if m.call}))
        return Session(
            id=id,
            source_format=FORMAT,
            source_path=str(source.path),
            messages=tuple(messages),
            models=models,
            compactions=tuple(compactions),
            ignored=tuple(sorted(self.ignored.items())),
            is_subagent=subagent,
            agent_version=version,
        )


def _blocks(content: str | list) -> list[dict]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b if isinstance(b, dict) else {"type": "text", "text": str(b)} for b in content]


def _str(value: object) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)
