"""OpenAI Chat Completions conversations saved as one JSON document.

The accepted shape is the request body of `POST /v1/chat/completions` plus the usage that was
recorded for each call (not a list of chat-completion responses):

    {"model": "gpt-4o",                      # optional; the model of every call
     "messages": [...],                      # the Chat Completions `messages` array
     "usage": [{...}, null, {...}]}          # optional; one entry per assistant message, in order

or, instead of the top-level list, a `usage` object on an assistant message itself (it wins over
the list). An assistant message may also carry its own `model` and `cost`. A bare top-level
array of messages is accepted too (see `json_chat` for that and for how the format is detected).

Messages: roles system/developer (-> system), user, assistant, tool, and the legacy `function`.
Content is a string, null, or an array of parts: `text`, `refusal` (-> text), `image_url`,
`input_audio` and `file` (-> ImagePart placeholders: data URLs and base64 are measured, URLs and
file ids are not fetched). Part types this importer does not know are kept as a text placeholder
"[<type> part not imported]" rather than dropped. Assistant `reasoning_content` (DeepSeek, vLLM)
or `reasoning` (OpenRouter) becomes a ThinkingPart; `tool_calls` of type `function` or `custom`
become ToolCallParts. A legacy `function_call` has no id, so it gets a synthetic one that the
next `function` message with the same name answers.

Usage is OpenAI's: `prompt_tokens` includes cached tokens, so input_tokens = prompt_tokens -
cached - cache writes, where cached is `prompt_tokens_details.cached_tokens` (or DeepSeek's
`prompt_cache_hit_tokens`) and cache writes are `prompt_tokens_details.cache_write_tokens`
(OpenRouter; usually absent, then 0). `cost` in the usage object (OpenRouter) becomes cost_usd.
"""

from __future__ import annotations

import json

from compactlab.sessions.importers.importer import FormatFacts, image_part
from compactlab.sessions.importers.json_chat import (
    OPENAI,
    ChatConverter,
    ChatDocument,
    ChatImporter,
    Classification,
    as_count,
    cost_of,
    ensure_parts,
    json_kind,
    placeholder,
    token_counts,
    url_image,
)
from compactlab.sessions.model import LLMCall, Message, Part, TextPart, ThinkingPart, ToolCallPart, ToolResultPart
from compactlab.sessions.source import RecordIssues

ROLE_MAP = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
    "function": "tool",
}
USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "prompt_cache_hit_tokens")


class OpenAIChatImporter(ChatImporter):
    name = OPENAI
    description = "OpenAI Chat Completions request JSON ({model, messages, usage}) with recorded per-call usage"
    facts = FormatFacts()

    def why_not(self, found: Classification) -> str:
        return f"has Anthropic Messages markers: {'; '.join(found.anthropic[:3])}"

    def converter(self) -> type[ChatConverter]:
        return _Converter


class _Converter(ChatConverter):
    roles = tuple(ROLE_MAP)

    def __init__(self, doc: ChatDocument, model: str | None, issues: RecordIssues):
        super().__init__(doc, model, issues)
        # Legacy function calls have no ids: (name, synthetic id) of calls not yet answered.
        self.open_functions: list[tuple[str, str]] = []

    def convert(self) -> list[Message]:
        out: list[Message] = []
        for i, where, raw in self.records():
            role = raw["role"]
            if role == "assistant":
                message = self.assistant(i, raw, where)
            elif role in ("tool", "function"):
                message = self.tool_result(raw, where)
            else:
                message = self.plain(ROLE_MAP[role], raw, where)
            if message is not None:
                out.append(message)
        return out

    def plain(self, role: str, raw: dict, where: str) -> Message | None:
        if raw.get("content") is None:
            self.report(f"{where} ({raw['role']}) has no `content`")
            return None
        parts = self.content_parts(raw["content"], where)
        if parts is None:
            return None
        return Message(role=role, parts=ensure_parts(parts), source_id=where)  # type: ignore[arg-type]

    def assistant(self, i: int, raw: dict, where: str) -> Message | None:
        parts: list[Part] = []
        for key in ("reasoning_content", "reasoning"):
            value = raw.get(key)
            if isinstance(value, str) and value:
                parts.append(ThinkingPart(text=value))
                break
            if value is not None and not isinstance(value, str):
                self.report(f"{where}.{key} must be a string, got {json_kind(value)}")
        content = self.content_parts(raw.get("content"), where)
        if content is None:
            return None
        parts += content
        if isinstance(raw.get("refusal"), str) and raw["refusal"]:
            parts.append(TextPart(text=raw["refusal"]))
        parts += self.tool_calls(raw.get("tool_calls"), where)
        if raw.get("function_call") is not None:
            parts += self.function_call(i, raw["function_call"], where)
        call = self.call(raw, self.usages[i], where) if i in self.usages else None
        return Message(role="assistant", parts=ensure_parts(parts), source_id=where, call=call)

    def tool_calls(self, calls: object, where: str) -> list[Part]:
        if calls is None:
            return []
        if not isinstance(calls, list):
            self.report(f"{where}.tool_calls must be an array, got {json_kind(calls)}")
            return []
        parts: list[Part] = []
        for j, call in enumerate(calls):
            at = f"{where}.tool_calls[{j}]"
            kind = call.get("type", "function") if isinstance(call, dict) else None
            body = call.get(kind) if isinstance(call, dict) and isinstance(kind, str) else None
            if not isinstance(call, dict) or not isinstance(call.get("id"), str) or not isinstance(body, dict):
                self.report(f"{at} must be an object with a string `id` and a `function` (or `custom`) object")
                continue
            name = body.get("name")
            # `custom` tools take free text (`input`); function arguments are JSON text.
            arguments = body.get("input" if kind == "custom" else "arguments", "")
            if not isinstance(name, str):
                self.report(f"{at}: the {kind} has no string `name`")
                continue
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments, ensure_ascii=False)  # some loggers store parsed JSON
            parts.append(ToolCallPart(id=call["id"], name=name, arguments=arguments))
        return parts

    def function_call(self, i: int, call: object, where: str) -> list[Part]:
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            self.report(f"{where}.function_call must be an object with a string `name`")
            return []
        arguments = call.get("arguments", "")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        call_id = f"{where}.function_call"
        self.open_functions.append((call["name"], call_id))
        return [ToolCallPart(id=call_id, name=call["name"], arguments=arguments)]

    def tool_result(self, raw: dict, where: str) -> Message | None:
        if raw["role"] == "tool":
            call_id = raw.get("tool_call_id")
            if not isinstance(call_id, str):
                self.report(f"{where} (tool) has no string `tool_call_id`")
                return None
        else:
            call_id = self.answer_function(raw.get("name"))
        content = raw.get("content")
        parts = self.content_parts(content, where) if content is not None else []
        if parts is None:
            return None
        texts = [p.text for p in parts if isinstance(p, TextPart)]
        extra = [p for p in parts if not isinstance(p, TextPart)]
        result = ToolResultPart(call_id=call_id, content="\n".join(texts))
        return Message(role="tool", parts=(result, *extra), source_id=where)

    def answer_function(self, name: object) -> str:
        # The latest unanswered legacy call of that name; unmatched ones stay orphans (reported).
        for k in range(len(self.open_functions) - 1, -1, -1):
            if self.open_functions[k][0] == name:
                return self.open_functions.pop(k)[1]
        return f"function:{name}"

    def content_parts(self, content: object, where: str) -> list[Part] | None:
        """Parts of `content`; None (after reporting) when the content itself has a wrong type."""
        if content is None:
            return []
        if isinstance(content, str):
            return [TextPart(text=content)]
        if not isinstance(content, list):
            self.report(f"{where}.content must be a string, an array of parts or null, got {json_kind(content)}")
            return None
        parts: list[Part] = []
        for j, item in enumerate(content):
            at = f"{where}.content[{j}]"
            if not isinstance(item, dict) or not isinstance(item.get("type"), str):
                self.report(f"{at} must be an object with a string `type`, got {json_kind(item)}")
                continue
            part = self.part(item, at)
            if part is not None:
                parts.append(part)
        return parts

    def part(self, item: dict, at: str) -> Part | None:
        kind = item["type"]
        if kind in ("text", "refusal"):
            text = item.get(kind)
            if not isinstance(text, str):
                self.report(f"{at} ({kind}) has no string `{kind}`")
                return None
            return TextPart(text=text)
        if kind == "image_url":
            image = item.get("image_url")
            url = image.get("url") if isinstance(image, dict) else image  # old clients sent a bare string
            if not isinstance(url, str):
                self.report(f"{at} (image_url) has no string `image_url.url`")
                return None
            return url_image(url)
        if kind == "input_audio":
            audio = item.get("input_audio")
            if not isinstance(audio, dict) or not isinstance(audio.get("data"), str):
                self.report(f"{at} (input_audio) has no string `input_audio.data`")
                return None
            return image_part(f"audio/{audio.get('format') or 'unknown'}", audio["data"])
        if kind == "file":
            return self.file_part(item.get("file"), at)
        return placeholder(f"{kind} part")

    def file_part(self, file: object, at: str) -> Part | None:
        if not isinstance(file, dict):
            self.report(f"{at} (file) has no `file` object")
            return None
        data = file.get("file_data")
        if isinstance(data, str):
            # Usually a data URL ("data:application/pdf;base64,..."); bare base64 also occurs.
            return (
                url_image(data, "application/octet-stream")
                if data.startswith("data:")
                else image_part("application/octet-stream", data)
            )
        return url_image(str(file.get("filename") or ""), "application/octet-stream")  # file_id: not fetched

    def call(self, raw: dict, usage: object, where: str) -> LLMCall | None:
        at = f"{where}.usage"
        counts = token_counts(usage, USAGE_FIELDS, "prompt_tokens", at, self.issues)
        if counts is None:
            return None
        assert isinstance(usage, dict)
        details = usage.get("prompt_tokens_details")
        details = details if isinstance(details, dict) else {}
        cached = as_count(details.get("cached_tokens"))
        written = as_count(details.get("cache_write_tokens"))
        if cached is None or written is None:
            self.report(f"{at}.prompt_tokens_details must hold non-negative integer token counts")
            return None
        if "cached_tokens" not in details or details["cached_tokens"] is None:
            cached = counts["prompt_cache_hit_tokens"]  # DeepSeek reports the cached part here
        prompt = counts["prompt_tokens"]
        if cached + written > prompt:
            self.report(f"{at}: cached ({cached}) + cache-write ({written}) tokens exceed prompt_tokens ({prompt})")
            return None
        return LLMCall(
            model=self.model_of(raw),
            input_tokens=prompt - cached - written,
            cache_read_tokens=cached,
            cache_write_tokens=written,
            output_tokens=counts["completion_tokens"],
            cost_usd=cost_of(usage, raw, at, self.issues),
        )
