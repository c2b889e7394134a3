"""compactlab's own canonical JSONL: a lossless, versioned dump of the session model.

Layout (described line by line by `bench/schema/canonical-v1.schema.json`):
- a header line `{"compactlab": "transcript", "version": 1, "id": ..., ...}` starts a session;
- then one line per message `{"type": "message", ...}` and per real compaction
  `{"type": "compaction", ...}`, in order.
A file may hold several sessions, each starting with its own header. Import → export → import
gives equal `Session` objects: every field of the model is written, nothing is derived.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import asdict, replace
from pathlib import Path

from compactlab.sessions.importers.canonical_checks import check_header, checked
from compactlab.sessions.importers.importer import FormatFacts, ToolPairing, call_count_problem, is_call_count
from compactlab.sessions.model import (
    PART_TYPES,
    CompactionMarker,
    LLMCall,
    Message,
    Session,
    SkippedRecord,
    is_role,
    part_to_dict,
)
from compactlab.sessions.source import Record, RecordIssues, SessionError, Source

VERSION = 1
SCHEMA_PATH = Path(__file__).resolve().parents[1] / "schema" / "canonical-v1.schema.json"


def session_lines(session: Session) -> list[dict]:
    """The canonical records of one session, header first."""
    header = {
        "compactlab": "transcript",
        "version": VERSION,
        "id": session.id,
        "source_format": session.source_format,
        "source_path": session.source_path,
        "models": list(session.models),
        "context_window": session.context_window,
        "is_subagent": session.is_subagent,
        "skipped": [asdict(s) for s in session.skipped],
        "ignored": [[kind, count] for kind, count in session.ignored],
    }
    if session.agent_version is not None:  # optional: files written before it existed stay valid
        header["agent_version"] = session.agent_version
    lines: list[dict] = [header]
    markers = sorted(session.compactions, key=lambda c: c.at_message)
    for index, message in enumerate(session.messages):
        while markers and markers[0].at_message == index:
            lines.append(_marker_line(markers.pop(0)))
        lines.append(
            {
                "type": "message",
                "role": message.role,
                "parts": [part_to_dict(p) for p in message.parts],
                "source_id": message.source_id,
                "line": message.line,
                "call": asdict(message.call) if message.call else None,
                "sent_as": message.sent_as,
                "instruction": message.instruction,
            }
        )
    lines.extend(_marker_line(m) for m in markers)
    return lines


def _marker_line(marker: CompactionMarker) -> dict:
    line = {"type": "compaction", **asdict(marker)}
    if marker.usage is None:  # optional: files written before it existed stay as they were
        del line["usage"]
    return line


def write_canonical(sessions: list[Session], path: Path | str) -> Path:
    """Write sessions as canonical JSONL (gzipped when the name ends in .gz)."""
    path = Path(path)
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for t in sessions for line in session_lines(t))
    if path.suffix == ".gz":
        path.write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))
    else:
        path.write_text(text, encoding="utf-8")
    return path


class CanonicalImporter:
    name = "canonical"
    description = f"compactlab canonical JSONL, version {VERSION} (see bench/schema/canonical-v1.schema.json)"
    facts = FormatFacts()  # its sessions keep their source format, whose facts apply

    def match(self, source: Source) -> str | None:
        head = source.head_records(limit=1)
        if head and isinstance(head[0].data, dict) and head[0].data.get("compactlab") == "transcript":
            return None
        return 'first line is not a `{"compactlab": "transcript", ...}` header'

    def load(self, source: Source, issues: RecordIssues) -> list[Session]:
        sessions: list[Session | None] = []
        header: Record | None = None
        body: list[Record] = []
        for record in source.records(issues):
            data = record.data
            if isinstance(data, dict) and data.get("compactlab") == "transcript":
                if header is not None:
                    sessions.append(self._build(header, body, issues))
                header, body = record, []
                version = data.get("version")
                if version != VERSION:
                    issues.report(
                        record.line, f"canonical version {version!r} is not supported (this compactlab reads {VERSION})"
                    )
            elif header is None:
                issues.report(record.line, "record before the first session header")
            else:
                body.append(record)
        if header is not None:
            sessions.append(self._build(header, body, issues))
        return [t for t in sessions if t is not None]

    def _build(self, header: Record, body: list[Record], issues: RecordIssues) -> Session | None:
        h = header.data
        messages: list[Message] = []
        compactions: list[CompactionMarker] = []
        lines_of: dict[str, int] = {}  # each message record that names its source -> its line here
        pairing = ToolPairing(issues)  # a tool result before its call: no provider would take the replay
        source_line = 0  # the last message's line in its source: messages come in that order
        for record in body:
            data = record.data
            try:
                if not isinstance(data, dict):
                    raise TypeError(f"expected a JSON object, got {type(data).__name__}")
                kind = data.get("type")
                if kind == "message" and (data.get("line") is not None or data.get("source_id") is not None):
                    # The same source record twice is one record duplicated, not two messages.
                    key = json.dumps(data, sort_keys=True)
                    if key in lines_of:
                        raise ValueError(f"duplicate of line {lines_of[key]}: the same message written twice")
                    lines_of[key] = record.line
                if kind == "message":
                    message = _message(data)
                    if message.line is not None and message.line < source_line:
                        # Every importer reads its source in order (0 of the real sessions go back):
                        # a line earlier than the message before it is a record moved.
                        raise ValueError(
                            f"message of source line {message.line} after one of line {source_line}: records out of order"
                        )
                    source_line = message.line if message.line is not None else source_line
                    if (kept := pairing.filter(replace(message, line=record.line))) is not None:
                        messages.append(replace(kept, line=message.line))
                elif kind == "compaction":
                    fields = {k: v for k, v in data.items() if k not in ("type", "usage")}
                    marker = replace(checked(CompactionMarker, fields, "compaction"), usage=_call(data.get("usage"), "usage"))
                    if marker.at_message > len(messages):
                        raise ValueError(f"at_message {marker.at_message} is past the {len(messages)} messages before it")
                    if compactions and compactions[-1] == marker:
                        raise ValueError("the same compaction as the record before it: one compaction written twice")
                    compactions.append(marker)
                else:
                    raise ValueError(f"unknown record type {kind!r}; expected 'message' or 'compaction'")
            except SessionError:
                raise  # reported already (strict mode stops there)
            except (TypeError, ValueError, KeyError) as exc:
                issues.report(record.line, f"bad canonical record: {exc}")
        try:
            check_header(h)
            return Session(
                id=h["id"],
                source_format=h["source_format"],
                source_path=h["source_path"],
                messages=tuple(messages),
                models=tuple(h.get("models", ())),
                context_window=h.get("context_window"),
                compactions=tuple(compactions),
                skipped=tuple(checked(SkippedRecord, s, "skipped record") for s in h.get("skipped", ())) + tuple(issues.skipped),
                ignored=tuple((kind, count) for kind, count in h.get("ignored", ())),
                is_subagent=bool(h.get("is_subagent", False)),
                agent_version=h.get("agent_version"),
            )
        except (TypeError, ValueError, KeyError) as exc:
            issues.report(header.line, f"bad canonical header, session left out: {exc}")
            return None


def _message(data: dict) -> Message:
    role, sent_as, instruction = data["role"], data.get("sent_as"), data.get("instruction", False)
    if not is_role(role):
        raise ValueError(f"unknown role {role!r:.40}")
    if sent_as is not None and not is_role(sent_as):
        raise ValueError(f"unknown role {sent_as!r:.40} in `sent_as`")
    if not isinstance(instruction, bool):
        raise TypeError(f"`instruction` must be true or false, got {instruction!r:.40}")
    parts = data["parts"]
    if not isinstance(parts, list):
        raise TypeError("`parts` must be a list")
    for name, kind in (("source_id", str), ("line", int)):
        value = data.get(name)
        if value is not None and not (isinstance(value, kind) and not isinstance(value, bool)):
            raise ValueError(f"`{name}` must be a {kind.__name__} or null, got {value!r:.40}")
    recorded = _call(data.get("call"), "call")
    return Message(
        role=role,
        parts=tuple(_part(p, f"parts[{i}]") for i, p in enumerate(parts)),
        source_id=data.get("source_id"),
        line=data.get("line"),
        call=recorded,
        sent_as=sent_as,
        instruction=instruction,
    )


def _call(data: object, where: str) -> LLMCall | None:
    """A recorded call's usage (a message's `call`, a compaction's `usage`), or None for null."""
    if data is None:
        return None
    recorded = checked(LLMCall, data, where)
    for name in ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens"):
        if not is_call_count(getattr(recorded, name)):
            raise ValueError(f"{where}.{name} {call_count_problem(getattr(recorded, name))}")
    return recorded


def _part(data: object, where: str):
    kind = data.get("kind") if isinstance(data, dict) else None
    if not isinstance(kind, str) or kind not in PART_TYPES:
        raise ValueError(f"{where} has unknown kind {kind!r:.40}; expected one of {sorted(PART_TYPES)}")
    return checked(PART_TYPES[kind], data, where)
