"""Cline SDK session files (`~/.cline/data/sessions/<id>/<id>.messages.json`).

Facts of the format this importer relies on (cline/cline `sdk/packages/shared/src/llms/messages.ts`,
`sdk/packages/core/src/extensions/context/{compaction-shared,basic-compaction}.ts` and
`sdk/packages/llms/src/providers/ai-sdk.ts` at commit 21cb8d25, and the real files in
datasets/cline-sdk-sessions):
- One JSON document `{version, sessionId, messages, agent, updated_at, system_prompt}`; each message
  `{id, role: user|assistant, content: string|[blocks], ts (epoch ms), modelInfo, metrics, metadata}`.
  Blocks are Anthropic-like: `text`, `thinking`, `redacted_thinking`, `tool_use` (`input` an
  object), `tool_result` (`tool_use_id`, `content` a string or a list), `file` (`path`, `content`:
  a file the user attached, sent as text), `image` (`data`, `mediaType`).
- An assistant message's `metrics` `{inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens,
  cost}` is its call's usage. `inputTokens` is the whole prompt: Cline prices
  `inputTokens - cacheReadTokens - cacheWriteTokens` as uncached input (`calculateCostFromPricing`),
  so the uncached input here is that difference. A message without `metrics` made no call the file
  records (basic compaction strips them: "they no longer add up").
- Cline rewrites the file when it compacts: the messages before the compaction are gone.
  Agentic compaction puts a user message first whose text is `Context summary:\n\n<summary>` and
  whose `metadata` is `{kind: "compaction_summary", summary, details: {readFiles, modifiedFiles},
  tokensBefore, generatedAt}`; the messages it kept follow. Basic compaction rewrites the user
  messages in place (a `<SYSTEM_NOTICE>` block of the dropped work) and marks the first one
  `{kind: "compaction", reason, messagesRemoved, usageBefore}` and each kept reply
  `{compaction: "preserved"}`. Either becomes a `CompactionMarker` after the messages recorded
  before it (those older than `generatedAt`; the preserved replies), which it kept verbatim
  (`kept`). The summary message is the marker's summary, not a message. `tokensBefore` is Cline's
  estimate of the context it summarized (`pre_tokens`); basic compaction records no context size.
"""

from __future__ import annotations

import json

from compactlab.sessions import model
from compactlab.sessions.importers import importer as common
from compactlab.sessions.importers.conversation import Conversation, model_name
from compactlab.sessions.model import Message, TextPart, ThinkingPart, ToolCallPart, ToolResultPart
from compactlab.sessions.source import RecordIssues, SessionError, Source

SUMMARY_KIND = "compaction_summary"
BASIC_KIND = "compaction"
METRICS = (
    ("inputTokens", "prompt"),
    ("cacheReadTokens", "cache_read_tokens"),
    ("cacheWriteTokens", "cache_write_tokens"),
    ("outputTokens", "output_tokens"),
)


def is_cline_document(data: object) -> bool:
    """A Cline SDK session: an object with a `version`, a string `sessionId` and a `messages` list."""
    return (
        isinstance(data, dict)
        and "version" in data
        and isinstance(data.get("sessionId"), str)
        and isinstance(data.get("messages"), list)
    )


class ClineSessionImporter:
    name = "cline-session"
    description = "Cline SDK session JSON (~/.cline/data/sessions/<id>/<id>.messages.json)"
    # No engine preset: Cline rewrites the file when it compacts, so the history its compaction
    # summarized is not in the file, and no replay of it can say where the cline preset would fire.
    facts = common.FormatFacts(thinking_resent=False, anthropic_images=True)

    def match(self, source: Source) -> str | None:
        if not source.is_single_document():
            return "not a single JSON document"
        if is_cline_document(source.document):
            return None
        return "no top-level `version`, string `sessionId` and `messages` list (a Cline SDK session)"

    def load(self, source: Source, issues: RecordIssues) -> list[model.Session]:
        data = source.document
        if not is_cline_document(data):
            raise SessionError(source.path, None, "not a Cline SDK session: expected `version`, `sessionId`, `messages`")
        assert isinstance(data, dict)
        builder = _Builder(issues)
        for index, message in enumerate(data["messages"]):
            builder.add(index, message)
        builder.close_compaction()
        return [builder.build(source, data["sessionId"])]


class _Builder(Conversation):
    def __init__(self, issues: RecordIssues):
        super().__init__(issues)
        # The compaction being read: its marker's fields and when it was made (epoch ms), until
        # the first message recorded after it closes it.
        self.open: dict | None = None

    def add(self, index: int, raw: object) -> None:
        where = f"messages[{index}]"
        if not isinstance(raw, dict):
            self.issues.report(None, f"{where}: expected an object, got {type(raw).__name__}")
            return
        metadata: dict = raw["metadata"] if isinstance(raw.get("metadata"), dict) else {}
        if metadata.get("kind") == SUMMARY_KIND:
            self._summary(raw, metadata, where)
            return
        if metadata.get("kind") == BASIC_KIND:
            self._basic(metadata)
        elif self.open is not None and not self._before_compaction(raw, metadata):
            self.close_compaction()
        role = raw.get("role")
        source_id = raw["id"] if isinstance(raw.get("id"), str) else where
        if role == "user":
            self._user(raw.get("content"), source_id, where)
        elif role == "assistant":
            self._assistant(raw, source_id, where)
        else:
            self.issues.report(None, f"{where}: message of unknown role {role!r:.40}; expected user or assistant")

    def _before_compaction(self, raw: dict, metadata: dict) -> bool:
        """Whether a message after a compaction's first one was recorded before the compaction (kept by it)."""
        assert self.open is not None
        if self.open["made"] is not None:
            made = common.timestamp_seconds(raw.get("ts"))
            return made is not None and made <= self.open["made"]
        if metadata.get("compaction") == "preserved":
            return True
        # A basic compaction's rewritten user message opens the turn of a preserved reply.
        return raw.get("role") == "user"

    def _summary(self, raw: dict, metadata: dict, where: str) -> None:
        self.close_compaction()
        summary = _texts(raw.get("content"))
        if not summary:
            self.issues.report(None, f"{where}: compaction summary message without text")
            return
        before = metadata.get("tokensBefore")
        self.open = {
            "summary": summary,
            "pre_tokens": int(before) if common.is_count(before) and before > 0 else None,
            "trigger": "unknown",  # agentic compaction runs on the threshold or on /compact alike
            "made": common.timestamp_seconds(metadata.get("generatedAt")),
            "from": len(self.messages),
        }

    def _basic(self, metadata: dict) -> None:
        self.close_compaction()
        reason = metadata.get("reason")
        self.open = {
            # The dropped work is summarised inside the rewritten user messages, which stay messages.
            "summary": "",
            "pre_tokens": None,
            "trigger": "manual" if reason == "manual_compaction" else "auto" if isinstance(reason, str) else "unknown",
            "made": None,
            "from": len(self.messages),
        }

    def close_compaction(self) -> None:
        if self.open is None:
            return
        at = len(self.messages)
        self.compactions.append(
            model.CompactionMarker(
                at_message=at,
                trigger=self.open["trigger"],
                pre_tokens=self.open["pre_tokens"],
                summary=self.open["summary"],
                kept=tuple(range(self.open["from"], at)),
            )
        )
        self.open = None

    def _user(self, content: object, source_id: str, where: str) -> None:
        blocks = self._blocks(content, where)
        if blocks is None:
            return
        # Tool results go back as their own messages, in order, before the user's other blocks.
        results = [p for p in blocks if isinstance(p, ToolResultPart)]
        others = [p for p in blocks if not isinstance(p, ToolResultPart)]
        for number, result in enumerate(results):
            self.append(Message("tool", (result,), f"{source_id}#{number}" if number else source_id))
        if others:
            self.append(Message("user", tuple(others), source_id))
        if not blocks:
            self.ignored["user message with no content"] += 1

    def _assistant(self, raw: dict, source_id: str, where: str) -> None:
        parts = self._blocks(raw.get("content"), where)
        if parts is None:
            return
        call = self._call(raw, where)
        if not parts:
            self.ignored["assistant message with no content: no reply"] += 1
            return
        self.append(Message("assistant", tuple(parts), source_id, call=call))

    def _blocks(self, content: object, where: str) -> list[model.Part] | None:
        if isinstance(content, str):
            return [TextPart(content)] if content else []
        if not isinstance(content, list):
            self.issues.report(None, f"{where}: `content` must be a string or a list, got {type(content).__name__}")
            return None
        parts: list[model.Part] = []
        for number, block in enumerate(content):
            part = self._block(block)
            if part is None:
                self.issues.report(None, f"{where}.content[{number}]: unknown content block {block!r:.60}")
                return None
            parts.append(part)
        return parts

    def _block(self, block: object) -> model.Part | None:
        if not isinstance(block, dict):
            return None
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            return TextPart(block["text"])
        if kind == "thinking" and isinstance(block.get("thinking"), str):
            return ThinkingPart(block["thinking"])
        if kind == "redacted_thinking":
            return ThinkingPart("[redacted thinking]")
        if kind == "tool_use" and isinstance(block.get("id"), str) and isinstance(block.get("name"), str):
            return ToolCallPart(block["id"], block["name"], json.dumps(block.get("input", {}), ensure_ascii=False))
        if kind == "tool_result" and isinstance(block.get("tool_use_id"), str):
            return ToolResultPart(block["tool_use_id"], _texts(block.get("content")), is_error=bool(block.get("is_error")))
        if kind == "file" and isinstance(block.get("path"), str) and isinstance(block.get("content"), str):
            # Cline's providers send an attached file as text naming its path.
            return TextPart(f'<file_content path="{block["path"]}">\n{block["content"]}\n</file_content>')
        if kind == "image":
            return common.image_part(str(block.get("mediaType") or ""), block.get("data"))
        return None

    def _call(self, raw: dict, where: str) -> model.LLMCall | None:
        metrics = raw.get("metrics")
        if metrics is None:
            return None
        if not isinstance(metrics, dict):
            self.issues.report(None, f"{where}: `metrics` must be an object of token counts, got {metrics!r:.60}")
            return None
        counts = common.call_counts(metrics, METRICS, "metrics", lambda problem: self.issues.report(None, f"{where}: {problem}"))
        if counts is None:
            return None
        uncached = counts.pop("prompt") - counts["cache_read_tokens"] - counts["cache_write_tokens"]
        if uncached < 0:
            self.issues.report(
                None, f"{where}: `metrics.inputTokens` is less than the cached tokens it holds (cacheRead + cacheWrite)"
            )
            return None
        if uncached + counts["cache_read_tokens"] + counts["cache_write_tokens"] == 0:
            return None  # a request that failed before the provider counted a prompt
        cost = metrics.get("cost")
        if self.bad_cost(cost, f"{where}: `metrics.cost`"):
            return None
        info = raw.get("modelInfo")
        return model.LLMCall(
            model=model_name(info.get("id") if isinstance(info, dict) else None),
            input_tokens=uncached,
            cache_read_tokens=counts["cache_read_tokens"],
            cache_write_tokens=counts["cache_write_tokens"],
            output_tokens=counts["output_tokens"],
            cost_usd=float(cost) if cost is not None else None,
            timestamp=common.timestamp_seconds(raw.get("ts")),
        )

    def build(self, source: Source, id: str) -> model.Session:
        return self.session(id, ClineSessionImporter.name, str(source.path))


def _texts(content: object) -> str:
    """The text of a block's content: a string, or a list of text blocks and other items (Cline's
    tools return `{query, result}` objects, sent as their JSON)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return "" if content is None else json.dumps(content, ensure_ascii=False)
    chunks = []
    for item in content:
        if isinstance(item, dict) and item.get("type") == "text" and isinstance(item.get("text"), str):
            chunks.append(item["text"])
        else:
            chunks.append(json.dumps(item, ensure_ascii=False))
    return "\n".join(chunks)
