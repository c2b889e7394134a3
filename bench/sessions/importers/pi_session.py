"""pi coding-agent session JSONL (`~/.pi/agent/sessions/--<cwd>--/<timestamp>_<uuid>.jsonl`).

Facts of the format this importer relies on (pi-mono `packages/coding-agent/docs/session.md` and
`src/core/session-manager.ts`, and the real files in ../shared/transcripts/pi-sessions):
- The first line is a `session` header (id, cwd, `version`: absent in version 1). Then one entry
  per line: `message` (its `message.role` is `user`, `assistant`, `toolResult`, `bashExecution`,
  `custom`, ...), `compaction`, `branch_summary`, `model_change`, `thinking_level_change`, ...
- Version 1 is one linear list; versions 2 and 3 link entries by `id`/`parentId` into a tree,
  and the conversation is the path from the root to the last entry (pi's default leaf). Entries on
  other branches are counted in `ignored`.
- An assistant message holds `text`, `thinking` and `toolCall` parts (`arguments` an object) and its
  `usage` `{input, output, cacheRead, cacheWrite, totalTokens, cost}`: pi normalises every provider
  to `input` = uncached input, so the prompt is input + cacheRead + cacheWrite. An aborted or failed
  request (`stopReason` aborted/error) with no usage is not a measured call: its message, if it has
  any content, stays without one; an empty one is counted in `ignored`.
- `bashExecution` (the user's `!command`) and `custom` messages reach the model as user text
  (`convertToLlm` in `src/core/messages.ts`); a bash execution marked `excludeFromContext` does not.
- A `compaction` entry is a real pi compaction: the model's next prompt holds its `summary` as a
  user message wrapped in pi's COMPACTION_SUMMARY_PREFIX/SUFFIX (kept so in `CompactionMarker.summary`:
  the text the model saw), then the entries from `firstKeptEntryId` (version 1:
  `firstKeptEntryIndex`, an index into the file's entries, header included) up to the compaction,
  kept verbatim (`CompactionMarker.kept`). `tokensBefore` is the context size pi measured. The
  format does not record whether the user asked for it (`/compact`) or pi did: trigger "unknown".
- A line that holds two JSON objects back to back (a writer that lost a newline; seen in a real
  file) is read as both records; pi itself skips such a line.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass

from compactlab.sessions.importers.importer import (
    FormatFacts,
    ToolPairing,
    call_counts,
    image_part,
    is_cost,
    is_count,
    timestamp_seconds,
)
from compactlab.sessions.model import (
    CompactionMarker,
    LLMCall,
    Message,
    Part,
    Session,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
)
from compactlab.sessions.source import Record, RecordIssues, Source

ENTRY_TYPES = (
    "message",
    "compaction",
    "branch_summary",
    "model_change",
    "thinking_level_change",
    "custom",
    "custom_message",
    "label",
    "session_info",
)
SETTING_TYPES = ("model_change", "thinking_level_change", "custom", "label", "session_info")
SUMMARY_PREFIX = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
SUMMARY_SUFFIX = "\n</summary>"
BRANCH_PREFIX = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
BRANCH_SUFFIX = "</summary>"


@dataclass(frozen=True)
class _Entry:
    index: int  # in the file's entries, the header included (what `firstKeptEntryIndex` counts)
    record: Record


class PiSessionImporter:
    name = "pi-session"
    description = "pi coding-agent session JSONL (~/.pi/agent/sessions/*/*.jsonl)"
    facts = FormatFacts(thinking_resent=False, system_prompt_in_file=False, engine_preset="pi")

    def match(self, source: Source) -> str | None:
        for record in source.head_records():
            data = record.data
            if isinstance(data, dict) and data.get("type") == "session" and "cwd" in data and "id" in data:
                return None
            message = data.get("message") if isinstance(data, dict) else None
            if (
                isinstance(data, dict)
                and data.get("type") == "message"
                and isinstance(message, dict)
                and message.get("role") in ("toolResult", "bashExecution")
            ):
                return None
        return "no `session` header with `cwd` and no `message` entry of role toolResult"

    def load(self, source: Source, issues: RecordIssues) -> list[Session]:
        header: dict | None = None
        entries: list[_Entry] = []
        # pi appends each entry once, with its time (and, from version 2, an id naming an earlier
        # parent): an entry seen before is one written twice, a parent named before it exists a
        # record moved. (0 of the real files repeat an entry or name a later parent.)
        lines_of: dict[str, int] = {}
        for record in source.records(issues, back_to_back=True):
            data = record.data
            if not isinstance(data, dict):
                issues.report(record.line, f"expected a JSON object, got {type(data).__name__}")
                continue
            key = _identity(data)
            if key is not None and key in lines_of:
                issues.report(record.line, f"duplicate of line {lines_of[key]}: an entry written twice")
                continue
            parent = data.get("parentId")
            if isinstance(parent, str) and parent not in lines_of and _later(parent, record.line, source, issues):
                continue
            if key is not None:
                lines_of[key] = record.line
            if data.get("type") == "session" and header is None:
                header = data
                entries.append(_Entry(len(entries), record))
                continue
            entries.append(_Entry(len(entries), record))
        builder = _Builder(issues)
        for entry in _active_path(entries, builder):
            builder.add(entry)
        stem = source.path.name.removesuffix(".gz").removesuffix(".jsonl")
        return [builder.build(source, stem)]


def _identity(data: dict) -> str | None:
    """What tells an entry apart: its id (versions 2 and 3), else the whole entry when it carries its time."""
    if data.get("type") == "session":
        return None
    if isinstance(data.get("id"), str):
        return data["id"]
    return json.dumps(data, sort_keys=True) if "timestamp" in data else None


def _later(parent: str, line: int, source: Source, issues: RecordIssues) -> bool:
    """Whether the entry of `line` names a parent that a later line holds (then reported)."""
    for number, text in enumerate(source.raw.split(b"\n")[line:], start=line + 1):
        if parent.encode() in text and f'"id":"{parent}"'.encode() in text.replace(b" ", b""):
            issues.report(line, f"parent {parent!r:.40} is the entry of line {number}, after it: records out of order")
            return True
    return False


def _active_path(entries: list[_Entry], builder: _Builder) -> list[_Entry]:
    """The entries of the conversation: all of them (version 1), or the path from the root to the
    last entry (versions 2 and 3, whose entries name their parent)."""
    body = [e for e in entries if e.record.data.get("type") != "session"]
    by_id = {e.record.data["id"]: e for e in body if isinstance(e.record.data.get("id"), str)}
    if not by_id:
        return body
    path: list[_Entry] = []
    current: _Entry | None = body[-1] if body else None
    seen: set[int] = set()
    while current is not None and current.index not in seen:
        seen.add(current.index)
        path.append(current)
        parent = current.record.data.get("parentId")
        current = by_id.get(parent) if isinstance(parent, str) else None
    path.reverse()
    for _ in range(len(body) - len(path)):
        builder.ignore("entry on another branch of the session tree (not on the path to the last entry)")
    return path


class _Builder:
    def __init__(self, issues: RecordIssues):
        self.issues = issues
        self.pairing = ToolPairing(issues)
        self.messages: list[Message] = []
        self.compactions: list[CompactionMarker] = []
        self.ignored: Counter[str] = Counter()
        self.position_of_entry: dict[object, int] = {}  # entry index and id -> the first message it gave
        self.models: set[str] = set()

    def ignore(self, why: str) -> None:
        self.ignored[why] += 1

    def add(self, entry: _Entry) -> None:
        data, line = entry.record.data, entry.record.line
        self.position_of_entry[entry.index] = len(self.messages)
        if isinstance(data.get("id"), str):
            self.position_of_entry[data["id"]] = len(self.messages)
        kind = data.get("type")
        if kind == "message":
            self._message(data.get("message"), line, data.get("id"))
        elif kind == "compaction":
            self._compaction(data, line)
        elif kind == "branch_summary" and isinstance(data.get("summary"), str) and data["summary"]:
            self._append(Message("user", (TextPart(BRANCH_PREFIX + data["summary"] + BRANCH_SUFFIX),), _id(data), line))
        elif kind == "custom_message":
            self._append(Message("user", tuple(self._user_parts(data.get("content"), line)), _id(data), line))
        elif kind in SETTING_TYPES:
            self.ignore(f"{kind} entry: a setting, not a message")
        else:
            self.issues.report(line, f"unknown entry type {kind!r:.40}; expected one of {', '.join(ENTRY_TYPES)}")

    def _append(self, message: Message) -> None:
        kept = self.pairing.filter(message)
        if kept is not None and kept.parts:
            self.messages.append(kept)

    def _message(self, message: object, line: int, entry_id: object) -> None:
        if not isinstance(message, dict):
            self.issues.report(line, "message entry has no `message` object")
            return
        role, source_id = message.get("role"), entry_id if isinstance(entry_id, str) else None
        if role == "user":
            self._append(Message("user", tuple(self._user_parts(message.get("content"), line)), source_id, line))
        elif role == "assistant":
            self._assistant(message, line, source_id)
        elif role == "toolResult":
            self._tool_result(message, line, source_id)
        elif role == "bashExecution":
            if message.get("excludeFromContext"):
                self.ignore("bashExecution excluded from the context (!! prefix)")
                return
            self._append(Message("user", (TextPart(_bash_text(message)),), source_id, line))
        elif role in ("custom", "hookMessage"):
            self._append(Message("user", tuple(self._user_parts(message.get("content"), line)), source_id, line))
        elif role in ("branchSummary", "compactionSummary") and isinstance(message.get("summary"), str):
            prefix, suffix = (BRANCH_PREFIX, BRANCH_SUFFIX) if role == "branchSummary" else (SUMMARY_PREFIX, SUMMARY_SUFFIX)
            self._append(Message("user", (TextPart(prefix + message["summary"] + suffix),), source_id, line))
        else:
            self.issues.report(line, f"message of unknown role {role!r:.40}")

    def _user_parts(self, content: object, line: int) -> list[Part]:
        if isinstance(content, str):
            return [TextPart(content)]
        if not isinstance(content, list):
            self.issues.report(line, f"`content` must be a string or a list, got {type(content).__name__}")
            return []
        parts: list[Part] = []
        for block in content:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text" and isinstance(block.get("text"), str):
                parts.append(TextPart(block["text"]))
            elif kind == "image":
                parts.append(image_part(str(block.get("mimeType") or ""), block.get("data")))
            else:
                self.issues.report(line, f"unknown content block {block!r:.60}")
        return parts

    def _assistant(self, message: dict, line: int, source_id: str | None) -> None:
        content = message.get("content")
        if not isinstance(content, list):
            self.issues.report(line, f"assistant `content` must be a list, got {type(content).__name__}")
            return
        parts: list[Part] = []
        for block in content:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text" and isinstance(block.get("text"), str):
                parts.append(TextPart(block["text"]))
            elif kind == "thinking" and isinstance(block.get("thinking"), str):
                parts.append(ThinkingPart(block["thinking"]))
            elif kind == "toolCall" and isinstance(block.get("id"), str) and isinstance(block.get("name"), str):
                arguments = block.get("arguments", {})
                parts.append(ToolCallPart(block["id"], block["name"], json.dumps(arguments, ensure_ascii=False)))
            else:
                self.issues.report(line, f"unknown assistant content block {block!r:.60}")
                return
        call = self._call(message, line)
        if not parts:
            self.ignore(f"assistant message with no content (stopReason {message.get('stopReason')!s:.20}): no reply")
            return
        if call is not None:
            self.models.add(call.model)
        self._append(Message("assistant", tuple(parts), source_id, line, call=call))

    def _call(self, message: dict, line: int) -> LLMCall | None:
        usage = message.get("usage")
        if usage is None:
            return None
        if not isinstance(usage, dict):
            self.issues.report(line, f"`usage` must be an object of token counts, got {usage!r:.60}")
            return None
        fields = (
            ("input", "input_tokens"),
            ("cacheRead", "cache_read_tokens"),
            ("cacheWrite", "cache_write_tokens"),
            ("output", "output_tokens"),
        )
        counts = call_counts(usage, fields, "usage", lambda problem: self.issues.report(line, problem))
        if counts is None:
            return None
        if counts["input_tokens"] + counts["cache_read_tokens"] + counts["cache_write_tokens"] == 0:
            return None  # an aborted or failed request: the provider counted no prompt
        cost = usage.get("cost")
        total = cost.get("total") if isinstance(cost, dict) else None
        if (cost is not None and not isinstance(cost, dict)) or (total is not None and not is_cost(total)):
            # pi writes `{..., total}` in USD: another value would drop the call's cost unnoticed.
            self.issues.report(line, f"`usage.cost` must be an object whose `total` is a cost in USD, got {cost!r:.60}")
            return None
        model = message.get("model")
        return LLMCall(
            model=model if isinstance(model, str) and model else "unknown",
            input_tokens=counts["input_tokens"],
            cache_read_tokens=counts["cache_read_tokens"],
            cache_write_tokens=counts["cache_write_tokens"],
            output_tokens=counts["output_tokens"],
            cost_usd=float(total) if is_cost(total) else None,
            timestamp=timestamp_seconds(message.get("timestamp")),  # epoch milliseconds
        )

    def _tool_result(self, message: dict, line: int, source_id: str | None) -> None:
        call_id = message.get("toolCallId")
        if not isinstance(call_id, str):
            self.issues.report(line, "toolResult without a string `toolCallId`")
            return
        blocks = self._user_parts(message.get("content"), line)
        text = "\n".join(p.text for p in blocks if isinstance(p, TextPart))
        images = [p for p in blocks if not isinstance(p, TextPart)]
        result = ToolResultPart(call_id, text, is_error=bool(message.get("isError")))
        self._append(Message("tool", (result, *images), source_id, line))

    def _compaction(self, data: dict, line: int) -> None:
        summary = data.get("summary")
        if not isinstance(summary, str):
            self.issues.report(line, "compaction entry without a string `summary`")
            return
        before = data.get("tokensBefore")
        kept = data.get("firstKeptEntryId", data.get("firstKeptEntryIndex"))
        kept_from = self.position_of_entry.get(kept) if isinstance(kept, (str, int)) and not isinstance(kept, bool) else None
        at = len(self.messages)
        self.compactions.append(
            CompactionMarker(
                at_message=at,
                trigger="unknown",
                pre_tokens=int(before) if is_count(before) else None,
                summary=SUMMARY_PREFIX + summary + SUMMARY_SUFFIX,
                line=line,
                kept=tuple(range(kept_from, at)) if kept_from is not None else (),
            )
        )

    def build(self, source: Source, id: str) -> Session:
        return Session(
            id=id,
            source_format=PiSessionImporter.name,
            source_path=str(source.path),
            messages=tuple(self.messages),
            models=tuple(sorted(self.models)),
            compactions=tuple(self.compactions),
            ignored=tuple(sorted(self.ignored.items())),
            skipped=tuple(self.issues.skipped),
        )


def _bash_text(message: dict) -> str:
    """A bash execution as pi sends it to the model (`bashExecutionToText`)."""
    output = message.get("output")
    text = f"Ran `{message.get('command')}`\n" + (f"```\n{output}\n```" if output else "(no output)")
    code = message.get("exitCode")
    if message.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif code not in (None, 0):
        text += f"\n\nCommand exited with code {code}"
    if message.get("truncated") and message.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {message['fullOutputPath']}]"
    return text


def _id(data: dict) -> str | None:
    return data["id"] if isinstance(data.get("id"), str) else None
