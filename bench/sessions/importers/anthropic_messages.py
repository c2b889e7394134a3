"""Anthropic Messages API conversations saved as one JSON document.

The accepted shape is the request body of `POST /v1/messages` plus the usage recorded per call:

    {"model": "claude-sonnet-4-5",          # optional; the model of every call
     "system": "..." | [{"type": "text", "text": "..."}],   # optional
     "messages": [{"role": "user" | "assistant", "content": "..." | [blocks]}],
     "usage": [{...}, null, {...}]}         # optional; one entry per assistant message, in order

or a `usage` object on an assistant message itself (it wins over the list); an assistant
message may also carry its own `model` and `cost`. Usage is Anthropic's: `input_tokens` is the
uncached input, plus `cache_read_input_tokens`, `cache_creation_input_tokens`, `output_tokens`.
Detection against openai-chat is described in `json_chat`.

Blocks: text; thinking (its `thinking` text; the signature is not kept); redacted_thinking (an
opaque "[redacted thinking]" ThinkingPart, as the claude-code importer does); tool_use,
server_tool_use, mcp_tool_use (-> ToolCallPart with arguments = json.dumps(input)); image and
document (-> ImagePart placeholders, measured when base64; text documents become text);
search_result (-> its text). Anthropic puts `tool_result` blocks inside user messages: each
becomes its own role "tool" message, in order, and the user message's other blocks follow in a
"user" message after them. Server-side tool results (web_search_tool_result and the other
`*_tool_result` blocks) are produced inside the assistant turn, so they stay there as
ToolResultParts right after their server_tool_use. Block types this importer does not know are
kept as a text placeholder "[<type> block not imported]" rather than dropped. A role "system"
message inside `messages` (accepted by recent Anthropic SDKs) becomes a system message.

Server-side compaction (`compact_20260112`, https://platform.claude.com/docs/en/build-with-claude/compaction):
the API summarizes the conversation inside a request, puts the summary in a `compaction` block at
the start of the assistant response and drops every block before it from later prompts. Such a
message becomes a real compaction (`CompactionMarker`) right before it, whose summary is the last
compaction block's `content` (the one that holds the final state; the blocks after it stay the
message's parts). The docs bill the summarizing step apart: "The top-level `input_tokens` and
`output_tokens` do not include compaction iteration usage—they reflect the sum of all
non-compaction iterations. To calculate total tokens consumed and billed for a request, sum across
all entries in the `usage.iterations` array." So where `usage.iterations` holds a `compaction`
iteration, the compaction iterations are the marker's `usage` (the summarizer call, its input the
context it summarized: the marker's `pre_tokens`) and the call of the message is the sum of the
other iterations, not the top-level counts (the documented example's top level says 45,000 input
tokens beside a 23,000-token `message` iteration; the iterations are what is billed). A response
paused after compaction (`pause_after_compaction`) holds only the compaction: its message has no
call of its own. Its trigger is "auto" when the document's `context_management.edits` names
`compact_20260112` (a threshold), else "unknown".
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Literal

from compactlab.sessions.importers.importer import FormatFacts, image_part
from compactlab.sessions.importers.json_chat import (
    ANTHROPIC,
    ChatConverter,
    ChatImporter,
    Classification,
    cost_of,
    ensure_parts,
    json_kind,
    placeholder,
    token_counts,
    url_image,
)
from compactlab.sessions.model import (
    CompactionMarker,
    ImagePart,
    LLMCall,
    Message,
    Part,
    Session,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    is_role,
)

ROLES = ("user", "assistant", "system")
TOOL_USES = ("tool_use", "server_tool_use", "mcp_tool_use")
USAGE_FIELDS = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "output_tokens")
COMPACTION = "compaction"  # the block and the usage iteration of server-side compaction


class AnthropicMessagesImporter(ChatImporter):
    name = ANTHROPIC
    description = "Anthropic Messages request JSON ({model, system, messages, usage}) with recorded per-call usage"
    facts = FormatFacts(thinking_resent=False, anthropic_images=True)

    def why_not(self, found: Classification) -> str:
        if found.openai:
            return f"has OpenAI Chat Completions markers: {'; '.join(found.openai[:3])}"
        return (
            "no Anthropic markers (top-level `system`, tool_use/tool_result/thinking/image blocks, "
            "Anthropic usage fields); plain string conversations are read as openai-chat"
        )

    def converter(self) -> type[ChatConverter]:
        return _Converter


class _Converter(ChatConverter):
    roles = ROLES

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # The assistant messages whose response compacted, each with its marker (`at_message` set by `load`).
        self.compactions: list[tuple[Message, CompactionMarker]] = []

    def convert(self) -> list[Message]:
        out: list[Message] = []
        system = self.system(self.doc.top.get("system"))
        if system is not None:
            out.append(system)
        for i, where, raw in self.records():
            role = raw["role"]
            assert is_role(role)
            blocks = self.blocks(raw.get("content"), where)
            if blocks is None:
                continue
            if role == "user":
                out += self.split_user(blocks, where)
                continue
            summary = _summary(raw.get("content"))
            usage = self.usages.get(i)
            usage, summarizer = self.iterations(raw, usage, where, summary is not None)
            call = self.call(raw, usage, where) if usage is not None else None
            if summary is not None:  # only the blocks after the (last) compaction reach later prompts
                blocks = blocks[max(j for j, (kind, _) in enumerate(blocks) if kind == COMPACTION) + 1 :]
            message = Message(role=role, parts=ensure_parts([p for _, p in blocks]), source_id=where, call=call)
            out.append(message)
            if summary is not None:
                pre = summarizer.prompt_tokens if summarizer is not None else None
                self.compactions.append((message, CompactionMarker(0, self.trigger(), pre, summary, usage=summarizer)))
        return out

    def iterations(self, raw: dict, usage: object, where: str, compacted: bool) -> tuple[object, LLMCall | None]:
        """The usage of the message's own call and the summarizer's, from `usage.iterations` when it
        holds a compaction iteration (see the module's docstring); else `usage` as it is and None."""
        listed = usage.get("iterations") if isinstance(usage, dict) else None
        if not isinstance(listed, list) or not any(isinstance(e, dict) and e.get("type") == COMPACTION for e in listed):
            return usage, None
        at = f"{where}.usage.iterations"
        if not compacted:
            self.report(f"{at} holds a compaction iteration but the message has no compaction block")
        own: list[dict[str, int]] = []
        summarizer: list[dict[str, int]] = []
        for j, entry in enumerate(listed):
            counts = token_counts(entry, USAGE_FIELDS, "input_tokens", f"{at}[{j}]", self.issues)
            if counts is None:
                return None, None  # damaged (reported): neither call's usage is known
            (summarizer if entry.get("type") == COMPACTION else own).append(counts)
        summed = _summed(summarizer)
        call = LLMCall(
            model=self.model_of(raw),
            input_tokens=summed["input_tokens"],
            cache_read_tokens=summed["cache_read_input_tokens"],
            cache_write_tokens=summed["cache_creation_input_tokens"],
            output_tokens=summed["output_tokens"],
        )
        # Paused after compaction: the response is the compaction only, and no call of its own.
        return (_summed(own) if own else None), call

    def trigger(self) -> Literal["auto", "unknown"]:
        edits = self.doc.top.get("context_management")
        edits = edits.get("edits") if isinstance(edits, dict) else None
        threshold = isinstance(edits, list) and any(isinstance(e, dict) and e.get("type") == "compact_20260112" for e in edits)
        return "auto" if threshold else "unknown"

    def finished(self, session: Session) -> Session:
        # Each compaction sits right before the message whose response holds it (found by identity:
        # the tool pairing check may have left messages out before it).
        at = {id(message): index for index, message in enumerate(session.messages)}
        found = self.compactions
        return replace(
            session, compactions=tuple(replace(m, at_message=at[id(message)]) for message, m in found if id(message) in at)
        )

    def system(self, value: object) -> Message | None:
        if value is None:
            return None
        if not isinstance(value, (str, list)):
            self.report(f"top-level `system` must be a string or an array of text blocks, got {json_kind(value)}")
            return None
        blocks = self.blocks(value, "system")
        if blocks is None:
            return None
        return Message(role="system", parts=ensure_parts([p for _, p in blocks]), source_id="system")

    def split_user(self, blocks: list[tuple[str, Part]], where: str) -> list[Message]:
        # Tool results first, each as its own tool message (images inside a result follow it
        # in that message), then whatever else the user turn held.
        out: list[Message] = []
        rest: list[Part] = []
        for kind, part in blocks:
            if kind == "tool_result" and isinstance(part, ToolResultPart):
                out.append(Message(role="tool", parts=(part,), source_id=where))
            elif kind == "tool_result":
                out[-1] = Message(role="tool", parts=(*out[-1].parts, part), source_id=where)
            else:
                rest.append(part)
        if rest or not out:
            out.append(Message(role="user", parts=ensure_parts(rest), source_id=where))
        return out

    def blocks(self, content: object, where: str) -> list[tuple[str, Part]] | None:
        """(block type, part) pairs of `content`; None (after reporting) when content has a wrong type."""
        if isinstance(content, str):
            return [("text", TextPart(text=content))]
        if not isinstance(content, list):
            self.report(f"{where}.content must be a string or an array of content blocks, got {json_kind(content)}")
            return None
        out: list[tuple[str, Part]] = []
        for j, block in enumerate(content):
            at = f"{where}.content[{j}]" if where != "system" else f"system[{j}]"
            if not isinstance(block, dict) or not isinstance(block.get("type"), str):
                self.report(f"{at} must be an object with a string `type`, got {json_kind(block)}")
                continue
            out += [(block["type"], part) for part in self.block(block, at)]
        return out

    def block(self, block: dict, at: str) -> list[Part]:
        kind = block["type"]
        if kind in ("text", "thinking"):
            text = block.get(kind)
            if not isinstance(text, str):
                self.report(f"{at} ({kind}) has no string `{kind}`")
                return []
            return [TextPart(text=text) if kind == "text" else ThinkingPart(text=text)]
        if kind == "redacted_thinking":
            return [ThinkingPart(text="[redacted thinking]")]
        if kind in TOOL_USES:
            if not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str):
                self.report(f"{at} ({kind}) has no string `id` and `name`")
                return []
            if not isinstance(block.get("input", {}), dict):
                self.report(f"{at} ({kind}) `input` must be an object, got {json_kind(block['input'])}")
                return []
            arguments = json.dumps(block.get("input", {}), ensure_ascii=False)
            return [ToolCallPart(id=block["id"], name=block["name"], arguments=arguments)]
        if kind == "tool_result" or kind.endswith("_tool_result"):
            return self.tool_result(block, at)
        if kind == "image":
            return self.image(block.get("source"), at)
        if kind == "document":
            return self.document(block.get("source"), at)
        if kind == "search_result":
            return [TextPart(text=_texts(block.get("content")))]
        if kind == COMPACTION:
            if not isinstance(block.get("content"), str):
                self.report(f"{at} (compaction) has no string `content`")
            return [TextPart(text="")]  # the summary goes to the marker (`convert`); this marks where it was
        return [placeholder(f"{kind} block")]

    def tool_result(self, block: dict, at: str) -> list[Part]:
        call_id = block.get("tool_use_id")
        if not isinstance(call_id, str):
            self.report(f"{at} ({block['type']}) has no string `tool_use_id`")
            return []
        content = block.get("content", "")
        extra: list[Part] = []
        if block["type"] != "tool_result":
            # Server tool results hold structured data (search hits, exit codes); keep it as JSON.
            text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        elif isinstance(content, str):
            text = content
        elif isinstance(content, list):
            inner = self.blocks(content, at) or []
            text = "\n".join(p.text for _, p in inner if isinstance(p, TextPart))
            extra = [p for _, p in inner if not isinstance(p, TextPart)]
        else:
            self.report(f"{at}.content must be a string or an array of blocks, got {json_kind(content)}")
            return []
        return [ToolResultPart(call_id=call_id, content=text, is_error=block.get("is_error") is True), *extra]

    def image(self, source: object, at: str) -> list[Part]:
        if not isinstance(source, dict):
            self.report(f"{at} (image) has no `source` object")
            return []
        if source.get("type") == "base64":
            return [image_part(str(source.get("media_type") or "image/*"), source.get("data"))]
        if source.get("type") == "url" and isinstance(source.get("url"), str):
            return [url_image(source["url"])]
        return [ImagePart(media_type="image/*", byte_size=0)]  # a Files API id: not fetched

    def document(self, source: object, at: str) -> list[Part]:
        if not isinstance(source, dict):
            self.report(f"{at} (document) has no `source` object")
            return []
        kind = source.get("type")
        if kind == "base64":
            return [image_part(str(source.get("media_type") or "application/pdf"), source.get("data"))]
        if kind == "text" and isinstance(source.get("data"), str):
            return [TextPart(text=source["data"])]  # plain-text documents reach the model as text
        if kind == "content":
            inner = self.blocks(source.get("content"), f"{at}.source")
            return [p for _, p in inner or []]
        if kind == "url" and isinstance(source.get("url"), str):
            return [url_image(source["url"], "application/pdf")]
        return [ImagePart(media_type="application/octet-stream", byte_size=0)]  # a Files API id

    def call(self, raw: dict, usage: object, where: str) -> LLMCall | None:
        at = f"{where}.usage"
        counts = token_counts(usage, USAGE_FIELDS, "input_tokens", at, self.issues)
        if counts is None:
            return None
        assert isinstance(usage, dict)
        return LLMCall(
            model=self.model_of(raw),
            input_tokens=counts["input_tokens"],
            cache_read_tokens=counts["cache_read_input_tokens"],
            cache_write_tokens=counts["cache_creation_input_tokens"],
            output_tokens=counts["output_tokens"],
            cost_usd=cost_of(usage, raw, at, self.issues),
        )


def _summary(content: object) -> str | None:
    """The last compaction block's summary in an assistant message's content, or None without one."""
    found = (
        [b["content"] for b in content if isinstance(b, dict) and b.get("type") == COMPACTION]
        if isinstance(content, list)
        else []
    )
    return next((text for text in reversed(found) if isinstance(text, str)), None)


def _summed(counts: list[dict[str, int]]) -> dict[str, int]:
    return {name: sum(c[name] for c in counts) for name in USAGE_FIELDS}


def _texts(content: object) -> str:
    items = content if isinstance(content, list) else []
    return "\n".join(b["text"] for b in items if isinstance(b, dict) and isinstance(b.get("text"), str))
