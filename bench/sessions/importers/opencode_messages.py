"""One opencode session from its messages and their parts, as opencode's store holds them.

Facts of the format this builder relies on (sst/opencode `packages/opencode/src/session/message-v2.ts`
and `session.sql.ts`, and files written by opencode 1.18.33 and 1.1.65 themselves, tests/fixtures/opencode):
- A message `{role: user|assistant, time.created (epoch ms), ...}` holds parts in id order
  (`prt_...` ids grow with time). An assistant message records `modelID`, `providerID`, `mode`,
  and per model call a `step-start` ... `step-finish` run of parts; the `step-finish` holds that
  call's `tokens` `{input, output, reasoning, cache: {read, write}}` and `cost`. opencode stores
  `input` without the cached tokens (`total` = input + output + cache read + write in the files here), so
  it is the uncached input here. `output` is the AI SDK's `outputTokens`, which already holds the
  reasoning tokens (`reasoning` is a part of it, as OpenAI's and Anthropic's usage count them), so
  `output` alone is the call's output.
- Parts: `text` (`synthetic` ones are sent too; `ignored` ones are not), `reasoning`, `tool`
  (`callID`, `tool`, `state {status, input, output | error}`: the call and its result, which
  opencode sends back as a tool message), `file` (an attachment: its name and type stand in),
  `step-start`, `step-finish`, `snapshot` and `patch` (opencode's own bookkeeping, not sent),
  `compaction`, `subtask`, `agent`, `retry`.
- A real compaction is a user message holding a `compaction` part (`auto`: opencode started it on
  overflow; else `/compact`) and, from 1.18, `tail_start_id`: the first message it kept verbatim.
  The assistant message after it with `summary: true` (mode `compaction`) is the summarizer's call:
  its text is the summary (`CompactionMarker.summary`), its usage the marker's `usage`; neither is
  a message of the conversation. opencode records no context size for it (`pre_tokens` None).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from compactlab.sessions import model
from compactlab.sessions.importers import importer as common
from compactlab.sessions.importers.conversation import Conversation, model_name
from compactlab.sessions.model import Message, TextPart, ThinkingPart, ToolCallPart, ToolResultPart
from compactlab.sessions.source import RecordIssues

NOT_SENT = ("step-start", "snapshot", "patch", "retry")
DAMAGED = object()  # a message or part whose JSON could not be read (already reported)


class OpencodeBuilder(Conversation):
    """Feed it a session's messages in order (`add`), then `build`."""

    def __init__(self, issues: RecordIssues):
        super().__init__(issues)
        self.position: dict[str, int] = {}  # message id -> the index of the first message it gave
        self.pending: dict | None = None  # a compaction waiting for its summary message

    def parse(self, what: str, text: object) -> object:
        """The JSON of a message or a part (`what` names it), or DAMAGED (reported)."""
        try:
            return json.loads(text) if isinstance(text, (str, bytes)) else text
        except ValueError as exc:
            self.issues.report(None, f"{what}: its JSON is not valid ({exc})")
            return DAMAGED

    def add(self, message_id: str, info: object, parts: Iterable[tuple[str, object]]) -> None:
        if info is DAMAGED:
            return
        if not isinstance(info, dict):
            self.issues.report(None, f"message {message_id}: expected a JSON object, got {type(info).__name__}")
            return
        self.position[message_id] = len(self.messages)
        role = info.get("role")
        read = [(part_id, data) for part_id, data in parts if self._is_part(message_id, part_id, data) and isinstance(data, dict)]
        if role == "user":
            self._user(message_id, read)
        elif role == "assistant" and info.get("summary") is True and self.pending is not None:
            self._summary(message_id, info, read)
        elif role == "assistant":
            self._assistant(message_id, info, read)
        else:
            self.issues.report(None, f"message {message_id}: unknown role {role!r:.40}; expected user or assistant")

    def _is_part(self, message_id: str, part_id: str, data: object) -> bool:
        if isinstance(data, dict) and isinstance(data.get("type"), str):
            return True
        if data is DAMAGED:
            return False
        self.issues.report(None, f"part {part_id} of message {message_id}: expected an object with a `type`, got {data!r:.60}")
        return False

    def _user(self, message_id: str, parts: list[tuple[str, dict]]) -> None:
        content: list[model.Part] = []
        for part_id, data in parts:
            kind = data["type"]
            if kind == "compaction":
                self._open_compaction(message_id, data)
            elif kind == "text" and isinstance(data.get("text"), str):
                if data.get("ignored"):
                    self.ignored["text part marked ignored: not sent to the model"] += 1
                else:
                    content.append(TextPart(data["text"]))
            elif kind == "file":
                content.append(TextPart(f"[file {data.get('filename') or data.get('url')!s:.200} ({data.get('mime')})]"))
            elif kind in ("subtask", "agent"):
                content.append(TextPart(str(data.get("prompt") or data.get("name") or "")))
            else:
                self.issues.report(None, f"part {part_id} of user message {message_id}: unknown part type {kind!r:.40}")
        if content:
            self.append(Message("user", tuple(content), message_id))

    def _open_compaction(self, message_id: str, data: dict) -> None:
        tail = data.get("tail_start_id")
        self.pending = {
            "at": len(self.messages),
            "trigger": "auto" if data.get("auto") is True else "manual" if data.get("auto") is False else "unknown",
            "from": self.position.get(tail) if isinstance(tail, str) else None,
            "id": message_id,
        }

    def _summary(self, message_id: str, info: dict, parts: list[tuple[str, dict]]) -> None:
        assert self.pending is not None
        pending, self.pending = self.pending, None
        summary = "\n".join(d["text"] for _, d in parts if d["type"] == "text" and isinstance(d.get("text"), str))
        calls = [call for _, d in parts if d["type"] == "step-finish" and (call := self._call(message_id, info, d))]
        at, start = pending["at"], pending["from"]
        self.compactions.append(
            model.CompactionMarker(
                at_message=at,
                trigger=pending["trigger"],
                pre_tokens=None,
                summary=summary,
                kept=tuple(range(start, at)) if start is not None and start <= at else (),
                usage=calls[-1] if calls else None,
            )
        )

    def _assistant(self, message_id: str, info: dict, parts: list[tuple[str, dict]]) -> None:
        # One model call per step: the parts since the previous step-finish, with its tokens.
        step: list[model.Part] = []
        results: list[ToolResultPart] = []
        number = 0
        for part_id, data in parts:
            kind = data["type"]
            if kind == "step-finish":
                self._step(f"{message_id}#{number}" if number else message_id, step, results, self._call(message_id, info, data))
                step, results, number = [], [], number + 1
            elif kind == "text" and isinstance(data.get("text"), str):
                step.append(TextPart(data["text"]))
            elif kind == "reasoning" and isinstance(data.get("text"), str):
                step.append(ThinkingPart(data["text"]))
            elif kind == "tool" and isinstance(data.get("callID"), str) and isinstance(data.get("tool"), str):
                self._tool(message_id, data, step, results)
            elif kind in NOT_SENT:
                continue
            else:
                self.issues.report(None, f"part {part_id} of assistant message {message_id}: unknown part {kind!r:.40}")
        if step or results:  # an unfinished step (opencode stopped before its step-finish): no call recorded
            self._step(f"{message_id}#{number}" if number else message_id, step, results, None)

    def _tool(self, message_id: str, data: dict, step: list[model.Part], results: list[ToolResultPart]) -> None:
        state = _object(data.get("state"))
        status = state.get("status")
        step.append(ToolCallPart(data["callID"], data["tool"], json.dumps(state.get("input", {}), ensure_ascii=False)))
        if status == "completed":
            results.append(ToolResultPart(data["callID"], str(state.get("output", ""))))
        elif status == "error":
            results.append(ToolResultPart(data["callID"], str(state.get("error", "")), is_error=True))
        else:  # pending or running when the session stopped: opencode sends it back as aborted
            results.append(ToolResultPart(data["callID"], "[Tool execution was interrupted]", is_error=True))
            self.ignored[f"tool call left {status or 'unfinished'}: its result is opencode's interruption notice"] += 1

    def _step(self, source_id: str, parts: list[model.Part], results: list[ToolResultPart], call: model.LLMCall | None) -> None:
        if not parts:
            self.ignored["model call with no content: no reply"] += 1
            return
        self.append(Message("assistant", tuple(parts), source_id, call=call))
        for number, result in enumerate(results):
            self.append(Message("tool", (result,), f"{source_id}/tool{number}"))

    def _call(self, message_id: str, info: dict, finish: dict) -> model.LLMCall | None:
        tokens = finish.get("tokens")
        if not isinstance(tokens, dict):
            self.issues.report(None, f"step-finish of message {message_id}: `tokens` must be an object, got {tokens!r:.60}")
            return None
        cache = _object(tokens.get("cache"))
        counts = {}
        for name, value in (
            ("input", tokens.get("input")),
            ("output", tokens.get("output")),
            ("reasoning", tokens.get("reasoning", 0)),
            ("cache.read", cache.get("read", 0)),
            ("cache.write", cache.get("write", 0)),
        ):
            if not common.is_call_count(value):
                self.issues.report(
                    None, f"step-finish of message {message_id}: `tokens.{name}` {common.call_count_problem(value)}"
                )
                return None
            counts[name] = int(value)
        if counts["input"] + counts["cache.read"] + counts["cache.write"] == 0:
            return None  # a request that failed before the provider counted a prompt
        cost = finish.get("cost")
        if self.bad_cost(cost, f"step-finish of message {message_id}: `cost`"):
            return None
        time = _object(info.get("time"))
        return model.LLMCall(
            model=model_name(info.get("modelID")),
            input_tokens=counts["input"],
            cache_read_tokens=counts["cache.read"],
            cache_write_tokens=counts["cache.write"],
            output_tokens=counts["output"],
            cost_usd=float(cost) if cost is not None else None,
            timestamp=common.timestamp_seconds(time.get("created")),
        )

    def build(self, id: str, source_format: str, path: str, subagent: bool) -> model.Session:
        if self.pending is not None:
            self.issues.report(None, f"message {self.pending['id']}: a compaction without the summary message that ends it")
        return self.session(id, source_format, path, subagent)


def _object(value: object) -> dict:
    """`value` when it is a JSON object, else an empty one (what is missing reads as absent)."""
    return value if isinstance(value, dict) else {}
