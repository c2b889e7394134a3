"""OpenAI Codex CLI session rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`).

Layouts (codex-rs/protocol/src/protocol.rs `RolloutLine`/`RolloutItem`; codex-rs/core/src/rollout.rs):
- current: every line is `{"timestamp", "type", "payload"}` with type session_meta, response_item,
  event_msg, turn_context or compacted;
- legacy (codex-rs before the envelope, mid 2025): a bare `{"id", "timestamp", "instructions"}` first
  line, then bare response items and `{"record_type": "state"}` lines, with no token usage at all.

Token usage lives only in `event_msg` token_count events, which Codex writes more often than it calls
the model; see `_token_count` for how each call is counted once.

This module reads a rollout in order and assembles its messages and calls; what one record holds
on its own (the kinds a rollout has, an item's content, reasoning and tool output as parts) is
`compactlab.sessions.importers.codex_items`, and a `compacted` item's marker `codex_compaction`.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field, replace

from compactlab.sessions.importers.codex_compaction import compaction_marker, repointed
from compactlab.sessions.importers.codex_items import (
    COPY_EVENTS,
    ENVELOPE_TYPES,
    INSTRUCTION_PREFIXES,
    ITEM_TYPES,
    LEGACY_ITEM_TYPES,
    content_parts,
    damaged_kind,
    is_legacy_meta,
    is_type_name,
    is_usage,
    reasoning_texts,
    tool_output,
)
from compactlab.sessions.importers.importer import FormatFacts, check_tool_pairing, is_count, timestamp_seconds
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


@dataclass
class _Open:
    """The assistant message of one model response, while its items are still arriving."""

    line: int
    call: LLMCall | None
    parts: list[Part] = field(default_factory=list)
    sealed: bool = False  # its call's usage arrived after its items: a new item starts a new message


class CodexImporter:
    name = "codex-rollout"
    description = "OpenAI Codex CLI session rollouts (~/.codex/sessions/**/rollout-*.jsonl)"
    facts = FormatFacts(thinking_resent=False, system_prompt_in_file=False, engine_preset="codex")

    def match(self, source: Source) -> str | None:
        head = [r.data for r in source.head_records() if isinstance(r.data, dict)]
        if any(d.get("type") in ENVELOPE_TYPES and isinstance(d.get("payload"), dict) for d in head):
            return None
        legacy_items = (d.get("record_type") == "state" or d.get("type") in LEGACY_ITEM_TYPES for d in head[1:])
        if head and is_legacy_meta(head[0]) and any(legacy_items):
            return None
        return "no session_meta/response_item records with a payload, and no legacy Codex session header"

    def load(self, source: Source, issues: RecordIssues) -> list[Session]:
        reader = _Reader(issues)
        for record in source.records(issues):
            reader.feed(record)
        return [reader.finish(source)]


class _Reader:
    def __init__(self, issues: RecordIssues):
        self.issues = issues
        self.messages: list[Message] = []
        self.open: _Open | None = None
        self.pending: tuple[LLMCall, int] | None = None  # usage whose response items come later
        self.last_total: object = None
        self.record_time: float | None = None  # the current line's timestamp
        self.session_id: str | None = None
        self.is_subagent = False
        self.model: str | None = None
        self.models: set[str] = set()
        self.context_window: int | None = None
        self.last_prompt_tokens: int | None = None
        self.compactions: list[CompactionMarker] = []
        self.base_index: int | None = None  # the base instructions' message (sent apart from the history)
        self.ignored: Counter[str] = Counter()
        self.item_lines: dict[str, int] = {}  # the JSON of each response item so far -> its line
        # Whether usage follows a response's items (newer Codex), told by the first call's usage;
        # then the index of the last assistant message still waiting for its usage, while only
        # its tools' outputs have followed it.
        self.usage_follows: bool | None = None
        self.unpaid: int | None = None

    def _repeated(self, data: object, line: int) -> bool:
        """Whether `data` is a response item written twice (then reported). Envelope lines carry a
        timestamp and legacy tool items a call id, so two equal ones are one record duplicated;
        a legacy message equal to the line before it is one too (every turn gets an answer)."""
        if not isinstance(data, dict) or not (
            data.get("type") in ("response_item", "compacted") or ("type" in data and "payload" not in data)
        ):
            return False
        key = json.dumps(data, sort_keys=True)
        earlier = self.item_lines.get(key)
        # A legacy message has no id or time: only the line just before it can be told for the same.
        if earlier is not None and ("timestamp" in data or "call_id" in data or earlier == line - 1):
            self.issues.report(line, f"duplicate of line {earlier}: a {data.get('type', 'response item')} record written twice")
            return True
        self.item_lines[key] = line
        return False

    def feed(self, record: Record) -> None:
        data, line = record.data, record.line
        if self._repeated(data, line):
            return
        # The envelope's time: a call's is that of the token_count event that closes it.
        self.record_time = timestamp_seconds(data.get("timestamp")) if isinstance(data, dict) else None
        if not isinstance(data, dict):
            self.issues.report(line, f"record is a JSON {type(data).__name__}, not an object")
        elif "payload" in data or data.get("type") in ENVELOPE_TYPES:
            kind, payload = data.get("type"), data.get("payload")
            if not isinstance(kind, str) or not isinstance(payload, dict):
                self.issues.report(line, "rollout line needs a string 'type' and an object 'payload'")
            elif kind == "session_meta":
                self._session_meta(payload, line)
            elif kind == "turn_context":
                self._turn_context(payload, line)
            elif kind == "response_item":
                self._item(payload, line)
            elif kind == "compacted":
                self._compacted(payload, line)
            elif kind == "event_msg":
                self._event(payload, line)
            elif damaged_kind(kind, ENVELOPE_TYPES):
                self.issues.report(
                    line, f"rollout line type {kind!r:.30} is no known kind (a damaged {damaged_kind(kind, ENVELOPE_TYPES)!r}?)"
                )
            else:
                self.ignored[f"record:{kind}"] += 1
        elif data.get("record_type") == "state":
            self.ignored["legacy state record (previous_response_id)"] += 1
        elif self.session_id is None and is_legacy_meta(data):
            self.session_id = data["id"]
        elif isinstance(data.get("type"), str):
            self._item(data, line)  # legacy layout: a bare response item
        else:
            self.issues.report(line, "not a Codex rollout record: no 'type'")

    def _session_meta(self, payload: dict, line: int) -> None:
        if self.session_id is not None:
            # A forked session starts with its own meta and then copies its parent's records.
            self.ignored["session_meta of a parent session (forked history)"] += 1
            return
        if not isinstance(payload.get("id"), str):
            self.issues.report(line, "session_meta payload has no string 'id'")
            return
        self.session_id = payload["id"]
        self.is_subagent = isinstance(payload.get("source"), dict) and "subagent" in payload["source"]
        if isinstance(payload.get("model"), str):
            self.model = payload["model"]
        # Newer versions record the base instructions, which are sent as `instructions` with every
        # request, so they are part of every prompt. (`instructions` of older versions were the user
        # instructions, which Codex also records as a user message; not duplicated here.)
        base = payload.get("base_instructions")
        if isinstance(base, dict) and isinstance(base.get("text"), str) and base["text"]:
            self.base_index = len(self.messages)
            self.messages.append(Message("system", (TextPart(base["text"]),), line=line))

    def _turn_context(self, payload: dict, line: int) -> None:
        # Written before each model request (and each compaction); its model is the one called next.
        if not isinstance(payload.get("model"), str):
            self.issues.report(line, "turn_context payload has no string 'model'")
            return
        self.model = payload["model"]
        self.models.add(self.model)

    def _item(self, item: dict, line: int) -> None:
        kind = item.get("type")
        if kind == "message":
            self._message(item, line)
        elif kind == "reasoning":
            self._reasoning(item, line)
        elif kind in ("function_call", "custom_tool_call"):
            field_name = "arguments" if kind == "function_call" else "input"
            name, call_id, args = item.get("name"), item.get("call_id"), item.get(field_name)
            if not (isinstance(name, str) and isinstance(call_id, str) and isinstance(args, str)):
                self.issues.report(line, f"{kind} needs string 'name', 'call_id' and '{field_name}'")
                return
            # A custom (freeform) tool's input is raw text, kept as the model wrote it.
            self._assistant([ToolCallPart(id=call_id, name=name, arguments=args)], line)
        elif kind == "local_shell_call":
            call_id = item.get("call_id") or item.get("id")
            if not isinstance(call_id, str) or not isinstance(item.get("action"), dict):
                self.issues.report(line, "local_shell_call needs a 'call_id' and an object 'action'")
                return
            args = json.dumps(item["action"], ensure_ascii=False)
            self._assistant([ToolCallPart(id=call_id, name="local_shell", arguments=args)], line)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            self._tool_output(item, line)
        elif kind == "web_search_call":
            self.ignored["response_item:web_search_call (server-side tool, no result recorded)"] += 1
        elif kind == "ghost_snapshot":
            self.ignored["response_item:ghost_snapshot (undo snapshot, not sent to the model)"] += 1
        elif not is_type_name(kind):
            self.issues.report(line, f"response item has no 'type' name (got {kind!r:.30})")
        elif damaged_kind(kind, ITEM_TYPES):
            self.issues.report(
                line, f"response item type {kind!r:.30} is no known kind (a damaged {damaged_kind(kind, ITEM_TYPES)!r}?)"
            )
        else:
            self.ignored[f"response_item:{kind}"] += 1

    def _message(self, item: dict, line: int) -> None:
        role, content = item.get("role"), item.get("content")
        if not isinstance(role, str) or not isinstance(content, list):
            self.issues.report(line, "message needs a string 'role' and a list 'content'")
            return
        parts = content_parts(content, line, self.issues, self.ignored)
        if parts is None:
            return
        if role == "assistant":
            self._assistant(parts, line)
        elif role in ("user", "developer", "system"):
            # A developer message becomes a system one (instructions by role); Codex's own user
            # messages (INSTRUCTION_PREFIXES) are flagged: both stay in every prompt.
            text = "".join(p.text for p in parts if isinstance(p, TextPart)).lstrip()
            instruction = role == "user" and text.startswith(INSTRUCTION_PREFIXES)
            self._other("user" if role == "user" else "system", parts, line, instruction)
        else:
            self.issues.report(line, f"message has unknown role {role!r}")

    def _reasoning(self, item: dict, line: int) -> None:
        texts = reasoning_texts(item)
        if texts is None:
            self.issues.report(line, "reasoning 'summary' and 'content' must be lists")
            return
        if item.get("encrypted_content"):
            # The full reasoning is resent to the model encrypted; only the summary is readable.
            self.ignored["reasoning encrypted_content (unreadable; summary kept when present)"] += 1
        if texts:
            self._assistant([ThinkingPart("\n\n".join(texts))], line)

    def _tool_output(self, item: dict, line: int) -> None:
        call_id, output = item.get("call_id"), item.get("output")
        text, is_error, images = tool_output(output)
        if not isinstance(call_id, str) or text is None:
            self.issues.report(line, f"{item.get('type')} needs a string 'call_id' and a string, list or object 'output'")
            return
        self._other("tool", [ToolResultPart(call_id, text, is_error), *images], line)

    def _compacted(self, payload: dict, line: int) -> None:
        if not isinstance(payload.get("message"), str):
            self.issues.report(line, "compacted payload has no string 'message'")
            return
        self._flush()
        if self.pending is not None:
            # Local compaction makes its own summarisation request; its usage is written just before
            # this item, and its output is the summary below, not a message of the conversation.
            self.ignored["token_count of the compaction summary request"] += 1
            self.pending = None
        self.compactions.append(compaction_marker(payload, self.messages, self.last_prompt_tokens, line, self.base_index))

    def _event(self, payload: dict, line: int) -> None:
        kind = payload.get("type")
        if kind == "token_count":
            self._token_count(payload, line)
        elif kind in COPY_EVENTS:
            self.ignored[f"event_msg:{kind} (copy of a response item)"] += 1
        elif damaged_kind(kind, ("token_count",)):  # a model call's usage would be lost without a word
            self.issues.report(line, f"event type {kind!r:.30} is no known kind (a damaged 'token_count'?)")
        else:
            self.ignored[f"event_msg:{kind}"] += 1

    def _token_count(self, payload: dict, line: int) -> None:
        # Codex sends a TokenCount event (codex-rs/core/src/codex.rs, `send_token_count_event`)
        # whenever its token *or rate-limit* state changes, always carrying the whole state:
        #  - `update_rate_limits`, on the RateLimits event that opens every response stream (from the
        #    HTTP headers): repeats the previous call's info (or info=null before the first call);
        #  - `update_token_usage_info`, on response.completed: the new call's `last_token_usage`,
        #    also added to the cumulative `total_token_usage`;
        #  - `recompute_token_usage` after a compaction and `set_total_tokens_full` after a
        #    context-window error: estimates with input_tokens=0.
        # So each call is seen twice. Rule: an event is a new call exactly when its
        # `total_token_usage` differs from the previous event's (only a completed response grows
        # it) and its `last_token_usage` has real input tokens.
        info = payload.get("info")
        if info is None:
            self.ignored["token_count without usage (rate limits only)"] += 1
            return
        last = info.get("last_token_usage") if isinstance(info, dict) else None
        total = info.get("total_token_usage") if isinstance(info, dict) else None
        if not (is_usage(last) and isinstance(total, dict)):
            self.issues.report(line, "token_count info needs 'last_token_usage' and 'total_token_usage' with integer counts")
            return
        if is_count(info.get("model_context_window")):
            self.context_window = info["model_context_window"]
        if total == self.last_total:
            self.ignored["token_count repeated (no new model call)"] += 1
            return
        self.last_total = total
        if last["input_tokens"] <= 0:
            self.ignored["token_count estimate (no model call)"] += 1
            return
        # OpenAI's input_tokens include the cached ones; the model splits them Anthropic-style.
        cached = int(last.get("cached_input_tokens") or 0)
        call = LLMCall(
            self.model or "unknown",
            input_tokens=max(0, int(last["input_tokens"]) - cached),
            cache_read_tokens=cached,
            cache_write_tokens=0,
            output_tokens=int(last["output_tokens"]),
            timestamp=self.record_time,
        )
        if self.usage_follows is None:
            self.usage_follows = self.open is not None or self.unpaid is not None
        if self.open is not None and self.open.call is None and not self.open.sealed:
            # Newer Codex records response items while streaming, so usage follows its items.
            self.open.call, self.open.sealed = call, True
        elif self.open is None and self.pending is None and self.usage_follows and self.unpaid is not None:
            # ... and the outputs of tools that ran during the stream can be written before it
            # (0.142 on): the usage is still that response's, not the next one's.
            self._paid(self.unpaid, call)
        else:
            # Older Codex (e.g. 0.58) records the items after response.completed: usage comes first.
            self._orphan_pending()
            self.pending = (call, line)

    def _assistant(self, parts: list[Part], line: int) -> None:
        # Items of one model response arrive back to back; tool outputs and user input end them.
        if not parts:
            self.ignored["empty assistant item"] += 1
            return
        if self.open is None or self.open.sealed:
            self._flush()
            call, self.pending = (self.pending[0] if self.pending else None), None
            self.open = _Open(line=line, call=call)
        self.open.parts.extend(parts)

    def _other(self, role: str, parts: list[Part], line: int, instruction: bool = False) -> None:
        self._flush()
        self._orphan_pending()
        if role != "tool":
            self.unpaid = None
        if parts:
            self.messages.append(Message(role, tuple(parts), line=line, instruction=instruction))  # type: ignore[arg-type]
        else:
            self.ignored[f"empty {role} message"] += 1

    def _flush(self) -> None:
        if self.open is None:
            return
        done, self.open = self.open, None
        if done.parts:
            self.messages.append(Message("assistant", tuple(done.parts), line=done.line, call=done.call))
            self.unpaid = len(self.messages) - 1
            if done.call is not None:
                self._paid(len(self.messages) - 1, done.call)
        elif done.call is not None:
            self.issues.report(done.line, "model call whose response has no readable content")

    def _paid(self, index: int, call: LLMCall) -> None:
        """The assistant message at `index` carries `call`."""
        if self.messages[index].call is not call:
            self.messages[index] = replace(self.messages[index], call=call)
        self.unpaid = None
        self.last_prompt_tokens = call.prompt_tokens
        self.models.add(call.model)

    def _orphan_pending(self) -> None:
        if self.pending is not None:
            line, self.pending = self.pending[1], None
            self.issues.report(line, "token_count of a model call with no assistant output in the rollout")

    def finish(self, source: Source) -> Session:
        self._flush()
        self._orphan_pending()
        messages = check_tool_pairing(self.messages, self.issues)
        compactions = tuple(repointed(c, self.messages, messages) for c in self.compactions)
        models = {c.model for c in (m.call for m in messages) if c is not None} | self.models
        return Session(
            id=self.session_id or source.path.name.split(".")[0],
            source_format="codex-rollout",
            source_path=str(source.path),
            messages=tuple(messages),
            models=tuple(sorted(models)),
            context_window=self.context_window,
            compactions=compactions,
            skipped=tuple(self.issues.skipped),
            ignored=tuple(sorted(self.ignored.items())),
            is_subagent=self.is_subagent,
        )
