"""Gemini CLI's context path (google-gemini/gemini-cli, Apache-2.0): tool-output masking and chat compression.

Reproduced from packages/core/src/context/toolOutputMaskingService.ts ("masking.ts") and
chatCompressionService.ts ("compression.ts") at the commit `GEMINI_COMMIT`, with Gemini's own token
estimate (packages/core/src/utils/tokenCalculation.ts, "tokens.ts"). Both work on Gemini's
`Content[]`: `contents` maps compactlab messages to it, and the oracle
(`tests.scripts.oracles.gemini_cli`) feeds the same mapping to the engine's own code, so the two
are compared on one input. The mapping, message by message (system messages are Gemini's
systemInstruction, not history, and are left out):
- user / tool message → role "user"; text → {text}; a tool result → {functionResponse: {id, name,
  response: {output}}} (name: the tool call's; an error's text is its output too); an image →
  {inlineData: {mimeType, data: ""}};
- assistant → role "model"; text → {text}; a tool call → {functionCall: {id, name, args}} (args: the
  arguments' JSON, or {input: text} when they are not JSON); thinking is left out (Gemini keeps
  thoughts out of its history).
Lengths are JavaScript's (UTF-16 code units), so a character outside the BMP counts two, as in Gemini.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

from compactlab.contract import CompactionFailed, CompactionRequest, CompactionResult, Context
from compactlab.sessions.messages import is_summary, pinned_head, pinned_in, summary_message, summary_text
from compactlab.sessions.model import ImagePart, Message, TextPart, ToolCallPart, ToolResultPart
from compactlab.strategies.base import setting
from compactlab.strategies.prompting import summarizer_for, summary_request, template_hash

GEMINI_COMMIT = "5411f113cafae26161b4969b0237b8e1e024e2c2"
GEMINI_DATE = "2026-08-21"
MASKED_TAG = "tool_output_masked"  # masking.ts:28
EXEMPT_TOOLS = frozenset({"activate_skill", "ask_user", "enter_plan_mode", "exit_plan_mode"})  # masking.ts:36-41
ACK = "Got it. Thanks for the additional context!"  # compression.ts:438
_ASCII = re.compile(r"[\x00-\x7f]+")


def js_length(text: str) -> int:
    """JavaScript's `String.length`: UTF-16 code units."""
    return len(text) + sum(1 for ch in _ASCII.sub("", text) if ord(ch) > 0xFFFF)


def js_json(value: object, indent: int | None = None) -> str:
    """`JSON.stringify(value)` (or with `null, indent`): no spaces, integral floats as integers."""
    if indent is None:
        return json.dumps(_js_numbers(value), ensure_ascii=False, separators=(",", ":"))
    return json.dumps(_js_numbers(value), ensure_ascii=False, indent=indent)


def _js_numbers(value: object) -> object:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    if isinstance(value, dict):
        return {k: _js_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_js_numbers(v) for v in value]
    return value


def text_tokens(text: str) -> float:
    """tokens.ts:40-57 estimateTextTokens at 4 chars per token: ASCII ¼, other code units 1.5; past
    100,000 units, length / 4."""
    length = js_length(text)
    if length > 100_000:
        return length / 4
    other = length - _ascii_count(text)
    return (length - other) * 0.25 + other * 1.5


def _ascii_count(text: str) -> int:
    return sum(len(run) for run in _ASCII.findall(text))


def part_tokens(part: dict) -> float:
    """One part's unfloored estimate (tokens.ts:129-145)."""
    if isinstance(part.get("text"), str):
        return text_tokens(part["text"])
    if "functionResponse" in part:
        response = part["functionResponse"]
        return (js_length(response.get("name") or "") + js_length(js_json(response.get("response")))) / 4
    media = part.get("inlineData", {}).get("mimeType", "")
    if media.startswith("image/"):
        return 3_000
    if media.startswith("application/pdf"):
        return 25_800
    return js_length(js_json(part)) / 4


def estimate(parts: Sequence[dict]) -> int:
    """tokens.ts:120-147 estimateTokenCountSync: the parts' estimates summed, then floored."""
    return math.floor(sum(part_tokens(p) for p in parts))


def contents(messages: Sequence[Message]) -> tuple[list[dict], list[int]]:
    """The messages as Gemini `Content[]` (see the module's doc), and each content's message index."""
    names = {p.id: p.name for m in messages for p in m.parts if isinstance(p, ToolCallPart)}
    out: list[dict] = []
    where: list[int] = []
    for index, message in enumerate(messages):
        if message.role == "system":
            continue
        parts: list[dict] = []
        for p in message.parts:
            if isinstance(p, TextPart):
                parts.append({"text": p.text})
            elif isinstance(p, ToolResultPart):
                parts.append({"functionResponse": _response(p.call_id, names.get(p.call_id, ""), p.content)})
            elif isinstance(p, ToolCallPart):
                parts.append({"functionCall": {"id": p.id, "name": p.name, "args": _args(p.arguments)}})
            elif isinstance(p, ImagePart):
                parts.append({"inlineData": {"mimeType": p.media_type, "data": ""}})
        out.append({"role": "model" if message.role == "assistant" else "user", "parts": parts})
        where.append(index)
    return out, where


def _response(call_id: str, name: str, output: str) -> dict:
    return {"id": call_id, "name": name, "response": {"output": output}}


def _args(arguments: str) -> object:
    try:
        parsed = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        return {"input": arguments}
    return parsed if isinstance(parsed, dict) else {"input": parsed}


def pending_start(messages: Sequence[Message]) -> int:
    """Where the request about to be sent begins: after the last assistant message. Gemini checks
    (client.ts:689, 699) the history before that request is added to it."""
    return next((i + 1 for i in range(len(messages) - 1, -1, -1) if messages[i].role == "assistant"), 0)


def masked_outputs(history: Sequence[dict], protect: int = 50_000, prunable: int = 30_000) -> list[tuple[int, int]]:
    """masking.ts:68-154: the (content, part) positions `mask` masks, newest first; [] when fewer than
    `prunable` tokens lie past the newest `protect` tool tokens. The newest content is skipped
    (protectLatestTurn, on by default: masking.ts:27, 92-94)."""
    cumulative = total = 0
    crossed = False
    found: list[tuple[int, int, int]] = []
    for i in range(len(history) - 2, -1, -1):
        parts = history[i].get("parts") or []
        for j in range(len(parts) - 1, -1, -1):
            response = parts[j].get("functionResponse")
            if response is None or (response.get("name") and response["name"] in EXEMPT_TOOLS):
                continue
            if response.get("response") is None or f"<{MASKED_TAG}" in js_json(response["response"], 2):
                continue
            tokens = estimate([parts[j]])
            if not crossed:
                cumulative += tokens
                if cumulative > protect:
                    crossed = True
                    total += tokens
                    found.append((i, j, tokens))
            else:
                total += tokens
                found.append((i, j, tokens))
    if total < prunable:
        return []
    return [(i, j) for i, j, tokens in found if tokens - estimate([masked_part(history[i]["parts"][j])]) > 0]


def masked_part(part: dict) -> dict:
    """masking.ts:192-231 for a tool other than the shell: the pretty-printed response's first and last
    250 characters (all of it up to 500) in the masked snippet. The file path is where Gemini would
    write the output (`tool-outputs/<tool>_<call id>.txt`; its random suffix left out)."""
    response = part["functionResponse"]
    content = js_json(response.get("response"), 2)
    preview = f"{content[:250]}\n... [TRUNCATED] ...\n{content[-250:]}" if js_length(content) > 500 else content
    safe = re.sub(r"[^a-zA-Z0-9_-]", "_", response.get("name") or "unknown_tool").lower()
    call = re.sub(r"[^a-zA-Z0-9_-]", "_", response.get("id") or "").lower()
    path = f".gemini/tmp/tool-outputs/{safe}_{call}.txt"
    snippet = f"<{MASKED_TAG}>\n{preview}\n\nOutput too large. Full output available at: {path}\n</{MASKED_TAG}>"
    return {"functionResponse": {**response, "response": {"output": snippet}}}


def split_point(history: Sequence[dict], fraction: float = 0.7) -> int:
    """compression.ts:60-100 findCompressSplitPoint: the first user content without a function response
    at or after `fraction` of the characters (JSON.stringify per content); else everything when the
    last content is a model reply without a call; else the last such user content (0: nothing)."""
    counts = [js_length(js_json(c)) for c in history]
    target = sum(counts) * fraction
    last = cumulative = 0
    for i, content in enumerate(history):
        if content.get("role") == "user" and not any("functionResponse" in p for p in content.get("parts") or []):
            if cumulative >= target:
                return i
            last = i
        cumulative += counts[i]
    if history and history[-1].get("role") == "model" and not any("functionCall" in p for p in history[-1].get("parts") or []):
        return len(history)
    return last


def truncated_to_budget(history: Sequence[dict], max_chars: int, budget: int = 50_000) -> tuple[list[dict], list[str]]:
    """compression.ts:137-237 truncateHistoryToBudget: newest first, function responses past `budget`
    tokens cut to `max_chars` (fileUtils.ts formatTruncatedToolOutput: the first 20% and last 80%),
    and the call ids cut."""
    counter = 0
    out: list[dict] = []
    cut: list[str] = []
    for content in reversed(history):
        parts: list[dict] = []
        for part in reversed(content.get("parts") or []):
            response = part.get("functionResponse")
            if response is None:
                parts.insert(0, part)
                continue
            body = response.get("response")
            text = body["output"] if isinstance(body, dict) and isinstance(body.get("output"), str) else js_json(body, 2)
            tokens = estimate([{"text": text}])
            if counter + tokens > budget:
                message = _head_and_tail(text, response.get("name") or "unknown_tool", max_chars)
                parts.insert(0, {"functionResponse": {**response, "response": {"output": message}}})
                counter += estimate([{"text": message}])
                cut.append(response.get("id") or "")
            else:
                counter += tokens
                parts.insert(0, part)
        out.insert(0, {**content, "parts": parts})
    return out, cut


def _head_and_tail(text: str, tool: str, max_chars: int) -> str:
    if js_length(text) <= max_chars:
        return text
    head, tail = math.floor(max_chars * 0.2), max_chars - math.floor(max_chars * 0.2)
    omitted = len(text) - head - tail
    return (
        f"Output too large. Showing first {head:,} and last {tail:,} characters. For full output see: "
        f".gemini/tmp/tool-outputs/{tool.lower()}.txt\n{text[:head]}\n\n... [{omitted:,} characters omitted] ...\n\n{text[-tail:]}"
    )


def _with_outputs(message: Message, history: Sequence[dict], index: int) -> Message:
    """`message` with its tool results' contents as they are in `history[index]` (masked or cut)."""
    outputs = iter(p["functionResponse"]["response"]["output"] for p in history[index]["parts"] if "functionResponse" in p)
    return replace(
        message, parts=tuple(replace(p, content=next(outputs)) if isinstance(p, ToolResultPart) else p for p in message.parts)
    )


@dataclass(frozen=True)
class GeminiMasking:
    """Gemini CLI's tool-output masking: past the newest 50,000 tool tokens, once 30,000 more are
    prunable, every older tool output is replaced by a head-and-tail preview in <tool_output_masked>."""

    name: ClassVar[str] = "gemini-masking"
    source: ClassVar[str] = "google-gemini/gemini-cli packages/core/src/context/toolOutputMaskingService.ts"

    protection_tokens: int = setting(50_000, "the newest tool tokens never masked (DEFAULT_TOOL_PROTECTION_THRESHOLD)")
    min_prunable_tokens: int = setting(
        30_000, "mask only when this many tokens are prunable (DEFAULT_MIN_PRUNABLE_TOKENS_THRESHOLD)"
    )

    def compact(self, context: Context, request: CompactionRequest) -> CompactionResult:
        messages = context.messages
        history, where = contents(messages[: pending_start(messages)])
        found = masked_outputs(history, self.protection_tokens, self.min_prunable_tokens)
        if not found:
            return CompactionResult(context, 0, note="nothing to mask")
        for i, j in found:
            history[i]["parts"][j] = masked_part(history[i]["parts"][j])
        new = list(messages)
        for i in sorted({i for i, _ in found}):
            new[where[i]] = _with_outputs(messages[where[i]], history, i)
        return CompactionResult(
            replace(context, messages=tuple(new), known_usage=None), 0, note=f"masked {len(found)} tool outputs"
        )


@dataclass(frozen=True)
class GeminiCompression:
    """Gemini CLI's chat compression: tool outputs past the newest 50,000 tokens cut, the history split
    at the first user message after 70% of its characters, the older part replaced by a
    <state_snapshot> (user) and the model's acknowledgement, the newer part kept."""

    name: ClassVar[str] = "gemini-compression"
    source: ClassVar[str] = "google-gemini/gemini-cli packages/core/src/context/chatCompressionService.ts"

    preserve_fraction: float = setting(0.3, "the share of the history's characters kept (COMPRESSION_PRESERVE_THRESHOLD)")
    response_budget: int = setting(
        50_000, "function-response tokens kept whole, newest first (COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET)"
    )
    template: str = setting("gemini_cli.j2", "the summary prompt (Gemini's getCompressionPrompt, snippets.ts)")
    summarizer: str = setting("extractive", "'extractive' (no LLM) or 'llm' (the run's summarizer)")
    max_summary_tokens: int = setting(8_192, "the summary's output budget (Gemini sets none)")

    def compact(self, context: Context, request: CompactionRequest) -> CompactionResult:
        messages = context.messages
        pending = pending_start(messages)
        head = pinned_head(messages, request.pin_task)
        history, where = contents(messages[:pending])
        last_prompt = context.known_usage[1] if context.known_usage else request.count_tokens(messages[:pending])
        max_chars = min(4 * (request.window - last_prompt), 40_000)  # config.ts:3794-3800 getTruncateToolOutputThreshold
        cut_history, _ = truncated_to_budget(history, max_chars, self.response_budget)
        split = split_point(cut_history, 1 - self.preserve_fraction)
        if split == 0:
            return CompactionResult(context, 0, note="no user message to split at")
        first_kept = where[split] if split < len(where) else pending
        span = [m for m in messages[head:first_kept] if m.role != "system"]
        previous = next((summary_text(m) for m in span if is_summary(m)), None)
        text, calls, prompt_hash = self._summary(span, previous, request)
        kept = [_with_outputs(messages[where[i]], cut_history, i) for i in range(split, len(where))]
        pinned = pinned_in(messages, head, first_kept, request.pin_task)
        ack = Message(role="assistant", parts=(TextPart(ACK),))
        new = (*messages[:head], *pinned, summary_message(text, verbatim=True), ack, *kept, *messages[pending:])
        new_history = new[: len(new) - (len(messages) - pending)]
        new_tokens = estimate([p for c in contents(new_history)[0] for p in c["parts"]])
        if new_tokens > last_prompt:  # compression.ts:462-471: an inflated count is a failed compression
            raise CompactionFailed(f"the compressed history ({new_tokens:,}) is larger than the last prompt ({last_prompt:,})")
        compacted = replace(context, messages=new, summary=text, known_usage=None, kept_tail=len(kept))
        removed = len(span) - len(pinned)
        return CompactionResult(compacted, removed, calls, prompt_hash, f"compressed {removed} messages, kept {len(kept)}")

    def _summary(self, span: Sequence[Message], previous: str | None, request: CompactionRequest) -> tuple[str, tuple, str]:
        summarizer = summarizer_for(self.summarizer, request)
        response = summarizer.summarize(
            summary_request(span, self.template, summarizer, self.max_summary_tokens, previous_summary=previous)
        )
        calls = (response.usage,) if response.usage is not None else ()
        return response.text.strip(), calls, template_hash(self.template)
