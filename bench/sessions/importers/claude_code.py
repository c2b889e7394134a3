"""Claude Code session JSONL (`~/.claude/projects/<project>/<session>.jsonl`).

Facts of the format this importer relies on, each seen in the real files under datasets/:
- One API response is written as several `assistant` lines that share `message.id`, one content
  block per line; later lines may repeat a block or carry a larger `output_tokens`. Lines of one
  response are merged, repeated blocks kept once, and the last line's usage wins.
- `<synthetic>` assistant lines are local error stubs written by the CLI, not LLM calls.
- Tool results come back inside `user` lines as `tool_result` blocks; each becomes a `tool`
  message so that every source looks the same downstream.
- A real compaction is a `system` line with subtype `compact_boundary` (its `compactMetadata`
  holds trigger and `preTokens`) followed by a `user` line flagged `isCompactSummary` with the
  summary text. It becomes a `CompactionMarker`, not a message.
- Sub-agent conversations live in their own files whose lines all have `isSidechain: true`.
- Every line records the Claude Code `version` that wrote it; the session keeps the first one.
- Many line types (`file-history-snapshot`, `progress`, `queue-operation`, hook `attachment`s,
  UI `system` notices, ...) are not part of what the model saw; they are counted in `ignored`.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Literal

from compactlab.sessions.importers.importer import (
    FormatFacts,
    ToolPairing,
    call_count_problem,
    image_part,
    is_call_count,
    is_count,
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

CONVERSATION_TYPES = ("user", "assistant")


@dataclass
class _Draft:
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


class ClaudeCodeImporter:
    name = "claude-code"
    description = "Claude Code session JSONL (~/.claude/projects/*/*.jsonl), including sub-agent files"
    facts = FormatFacts(
        thinking_resent=False,
        anthropic_images=True,
        system_prompt_in_file=False,
        engine_preset="claude-code",
        family_key="sessionId",
    )

    def match(self, source: Source) -> str | None:
        for record in source.head_records():
            data = record.data
            if (
                isinstance(data, dict)
                and "sessionId" in data
                and data.get("type")
                in ("user", "assistant", "system", "summary", "progress", "attachment", "file-history-snapshot")
            ):
                return None
            if isinstance(data, dict) and data.get("type") == "summary" and "leafUuid" in data:
                return None
        return "no line with Claude Code's `sessionId` + `type` fields"

    def load(self, source: Source, issues: RecordIssues) -> list[Session]:
        records = list(source.records(issues))
        subagent = _is_subagent_file(records)
        stem = source.path.name.removesuffix(".gz").removesuffix(".jsonl")
        sessions: list[Session] = []
        for number, (session_id, group) in enumerate(session_groups(records, stem)):
            name = stem if number == 0 else f"{stem}/session-{session_id}"
            sessions += self._load(source, group, name, subagent, issues)
        # Building reports orphan tool results too, so the file's skips are known only now;
        # they are shown once, on the main session.
        return [replace(sessions[0], skipped=tuple(issues.skipped)), *sessions[1:]]

    def _load(self, source: Source, records: list[Record], stem: str, subagent: bool, issues: RecordIssues) -> list[Session]:
        main = _Builder(issues)
        # Older Claude Code versions wrote a sub-agent's lines into the main session file, marked
        # `isSidechain`; they are a separate conversation, so they become their own session.
        inline_agents: dict[str, _Builder] = {}
        lines_of_uuid: dict[str, int] = {}
        # Each conversation line names the line before it (`parentUuid`), which Claude Code wrote
        # earlier: 0 of the 167 real files name a later one (only hook attachments do).
        conversation_lines = {
            r.data["uuid"]: r.line
            for r in reversed(records)
            if isinstance(r.data, dict) and r.data.get("type") in CONVERSATION_TYPES and isinstance(r.data.get("uuid"), str)
        }
        version: str | None = None  # the first `version` a line records: the Claude Code the session began in
        for record in records:
            data = record.data
            if not isinstance(data, dict):
                issues.report(record.line, f"expected a JSON object, got {type(data).__name__}")
                continue
            if version is None and isinstance(data.get("version"), str) and data["version"]:
                version = data["version"][:40]
            kind = data.get("type")
            if not isinstance(kind, str) or (kind not in CONVERSATION_TYPES and "message" in data):
                # Only user and assistant lines carry a `message`: another type on one is damage,
                # and ignoring the line would drop a message of the conversation unnoticed.
                issues.report(record.line, f"line with a `message` has type {kind!r:.40}; expected 'user' or 'assistant'")
                continue
            uuid = data.get("uuid")
            if (kind in CONVERSATION_TYPES or data.get("subtype") == "compact_boundary") and isinstance(uuid, str):
                if uuid in lines_of_uuid:
                    issues.report(record.line, f"duplicate of line {lines_of_uuid[uuid]} (same uuid): a record written twice")
                    continue
                lines_of_uuid[uuid] = record.line
            parent = data.get("parentUuid")
            if kind in CONVERSATION_TYPES and isinstance(parent, str) and conversation_lines.get(parent, 0) > record.line:
                issues.report(
                    record.line, f"its parent is line {conversation_lines[parent]}, after it (`parentUuid`): records out of order"
                )
                continue
            builder = main
            if kind in CONVERSATION_TYPES and bool(data.get("isSidechain")) != subagent:
                agent = str(data.get("agentId") or "sidechain")
                builder = inline_agents.setdefault(agent, _Builder(issues))
            if kind == "assistant":
                builder.add_assistant(record)
            elif kind == "user":
                builder.add_user(record)
            elif kind == "system" and data.get("subtype") == "compact_boundary":
                builder.add_boundary(record)
            elif kind == "system":
                builder.ignore(f"system line ({data.get('subtype') or 'notice'}): shown to the user, not the model")
            else:
                builder.ignore(f"{kind} line: not part of the conversation")
        sessions = [main.build(source, stem, subagent, version)]
        sessions += [b.build(source, f"{stem}/agent-{agent}", True, version) for agent, b in inline_agents.items()]
        return sessions


def session_groups(records: list[Record], stem: str) -> list[tuple[str | None, list[Record]]]:
    """The file's records by conversation: (its first `sessionId`, its records), the file's own first.

    A resumed or continued session starts its file with copies of its parents' lines, under their
    `sessionId`s, and goes on naming them in places (3 of the 167 real files hold 2 to 4 ids, one of
    them interleaved), but its lines link to theirs through `parentUuid`: ids linked so are one
    conversation. Ids that no link joins are separate conversations (two writers appending to one
    file): each becomes a session of its own rather than one session of both."""
    group_of: dict[str, str] = {}  # sessionId -> a representative sessionId (union-find)

    def root(session: str) -> str:
        while group_of.setdefault(session, session) != session:
            session = group_of[session]
        return session

    session_of_uuid: dict[str, str] = {}
    for record in records:
        data = record.data
        session = data.get("sessionId") if isinstance(data, dict) else None
        if isinstance(session, str):
            root(session)
            if isinstance(data.get("uuid"), str):
                session_of_uuid.setdefault(data["uuid"], session)
    if len(group_of) < 2:
        return [(None, records)]
    for record in records:
        data = record.data
        session, parent = (data.get("sessionId"), data.get("parentUuid")) if isinstance(data, dict) else (None, None)
        if isinstance(session, str) and isinstance(parent, str) and parent in session_of_uuid:
            group_of[root(session)] = root(session_of_uuid[parent])
    groups: dict[str, list[Record]] = {}
    first_id: dict[str, str] = {}
    for record in records:
        data = record.data
        session = data.get("sessionId") if isinstance(data, dict) else None
        key = root(session) if isinstance(session, str) else next(iter(groups), "")
        groups.setdefault(key, []).append(record)
        if isinstance(session, str):
            first_id.setdefault(key, session)
    if len(groups) == 1:
        return [(None, records)]
    own = next((key for key in groups if stem in group_of and root(stem) == key), next(iter(groups)))
    ordered = [own, *(key for key in groups if key != own)]
    return [(None if key == own else first_id.get(key, key), groups[key]) for key in ordered]


def _is_subagent_file(records: list[Record]) -> bool:
    for record in records:
        data = record.data
        if isinstance(data, dict) and data.get("type") in CONVERSATION_TYPES:
            return bool(data.get("isSidechain"))
    return False


class _Builder:
    def __init__(self, issues: RecordIssues):
        self.issues = issues
        self.items: list[_Draft | CompactionMarker] = []
        self.by_response_id: dict[str, _Draft] = {}
        # Lines of one response share `message.id` and `requestId`; the latter joins a line whose id is missing.
        self.by_request_id: dict[str, _Draft] = {}
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
            draft = _Draft(role="assistant", line=record.line, source_id=response_id or record.data.get("uuid"))
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
        counts = {}
        for name, field_name in fields.items():
            value = usage.get(name)
            # Absent: none of that kind (older versions write no cache fields). Null is no count: no
            # real file writes one (0 of 27,593 usage lines), and reading it as 0 would shrink the prompt.
            if name in usage and not is_call_count(value):
                self.issues.report(record.line, f"`message.usage.{name}` {call_count_problem(value)}")
                return None
            counts[field_name] = int(value or 0)
        request_id = record.data.get("requestId")
        return LLMCall(
            model=str(model or "unknown"),
            **counts,
            request_id=request_id if isinstance(request_id, str) else None,
        )

    def add_user(self, record: Record) -> None:
        message = self._message(record)
        if message is None:
            return
        if record.data.get("isCompactSummary"):
            self._attach_summary(record, message)
            return
        uuid = record.data.get("uuid")
        user = _Draft(role="user", line=record.line, source_id=uuid)
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
        self.items.append(_Draft(role="tool", line=line, source_id=uuid, parts=[result, *images]))

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
            source_format=ClaudeCodeImporter.name,
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
