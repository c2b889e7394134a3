"""Gemini CLI session JSONL (`~/.gemini/tmp/<project>/chats/session-<time>-<id>.jsonl`).

Facts of the format (google-gemini/gemini-cli `packages/core/src/services/chatRecordingTypes.ts` and
`chatRecordingService.ts` at 5411f113, `core/geminiChat.ts`, `context/chatCompressionService.ts`):
- The first line is the metadata: `{sessionId, projectHash, startTime, lastUpdated, kind}`.
- Each message is appended whole, `{id, timestamp, type, content, ...}`, and appended again, whole,
  under the same id when it changes (its usage arrives, its tool calls complete): the later copy
  replaces the earlier one in place. `type` is user, gemini, info, error or warning; `gemini`
  messages carry `tokens{input, output, cached, thoughts, tool, total}` (Gemini's promptTokenCount,
  candidatesTokenCount, cachedContentTokenCount, thoughtsTokenCount, toolUsePromptTokenCount,
  totalTokenCount), `model`, `thoughts[{subject, description}]` and `toolCalls[{id, name, args, result}]`.
  A tool's response is also recorded as a `user` message of `functionResponse` parts.
- `{"$set": {...}}` updates the metadata; a `$set` holding `messages` rewrites the history to that
  list. Compression is such a rewrite: the summary (a user turn and the model's fixed acknowledgement,
  both recorded just before) followed by the kept tail, the older turns gone.
- `{"$rewindTo": id}` (/rewind) drops the message with that id and every later one.

Read here: the messages of the path the session ended on, as last recorded; a rewrite that drops
messages is a real compaction (`CompactionMarker`: the summary turns' text, the kept tail), one that
drops none (masking a tool output) is counted as ("history_rewrite", n) and the unmasked messages
kept. Rewound messages are counted as ("rewound_message", n), info/error/warning messages (shown,
never sent) by their type. Each gemini message with `tokens` is one call: input = input − cached
+ tool, cache reads = cached, output = output + thoughts (Gemini bills thoughts as output); a reply
recorded without `model` (tool calls alone) takes the nearest earlier call's model.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from compactlab.sessions.importers.gemini_cli_messages import message_of, tool_results_of
from compactlab.sessions.importers.importer import FormatFacts, check_tool_pairing
from compactlab.sessions.model import CompactionMarker, Message, Session
from compactlab.sessions.source import RecordIssues, Source

_SHOWN_ONLY = ("info", "error", "warning")
_TYPES = ("user", "gemini", *_SHOWN_ONLY)


def _is_metadata(data: object) -> bool:
    return isinstance(data, dict) and isinstance(data.get("sessionId"), str) and "projectHash" in data and "type" not in data


class GeminiCliImporter:
    name = "gemini-cli"
    description = "Gemini CLI session JSONL (metadata line, message records, $set / $rewindTo)"
    facts = FormatFacts(system_prompt_in_file=False)

    def match(self, source: Source) -> str | None:
        head = source.head_records(1)
        if head and head[0].line == 1 and _is_metadata(head[0].data):
            return None
        return "no first line with Gemini CLI's `sessionId` and `projectHash`"

    def load(self, source: Source, issues: RecordIssues) -> list[Session]:
        history = _History(issues)
        session_id = source.path.name.removesuffix(".gz").removesuffix(".jsonl")
        for record in source.records(issues):
            data = record.data
            if record.line == 1 and _is_metadata(data):
                session_id = data["sessionId"]
                continue
            history.add(record.line, data)
        return [history.session(session_id, self.name, source)]


def _named_models(messages: list[Message]) -> list[Message]:
    """Calls recorded without a model name take the nearest earlier call's (else the next one's): the
    engine writes `model` on a reply only when its text is recorded, not on a reply of tool calls alone."""
    named = [m.call.model for m in messages if m.call is not None and m.call.model != "unknown"]
    if not named:
        return messages
    out, last = [], named[0]
    for m in messages:
        if m.call is not None and m.call.model == "unknown":
            m = replace(m, call=replace(m.call, model=last))
        elif m.call is not None:
            last = m.call.model
        out.append(m)
    return out


class _History:
    """The session as the records build it: messages by id in first-recorded order, the ids of the
    history the engine would resume (`live`), and the compactions the rewrites made."""

    def __init__(self, issues: RecordIssues):
        self.issues = issues
        self.records: dict[str, tuple[int, dict]] = {}  # id -> (line first recorded, last version)
        self.live: list[str] = []
        self.summaries: set[str] = set()  # ids of summary turns, which become their compaction's summary
        self.compactions: list[tuple[int, tuple[str, ...]]] = []  # (line of the rewrite, ids it kept)
        self.summary_of: dict[int, list[str]] = {}  # line of the rewrite -> its summary turns' ids
        self.ignored: Counter[str] = Counter()
        self.first_in_rewrite: dict[str, int] = {}  # ids a rewrite held before any line recorded them -> its line

    def add(self, line: int, data: object) -> None:
        if not isinstance(data, dict):
            self.issues.report(line, f"expected a JSON object, got {type(data).__name__}")
        elif "$rewindTo" in data:
            self._rewind(line, data["$rewindTo"])
        elif "$set" in data:
            update = data["$set"]
            if not isinstance(update, dict):
                self.issues.report(line, f"`$set`: expected an object, got {type(update).__name__}")
            elif "messages" in update:
                self._rewrite(line, update["messages"])
        elif self._checked(line, data):
            if data["id"] in self.first_in_rewrite:
                # The engine records every turn before a rewrite lists it: lines moved out of order.
                where = self.first_in_rewrite[data["id"]]
                self.issues.report(
                    line, f"message {data['id']!r:.60} recorded after the history rewrite at line {where} that held it"
                )
                return
            self._message(line, data)

    def _checked(self, line: int, data: dict, where: str = "") -> bool:
        if not isinstance(data.get("id"), str):
            self.issues.report(line, f"{where}`id`: expected a string, got {data.get('id')!r:.40}")
        elif data.get("type") not in _TYPES:
            self.issues.report(line, f"{where}`type`: expected one of {', '.join(_TYPES)}, got {data.get('type')!r:.40}")
        else:
            return True
        return False

    def _message(self, line: int, data: dict) -> None:
        known = self.records.get(data["id"])
        self.records[data["id"]] = (known[0] if known else line, data)
        if data["id"] not in self.live:
            self.live.append(data["id"])

    def _rewind(self, line: int, to: object) -> None:
        if not isinstance(to, str):
            self.issues.report(line, f"`$rewindTo`: expected a message id, got {to!r:.40}")
            return
        # As the engine loads it: an id it does not hold rewinds the whole history.
        at = self.live.index(to) if to in self.live else 0
        for gone in self.live[at:]:
            del self.records[gone]
            self.ignored["rewound_message"] += 1
        del self.live[at:]

    def _rewrite(self, line: int, messages: object) -> None:
        if not isinstance(messages, list):
            self.issues.report(line, f"`$set.messages`: expected a list, got {type(messages).__name__}")
            return
        new = [m for k, m in enumerate(messages) if isinstance(m, dict) and self._checked(line, m, f"`$set.messages[{k}]`: ")]
        if len(new) < len(messages):
            return
        ids = [m["id"] for m in new]
        dropped = [i for i in self.live if i not in ids]
        if not dropped:  # a sync (masked tool output): the messages as first recorded are the history
            self.ignored["history_rewrite"] += 1
            self._add_new(line, new)
            self.live = ids
            return
        # The summary turns are the ones placed before a turn recorded earlier than them (or never
        # recorded): compression puts its new turns ahead of the kept tail.
        order = {i: k for k, i in enumerate(self.live)}
        position = [order.get(i, len(order)) for i in ids]
        summary_ids = [i for k, i in enumerate(ids) if i not in order or any(p < position[k] for p in position[k + 1 :])]
        self._add_new(line, new)
        self.summaries.update(summary_ids)
        self.summary_of[line] = summary_ids
        self.compactions.append((line, tuple(i for i in ids if i not in summary_ids)))
        self.live = ids

    def _add_new(self, line: int, new: list[dict]) -> None:
        for m in new:
            if m["id"] not in self.records:
                self.first_in_rewrite[m["id"]] = line
                self._message(line, m)

    def _text(self, message_id: str) -> str:
        """A summary turn's text ("" when it was rewound away or is damaged: its rewrite still happened)."""
        try:
            return message_of(self.records[message_id][1]).text() if message_id in self.records else ""
        except ValueError:
            return ""

    def session(self, session_id: str, fmt: str, source: Source) -> Session:
        ordered = sorted(self.records.items(), key=lambda item: item[1][0])
        answered = {p.call_id for _, (_, r) in ordered for p in tool_results_of(r)}
        messages: list[Message] = []
        for message_id, (line, record) in ordered:
            if message_id in self.summaries:
                continue
            if record["type"] in _SHOWN_ONLY:
                self.ignored[record["type"]] += 1
                continue
            try:
                messages.append(message_of(record, line))
            except ValueError as exc:
                self.issues.report(line, str(exc))
                continue
            # Older files hold a tool's response only in its call's `result`.
            results = [p for p in tool_results_of(record, from_calls=True) if p.call_id not in answered]
            if results:
                messages.append(Message(role="tool", parts=tuple(results), source_id=f"{message_id}.toolCalls", line=line))
        messages = check_tool_pairing(messages, self.issues)
        index_of = {m.source_id: k for k, m in enumerate(messages)}
        compactions = []
        for line, kept in self.compactions:
            at = sum(1 for m in messages if m.line is not None and m.line < line)
            kept_at = tuple(sorted(index_of[i] for i in kept if i in index_of and index_of[i] < at))
            summary = "\n\n".join(t for i in self.summary_of[line] if (t := self._text(i)))
            compactions.append(CompactionMarker(at, "unknown", None, summary, line=line, kept=kept_at))
        messages = _named_models(messages)
        return Session(
            session_id,
            fmt,
            str(source.path),
            tuple(messages),
            models=tuple(sorted({m.call.model for m in messages if m.call is not None})),
            compactions=tuple(compactions),
            skipped=tuple(self.issues.skipped),
            ignored=tuple(sorted(self.ignored.items())),
        )
