"""DataClaw's normalised export, `conversations.jsonl` (peteromallet/dataclaw; the datasets tagged
`dataclaw` on Hugging Face).

Facts of the format this importer relies on (DataClaw's README "Schema", `dataclaw/parsers/claude.py`
at 68268ef2, and a file written by DataClaw 0.4.2 itself, tests/fixtures/dataclaw):
- One session a line: `{session_id, project, model, git_branch, start_time, end_time, source,
  messages, stats}`. A message is `{role: user|assistant, content, thinking, tool_uses, timestamp}`;
  a tool use `{tool, input, output: {text, raw}, status}`, its result beside it.
- DataClaw keeps no call's usage: `stats.input_tokens` and `output_tokens` are the session's sums.
  So a session of this format has no recorded call (each assistant message is counted as ignored
  for it), and neither the system prompt nor the tool definitions are in the file.
- A sub-agent's conversation is a line of its own carrying its parent's `session_id` (or
  `<id>:subagents`): the lines of an id that several share are named `<id>@<start_time>`. The
  sessions come in the order of their names: a file is a set of sessions, whose lines' order
  says nothing.
- DataClaw records no compaction. A line equal to an earlier one is the same session twice: a
  damaged record, not a second session.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace

from compactlab.sessions import model
from compactlab.sessions.importers.conversation import Conversation, model_name
from compactlab.sessions.importers.importer import FormatFacts
from compactlab.sessions.model import Message, TextPart, ThinkingPart, ToolCallPart, ToolResultPart
from compactlab.sessions.source import Record, RecordIssues, Source

NO_USAGE = "assistant message: DataClaw keeps no per-call usage, so it is no recorded call"


def _is_row(data: object) -> bool:
    return (
        isinstance(data, dict)
        and isinstance(data.get("session_id"), str)
        and isinstance(data.get("messages"), list)
        and "stats" in data
    )


class DataClawImporter:
    name = "dataclaw"
    description = "DataClaw conversations.jsonl: one normalised session a line, without per-call usage"
    facts = FormatFacts(thinking_resent=False, system_prompt_in_file=False)

    def match(self, source: Source) -> str | None:
        if any(_is_row(record.data) for record in source.head_records(5)):
            return None
        return "no line with DataClaw's `session_id`, `messages` and `stats`"

    def load(self, source: Source, issues: RecordIssues) -> list[model.Session]:
        rows: list[Record] = []
        lines_of: dict[str, int] = {}  # each session's whole line -> where it was first
        for record in source.records(issues):
            if not _is_row(record.data):
                issues.report(record.line, "expected a DataClaw session object with `session_id`, `messages` and `stats`")
                continue
            whole = json.dumps(record.data, sort_keys=True)
            if whole in lines_of:
                issues.report(record.line, f"duplicate of line {lines_of[whole]}: the same session written twice")
                continue
            lines_of[whole] = record.line
            rows.append(record)
        names = _names(rows)
        return sorted((_session(record, names[record.line], source, issues) for record in rows), key=lambda t: t.id)


def _names(rows: list[Record]) -> dict[int, str]:
    """Each line's session name: its `session_id`, or, where several lines share it, the id and the
    line's `start_time` (then `#2`, `#3` for lines that share both), so that the names and the
    sessions' order do not hang on the order of the lines."""
    count = Counter(record.data["session_id"] for record in rows)
    names: dict[int, str] = {}
    taken: Counter[str] = Counter()
    for record in rows:
        base = record.data["session_id"]
        name = base if count[base] == 1 else f"{base}@{record.data.get('start_time')}"
        taken[name] += 1
        names[record.line] = name if taken[name] == 1 else f"{name}#{taken[name]}"
    return names


def _session(record: Record, name: str, source: Source, issues: RecordIssues) -> model.Session:
    conversation = Conversation(issues)
    row = record.data
    for number, message in enumerate(row["messages"]):
        where = f"messages[{number}]"
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            issues.report(record.line, f"{where}: expected a message of role user or assistant, got {message!r:.60}")
            continue
        if message["role"] == "user":
            if isinstance(message.get("content"), str) and message["content"]:
                conversation.append(Message("user", (TextPart(message["content"]),), where, record.line))
            continue
        _assistant(conversation, message, where, record.line)
    session = conversation.session(
        name, DataClawImporter.name, str(source.path), subagent=row["session_id"].endswith(":subagents")
    )
    row_model = row.get("model")
    return replace(session, models=(model_name(row_model),) if row_model else ())


def _assistant(conversation: Conversation, message: dict, where: str, line: int) -> None:
    parts: list[model.Part] = []
    results: list[ToolResultPart] = []
    if isinstance(message.get("thinking"), str) and message["thinking"]:
        parts.append(ThinkingPart(message["thinking"]))
    if isinstance(message.get("content"), str) and message["content"]:
        parts.append(TextPart(message["content"]))
    uses = message.get("tool_uses", [])
    for number, use in enumerate(uses if isinstance(uses, list) else []):
        if not isinstance(use, dict) or not isinstance(use.get("tool"), str):
            conversation.issues.report(line, f"{where}.tool_uses[{number}]: expected an object with a `tool`, got {use!r:.60}")
            continue
        call_id = f"{where}.tool_uses[{number}]"  # DataClaw drops the call ids: its place names it
        parts.append(ToolCallPart(call_id, use["tool"], json.dumps(use.get("input", {}), ensure_ascii=False)))
        if "output" in use:
            results.append(ToolResultPart(call_id, _output(use["output"]), is_error=use.get("status") not in (None, "success")))
    if not parts:
        conversation.ignored["assistant message with no content"] += 1
        return
    conversation.ignored[NO_USAGE] += 1
    conversation.append(Message("assistant", tuple(parts), where, line))
    for result in results:
        conversation.append(Message("tool", (result,), f"{where}/{result.call_id}", line))


def _output(output: object) -> str:
    """A tool's output as DataClaw keeps it: `{text, raw}` (the text is what the model read)."""
    if isinstance(output, dict) and isinstance(output.get("text"), str):
        return output["text"]
    return output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
