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

from dataclasses import replace

from compactlab.sessions.importers.claude_code_messages import CONVERSATION_TYPES, FORMAT, SessionBuilder
from compactlab.sessions.importers.importer import (
    FormatFacts,
)
from compactlab.sessions.model import (
    Session,
)
from compactlab.sessions.source import Record, RecordIssues, Source


class ClaudeCodeImporter:
    name = FORMAT
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
        main = SessionBuilder(issues)
        # Older Claude Code versions wrote a sub-agent's lines into the main session file, marked
        # `isSidechain`; they are a separate conversation, so they become their own session.
        inline_agents: dict[str, SessionBuilder] = {}
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
                builder = inline_agents.setdefault(agent, SessionBuilder(issues))
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
