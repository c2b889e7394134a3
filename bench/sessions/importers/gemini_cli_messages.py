"""One Gemini CLI message record as a canonical message (see importers/gemini_cli.py for the format).

`content` is Gemini's PartListUnion: a string, or a list of parts (`{text}`, `{text, thought: true}`,
`{functionCall: {id, name, args}}`, `{functionResponse: {id, name, response}}`, inline data).
"""

from __future__ import annotations

import json

from compactlab.sessions.importers.importer import call_count_problem, image_part, is_call_count, timestamp_seconds
from compactlab.sessions.model import LLMCall, Message, Part, Role, TextPart, ThinkingPart, ToolCallPart, ToolResultPart

_TOKEN_FIELDS = ("input", "output", "cached", "thoughts", "tool", "total")


def message_of(record: dict, line: int | None = None) -> Message:
    """The message a record holds; a wrong shape raises ValueError naming the field."""
    parts = _parts(record.get("content"), "content")
    if record["type"] == "user":
        role: Role = "tool" if any(isinstance(p, ToolResultPart) for p in parts) else "user"
        return Message(role=role, parts=tuple(parts) or (TextPart(""),), source_id=record["id"], line=line)
    thoughts = record.get("thoughts") or []
    if not isinstance(thoughts, list):
        raise ValueError(f"`thoughts`: expected a list, got {type(thoughts).__name__}")
    thinking: list[Part] = [
        ThinkingPart("\n".join(str(t.get(k)) for k in ("subject", "description") if t.get(k)))
        for t in thoughts
        if isinstance(t, dict)
    ]
    calls = _tool_calls(record.get("toolCalls"))
    named = {c.id for c in calls if isinstance(c, ToolCallPart)}
    # A reply that is only tool calls is recorded with its functionCall parts as content as well.
    text = [p for p in parts if not (isinstance(p, ToolCallPart) and p.id in named)]
    return Message(
        role="assistant",
        parts=tuple(thinking + text + calls) or (TextPart(""),),
        source_id=record["id"],
        line=line,
        call=_call(record),
    )


def tool_results_of(record: dict, from_calls: bool = False) -> list[ToolResultPart]:
    """The tool results a record holds: a user record's functionResponse parts, or (`from_calls`) the
    results in a gemini record's completed `toolCalls`. Damage reads as none (message_of reports it)."""
    try:
        if not from_calls:
            return [p for p in _parts(record.get("content"), "content") if isinstance(p, ToolResultPart)]
        calls = record.get("toolCalls") if record.get("type") == "gemini" else None
        results: list[ToolResultPart] = []
        for k, call in enumerate(calls if isinstance(calls, list) else []):
            if isinstance(call, dict) and call.get("result"):
                found = [p for p in _parts(call["result"], f"toolCalls[{k}].result") if isinstance(p, ToolResultPart)]
                failed = call.get("status") == "error"
                results += [ToolResultPart(call_id=p.call_id, content=p.content, is_error=failed) for p in found]
        return results
    except ValueError:
        return []


def _parts(content: object, where: str) -> list[Part]:
    if content is None or content == "":
        return []
    if isinstance(content, str):
        return [TextPart(content)]
    items = content if isinstance(content, list) else [content]
    parts: list[Part] = []
    for k, item in enumerate(items):
        if isinstance(item, str):
            parts.append(TextPart(item))
        elif not isinstance(item, dict):
            raise ValueError(f"`{where}[{k}]`: expected a part object, got {type(item).__name__}")
        elif isinstance(item.get("text"), str):
            parts.append(ThinkingPart(item["text"]) if item.get("thought") is True else TextPart(item["text"]))
        elif isinstance(item.get("functionCall"), dict):
            call = item["functionCall"]
            parts.append(_tool_call(call, f"{where}[{k}].functionCall"))
        elif isinstance(item.get("functionResponse"), dict):
            response = item["functionResponse"]
            if not isinstance(response.get("id"), str):
                raise ValueError(f"`{where}[{k}].functionResponse.id`: expected a string, got {response.get('id')!r:.40}")
            body = response.get("response")
            output = body.get("output") if isinstance(body, dict) and isinstance(body.get("output"), str) else None
            parts.append(ToolResultPart(call_id=response["id"], content=output if output is not None else json.dumps(body)))
        elif isinstance(item.get("inlineData"), dict):
            data = item["inlineData"]
            parts.append(
                image_part(str(data.get("mimeType") or ""), data.get("data") if isinstance(data.get("data"), str) else None)
            )
        else:
            raise ValueError(
                f"`{where}[{k}]`: expected a text, functionCall, functionResponse or inlineData part, got {item!r:.60}"
            )
    return parts


def _tool_call(call: dict, where: str) -> ToolCallPart:
    if not (isinstance(call.get("id"), str) and isinstance(call.get("name"), str)):
        raise ValueError(f"`{where}`: expected {{id, name, args}}, got {call!r:.60}")
    args = call.get("args")
    return ToolCallPart(id=call["id"], name=call["name"], arguments=json.dumps(args if args is not None else {}))


def _tool_calls(calls: object) -> list[Part]:
    if calls is None:
        return []
    if not isinstance(calls, list):
        raise ValueError(f"`toolCalls`: expected a list, got {type(calls).__name__}")
    return [_tool_call(c if isinstance(c, dict) else {}, f"toolCalls[{k}]") for k, c in enumerate(calls)]


def _call(record: dict) -> LLMCall | None:
    tokens = record.get("tokens")
    if tokens is None:  # a synthetic gemini turn (compression's acknowledgement): no call made it
        return None
    if not isinstance(tokens, dict):
        raise ValueError(f"`tokens`: expected an object, got {type(tokens).__name__}")
    counts: dict[str, int] = {}
    for name in _TOKEN_FIELDS:
        value = tokens.get(name, 0)  # `thoughts` and `tool` are optional: absent, none of that kind
        if not is_call_count(value):
            raise ValueError(f"`tokens.{name}` {call_count_problem(value)}")
        counts[name] = int(value)
    if counts["cached"] > counts["input"]:
        raise ValueError(f"`tokens`: {counts['cached']} cached tokens exceed the {counts['input']} input tokens")
    model = record.get("model")
    return LLMCall(
        model=model if isinstance(model, str) and model else "unknown",
        # Gemini's promptTokenCount includes the cached part; tool-use prompt tokens are counted apart.
        input_tokens=counts["input"] - counts["cached"] + counts["tool"],
        cache_read_tokens=counts["cached"],
        output_tokens=counts["output"] + counts["thoughts"],
        timestamp=timestamp_seconds(record.get("timestamp")),
    )
