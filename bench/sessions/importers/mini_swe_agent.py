"""mini-swe-agent trajectories (`*.traj.json`): one JSON document per agent run, v1.x and v2.x layouts.

Read from SWE-agent/mini-swe-agent (v1: run/utils/save.py, agents/default.py, models/litellm_model.py;
v2: agents/default.py `serialize()`, models/litellm_model.py, models/utils/actions_toolcall*.py,
docs/advanced/v2_migration.md):

- v1.x (`trajectory_format` "mini-swe-agent-1", `info.mini_version` "1.*"): hand-built `{role, content, extra}`
  messages; actions are ```bash blocks in assistant text (no `tool_calls`), outputs come back as `user`
  messages; the raw provider response sits in assistant `extra.response`, with no per-message cost
  (OpenRouter's own is `usage.cost`). The end of a run is appended as a last `user` message (the submission).
- v2.x ("mini-swe-agent-1.1", "2.*"): the model's native message plus `extra` (`response`, `cost`, `actions`):
  OpenAI `tool_calls` and `role: tool` results (text-based classes: `user` results), ending in `role: exit`.
  Responses-API classes store raw response objects (`object: response`) and `function_call_output` items.

v1 observations (importers/mini_swe_agent_v1.py): each v1 reply gets a `bash` tool call read from its text, and the
`user` message right after it becomes that call's tool result, as v2's `tool` messages are.

Roles: system/user/assistant/tool as recorded, `developer` -> system. Not sent to any model, so counted in
`Session.ignored`: v2 `exit` and the v1 closing message as ("exit", n); a format-error message that keeps
the rejected response (newer v2) as ("rejected_response_call", n) - billed, but never in the history.
"""

from __future__ import annotations

import json
from collections import Counter

from compactlab.sessions.importers.importer import FormatFacts, check_tool_pairing, image_part, is_call_count, is_cost
from compactlab.sessions.importers.mini_swe_agent_v1 import action_regex, ends_with_v1_exit, is_v1, v1_observations
from compactlab.sessions.model import (
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
from compactlab.sessions.source import RecordIssues, Source

_ROLES: dict[str, Role] = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant", "tool": "tool"}
_TEXT_TYPES = ("text", "input_text", "output_text")


class BadShape(Exception):
    """A record of the wrong shape. The text is the path below `messages[i]` and what is wrong there."""


_Bad = BadShape


def _type(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _count(obj: dict, key: str, path: str) -> int:
    """One call's token count: a non-negative int below 10^8 (a bool is not one; see `is_call_count`)."""
    value = obj.get(key)
    if type(value) is not int or not is_call_count(value):
        raise _Bad(f"{path}.{key}: expected a non-negative integer below 10^8, got {value!r:.40}")
    return int(value)


def _optional_count(obj: dict, key: str, path: str) -> int | None:
    """A token count, or None when absent. Null is no count (the call's usage is unknown): no real
    trajectory writes one where a count is read (nulls only in unread breakdowns such as audio_tokens)."""
    if key in obj and obj[key] is None:
        raise _Bad(f"{path}.{key}: null (the call's usage is unknown)")
    return None if key not in obj else _count(obj, key, path)


def _object(obj: dict, key: str, path: str) -> dict:
    """An optional nested object; providers write null for absent details, so null reads as empty."""
    value = obj.get(key)
    if value is not None and not isinstance(value, dict):
        raise _Bad(f"{path}.{key}: expected an object, got {_type(value)}")
    return value or {}


class MiniSweAgentImporter:
    name = "mini-swe-agent"
    description = "mini-swe-agent trajectory (*.traj.json), v1.x and v2.x layouts"
    facts = FormatFacts()

    def match(self, source: Source) -> str | None:
        if not source.is_single_document():
            return "not a single JSON document"
        doc = source.document
        if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
            return "not a mini-swe-agent trajectory: no top-level `messages` list"
        fmt, info = doc.get("trajectory_format"), doc.get("info")
        if isinstance(fmt, str) and fmt.startswith("mini-swe-agent"):
            return None
        if isinstance(info, dict) and "mini_version" in info:
            return None
        return "not a mini-swe-agent trajectory: no trajectory_format/info.mini_version"

    def load(self, source: Source, issues: RecordIssues) -> list[Session]:
        doc = source.document
        if not isinstance(doc, dict):
            issues.report(None, f"expected a JSON object at the top level, got {_type(doc)}")
            return []
        if not isinstance(doc.get("trajectory_format", ""), str):  # it decides how the run ended
            issues.report(None, f"trajectory_format: expected a string, got {_type(doc['trajectory_format'])}")
        info = doc.get("info", {})
        if not isinstance(info, dict):
            issues.report(None, f"info: expected an object, got {_type(info)}")
            info = {}
        # The configured name (e.g. "deepseek/deepseek-chat") names a call only when its response does not.
        config = info.get("config")
        model_config = config.get("model") if isinstance(config, dict) else None
        fallback = model_config.get("model_name") if isinstance(model_config, dict) else None
        reader = _Reader(fallback if isinstance(fallback, str) and fallback else "unknown")
        raw_messages = doc.get("messages")
        if not isinstance(raw_messages, list):
            issues.report(None, f"messages: expected a list of message objects, got {_type(raw_messages)}")
            raw_messages = []
        v1 = is_v1(doc, info)
        v1_exit = len(raw_messages) - 1 if v1 and ends_with_v1_exit(info, raw_messages) else None

        messages: list[Message] = []
        for i, raw in enumerate(raw_messages):
            if i == v1_exit:
                reader.ignored["exit"] += 1
                continue
            try:
                message = reader.message(i, raw)
            except _Bad as exc:
                issues.report(None, f"messages[{i}]{exc}")
                continue
            for problem in reader.problems:
                issues.report(None, problem)
            reader.problems.clear()
            if message is not None:
                messages.append(message)

        if v1:
            messages = v1_observations(messages, action_regex(info, issues))
        kept = check_tool_pairing(messages, issues)
        models = tuple(sorted({m.call.model for m in kept if m.call is not None}))
        return [
            Session(
                id=_session_id(doc, info, source),
                source_format=self.name,
                source_path=str(source.path),
                messages=tuple(kept),
                models=models,
                context_window=None,
                skipped=tuple(issues.skipped),
                ignored=tuple(sorted(reader.ignored.items())),
            )
        ]


def _session_id(doc: dict, info: dict, source: Source) -> str:
    # The file name, not `instance_id`: several runs of one task (reruns, other models) share an
    # instance id, and every later stage keys results by session id.
    return source.path.name.removesuffix(".gz").removesuffix(".traj.json").removesuffix(".json")


class _Reader:
    """Turns one raw message into a canonical Message; a wrong shape raises `_Bad` (the record is skipped)."""

    def __init__(self, fallback_model: str):
        self.fallback_model = fallback_model
        self.ignored: Counter[str] = Counter()
        self.problems: list[str] = []  # damage that costs a message only its usage; reported, message kept

    def message(self, i: int, raw: object) -> Message | None:
        if not isinstance(raw, dict):
            raise _Bad(f": expected a message object, got {_type(raw)}")
        where = f"messages[{i}]"
        if raw.get("object") == "response":  # v2 Responses-API classes store the raw response object
            parts, call = self._response_object(raw), self._kept_call(where, raw, raw.get("extra"), "")
            return Message(role="assistant", parts=tuple(parts) or (TextPart(""),), source_id=where, call=call)
        if raw.get("type") == "function_call_output":
            if not isinstance(raw.get("call_id"), str):
                raise _Bad(f".call_id: expected a string, got {_type(raw.get('call_id'))}")
            text = "\n".join(p.text for p in self._content(raw.get("output"), ".output") if isinstance(p, TextPart))
            return Message(role="tool", parts=(ToolResultPart(call_id=raw["call_id"], content=text),), source_id=where)

        role, extra = raw.get("role"), raw.get("extra")
        if role == "exit":  # v2 end-of-run record (exit status, submission): never sent to a model
            self.ignored["exit"] += 1
            return None
        if not isinstance(role, str) or role not in _ROLES:
            raise _Bad(f".role: unknown role {role!r:.40}")
        role = _ROLES[role]
        content = self._content(raw.get("content"), ".content")
        call = None
        if role == "assistant":
            parts = self._thinking(raw, extra) + content + self._tool_calls(raw.get("tool_calls"))
            response = extra.get("response") if isinstance(extra, dict) else None
            call = self._kept_call(where, response, extra, ".extra.response")
        elif role == "tool":
            if not isinstance(raw.get("tool_call_id"), str):
                raise _Bad(f".tool_call_id: expected a string, got {_type(raw.get('tool_call_id'))}")
            text = "\n".join(p.text for p in content if isinstance(p, TextPart))
            failed = isinstance(extra, dict) and bool(extra.get("exception_info"))  # e.g. a timeout
            result = ToolResultPart(call_id=raw["tool_call_id"], content=text, is_error=failed)
            parts = [result, *(p for p in content if not isinstance(p, TextPart))]
        else:
            parts = content
            if isinstance(extra, dict) and isinstance(extra.get("response"), dict):
                self.ignored["rejected_response_call"] += 1
        # check_tool_pairing drops part-less messages; an empty turn must survive with its call.
        return Message(role=role, parts=tuple(parts) or (TextPart(""),), source_id=where, call=call)

    def _content(self, content: object, path: str) -> list[Part]:
        if content is None or content == "":
            return []
        if isinstance(content, str):
            return [TextPart(content)]
        if not isinstance(content, list):
            raise _Bad(f"{path}: expected a string or a list of parts, got {_type(content)}")
        parts: list[Part] = []
        for k, item in enumerate(content):
            kind = item.get("type") if isinstance(item, dict) else None
            if kind in _TEXT_TYPES and isinstance(item.get("text"), str):
                parts.append(TextPart(item["text"]))
            elif kind in ("image_url", "input_image"):
                url = item.get("image_url")
                url = url.get("url") if isinstance(url, dict) else url
                parts.append(_image(url if isinstance(url, str) else ""))
            else:
                raise _Bad(f"{path}[{k}]: expected a text or image part, got {item!r:.60}")
        return parts

    def _thinking(self, raw: dict, extra: object) -> list[Part]:
        # v2 copies `reasoning_content` (DeepSeek) onto the message; v1 has it only in the raw response,
        # where OpenRouter calls it `reasoning`.
        holders = [raw]
        response = extra.get("response") if isinstance(extra, dict) else None
        choices = response.get("choices") if isinstance(response, dict) else None
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            message = choices[0].get("message")
            holders.append(message if isinstance(message, dict) else {})
        for holder in holders:
            for key in ("reasoning_content", "reasoning"):
                if isinstance(holder.get(key), str) and holder[key]:
                    return [ThinkingPart(holder[key])]
        return []

    def _tool_calls(self, tool_calls: object) -> list[Part]:
        return openai_tool_calls(tool_calls)

    def _response_object(self, raw: dict) -> list[Part]:
        output = raw.get("output")
        if not isinstance(output, list):
            raise _Bad(f".output: expected a list of output items, got {_type(output)}")
        parts: list[Part] = []
        for k, item in enumerate(output):
            kind = item.get("type") if isinstance(item, dict) else None
            if kind == "reasoning":
                summary = item.get("summary") if isinstance(item.get("summary"), list) else []
                text = "\n".join(s["text"] for s in summary if isinstance(s, dict) and isinstance(s.get("text"), str))
                parts += [ThinkingPart(text)] if text else []
            elif kind == "message":
                parts += self._content(item.get("content"), f".output[{k}].content")
            elif kind == "function_call" and isinstance(item.get("name"), str):
                call_id = item.get("call_id") or item.get("id")
                if not isinstance(call_id, str):
                    raise _Bad(f".output[{k}].call_id: expected a string, got {_type(call_id)}")
                parts.append(ToolCallPart(id=call_id, name=item["name"], arguments=_arguments(item.get("arguments"))))
            else:
                raise _Bad(f".output[{k}]: expected a reasoning, message or function_call item, got {item!r:.60}")
        return parts

    def _kept_call(self, where: str, response: object, extra: object, path: str) -> LLMCall | None:
        """The call of a message whose text is sound. Bad usage drops only the call, so the message and its
        tool calls stay and later results still pair. No recorded response (test models): no call."""
        try:
            if extra is not None and not isinstance(extra, dict):
                raise _Bad(f".extra: expected an object, got {_type(extra)}")
            if response is not None and not isinstance(response, dict):
                raise _Bad(f"{path}: expected an object, got {_type(response)}")
            cost = extra.get("cost") if isinstance(extra, dict) else None
            return self._call(response, cost, path) if response is not None else None
        except _Bad as exc:
            self.problems.append(f"{where}{exc} (message kept without its usage)")
            return None

    def _call(self, response: dict, cost: object, path: str) -> LLMCall | None:
        usage = response.get("usage")
        upath = f"{path}.usage"
        if usage is None:  # every real recorded response holds one: a call whose size is lost, said so
            raise _Bad(f"{upath}: missing (the recorded response has no token counts)")
        if not isinstance(usage, dict):
            raise _Bad(f"{upath}: expected an object, got {_type(usage)}")
        if "input_tokens" in usage and "prompt_tokens" not in usage:  # Responses API
            prompt, output = _count(usage, "input_tokens", upath), _count(usage, "output_tokens", upath)
            details_path = f"{upath}.input_tokens_details"
            cached = _optional_count(_object(usage, "input_tokens_details", upath), "cached_tokens", details_path) or 0
            written = 0
        else:  # Chat Completions via litellm: prompt_tokens already includes cache hits
            prompt, output = _count(usage, "prompt_tokens", upath), _count(usage, "completion_tokens", upath)
            details, details_path = _object(usage, "prompt_tokens_details", upath), f"{upath}.prompt_tokens_details"
            reported = _optional_count(details, "cached_tokens", details_path)
            if reported is None:  # DeepSeek's own name for the same number
                reported = _optional_count(usage, "prompt_cache_hit_tokens", upath)
            cached = reported or 0
            # Cache writes: litellm (Anthropic) and OpenRouter report them; DeepSeek has none.
            writes = _optional_count(usage, "cache_creation_input_tokens", upath)
            if writes is None:
                writes = _optional_count(details, "cache_write_tokens", details_path)
            written = writes or 0
        if cached > prompt:
            raise _Bad(f"{upath}: {cached} cached tokens exceed the {prompt} prompt tokens")
        if written > prompt - cached:  # not inside prompt_tokens for this provider: keep the total exact
            written = 0
        cost_path = ".extra.cost"
        if cost is None:  # v1 has no extra.cost; OpenRouter reports its own, and v1 sums exactly these
            cost, cost_path = usage.get("cost"), f"{upath}.cost"
        if cost is not None and not is_cost(cost):
            raise _Bad(f"{cost_path}: expected a number (finite, non-negative), got {cost!r:.40}")
        model, request_id = response.get("model"), response.get("id")
        return LLMCall(
            model=model if isinstance(model, str) and model else self.fallback_model,
            input_tokens=prompt - cached - written,
            cache_read_tokens=cached,
            cache_write_tokens=written,
            output_tokens=output,
            cost_usd=float(cost) if cost is not None else None,
            request_id=request_id if isinstance(request_id, str) else None,
        )


def openai_tool_calls(tool_calls: object) -> list[Part]:
    """OpenAI `tool_calls` (`[{id, function: {name, arguments}}]`) as parts; a wrong shape raises `BadShape`
    (SWE-agent's function-calling replies hold the same list)."""
    if tool_calls is None:
        return []
    if not isinstance(tool_calls, list):
        raise _Bad(f".tool_calls: expected a list, got {_type(tool_calls)}")
    parts: list[Part] = []
    for k, call in enumerate(tool_calls):
        fn = call.get("function") if isinstance(call, dict) else None
        if not (isinstance(fn, dict) and isinstance(call.get("id"), str) and isinstance(fn.get("name"), str)):
            raise _Bad(f".tool_calls[{k}]: expected {{id, function: {{name, arguments}}}}, got {call!r:.60}")
        parts.append(ToolCallPart(id=call["id"], name=fn["name"], arguments=_arguments(fn.get("arguments"))))
    return parts


def _arguments(arguments: object) -> str:
    """Arguments as JSON text, as a provider sends them (a few hand back an already-parsed object)."""
    return arguments if isinstance(arguments, str) else json.dumps(arguments if arguments is not None else {})


def _image(url: str) -> Part:
    # Multimodal v2 messages carry images as data URLs; a remote URL has no bytes here to measure.
    if url.startswith("data:") and ";base64," in url:
        header, data = url[5:].split(";base64,", 1)
        return image_part(header or "application/octet-stream", data)
    return image_part("application/octet-stream", None)
