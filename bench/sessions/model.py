"""The canonical session model that every importer produces and every later stage reads.

A `Session` is an ordered list of `Message`s, each made of typed parts. Assistant messages
that came from a real LLM call carry that call's `LLMCall` with the provider's usage exactly as
recorded. Compactions that really happened in the source are kept as `CompactionMarker`s beside
the messages (not inside them), so a replay sees the full uncompacted history and still knows
where, and with what summary, the production agent compacted.

Everything here is a frozen dataclass: data flows one way and nothing downstream mutates it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal, TypeGuard

Role = Literal["system", "user", "assistant", "tool"]
ROLES: tuple[str, ...] = ("system", "user", "assistant", "tool")


def is_role(value: object) -> TypeGuard[Role]:
    """True when `value` is one of the canonical roles (what an importer checks a source's role against)."""
    return isinstance(value, str) and value in ROLES


@dataclass(frozen=True)
class TextPart:
    """Text of a message, as recorded."""

    text: str
    kind: Literal["text"] = "text"


@dataclass(frozen=True)
class ThinkingPart:
    """Model reasoning as recorded. Providers differ on whether it is resent in later prompts."""

    text: str
    kind: Literal["thinking"] = "thinking"


@dataclass(frozen=True)
class ToolCallPart:
    """A tool call. `arguments` is the JSON text of the arguments, as a provider would send it.

    `from_text`: the call was read from the message's own text (mini-swe-agent v1 writes its action
    as a ```bash block in the reply), not sent as a separate tool call. The text already holds it,
    so it adds nothing to a prompt: token counts and serializations of the message skip it, while
    strategies still see which output answers which action.
    """

    id: str
    name: str
    arguments: str
    kind: Literal["tool_call"] = "tool_call"
    from_text: bool = False

    def parsed_arguments(self) -> object:
        """The arguments as Python data, or the raw text when it is not valid JSON."""
        return parsed_arguments(self.arguments)


def parsed_arguments(arguments: str) -> object:
    """Tool-call arguments (JSON text) as Python data, or the raw text when it is not valid JSON."""
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments


@dataclass(frozen=True)
class ToolResultPart:
    """The output of a tool call (`call_id` names the call), as the agent sent it back."""

    call_id: str
    content: str
    is_error: bool = False
    kind: Literal["tool_result"] = "tool_result"


@dataclass(frozen=True)
class ImagePart:
    """An image or attachment, kept as a placeholder: its bytes are not stored.

    `byte_size` is the size of the decoded data; `width`/`height` are read from the image header
    when the format allows, so an estimator can apply a provider's image-token formula.
    """

    media_type: str
    byte_size: int
    width: int | None = None
    height: int | None = None
    kind: Literal["image"] = "image"


Part = TextPart | ThinkingPart | ToolCallPart | ToolResultPart | ImagePart
PART_TYPES: dict[str, type] = {
    "text": TextPart,
    "thinking": ThinkingPart,
    "tool_call": ToolCallPart,
    "tool_result": ToolResultPart,
    "image": ImagePart,
}


@dataclass(frozen=True)
class LLMCall:
    """One LLM call and its usage, exactly as the provider reported it.

    The token fields follow Anthropic's split, which is the finest one: `input_tokens` is the
    uncached input, `cache_read_tokens` and `cache_write_tokens` the cached parts. Importers of
    OpenAI-style usage (where `prompt_tokens` already includes cached tokens) subtract the cached
    part so that `prompt_tokens` below means the same thing for every source.
    """

    model: str
    input_tokens: int
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    request_id: str | None = None
    # When the call was made, in seconds since the epoch (UTC), as the log timestamps its record; None
    # where the log records no time. The replay reads the prompt cache's lifetime from it.
    timestamp: float | None = None
    # The part of `cache_write_tokens` written to live one hour instead of the default five minutes
    # (Anthropic's `cache_creation.ephemeral_1h_input_tokens`): the session's cache then lives an hour.
    cache_write_1h_tokens: int = 0

    @property
    def prompt_tokens(self) -> int:
        """The whole prompt of this call: what a context-window limit applies to."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens


@dataclass(frozen=True)
class Message:
    """One message. `role` is what it is to a compaction strategy; `sent_as` is the role the source
    sent it under when that differs (a mini-swe-agent v1 observation is a `tool` result here, but
    the model received it as a `user` message whose text is the result's content).

    `instruction`: a system or user message that instructs the agent rather than continuing the
    conversation (a Codex developer message, AGENTS.md, the environment context): strategies keep
    it as they keep the system prompt, wherever it sits.
    """

    role: Role
    parts: tuple[Part, ...]
    source_id: str | None = None
    line: int | None = None
    call: LLMCall | None = None
    sent_as: Role | None = None
    instruction: bool = False

    def text(self) -> str:
        """All text-like content of the message joined by newlines (for search and display)."""
        chunks: list[str] = []
        for part in self.parts:
            if isinstance(part, (TextPart, ThinkingPart)):
                chunks.append(part.text)
            elif isinstance(part, ToolCallPart) and not part.from_text:
                chunks.append(f"{part.name}({part.arguments})")
            elif isinstance(part, ToolResultPart):
                chunks.append(part.content)
        return "\n".join(chunks)


@dataclass(frozen=True)
class CompactionMarker:
    """A compaction that really happened in the source.

    `at_message` is the index in `Session.messages` of the first message recorded after the
    compaction: the production agent replaced messages before it with `summary`. `kept`: the indices
    of the messages before `at_message` it kept verbatim beside the summary (pi keeps a recent tail;
    Codex keeps its instructions and the newest user messages), in order. When `kept` names any of
    the leading system messages, only those stay (Codex's remote compaction: its replacement
    history, the summary here, holds the developer message it resends). `summary_tokens`: the
    provider tokens of summary content the file holds unreadable (Codex's encrypted `compaction`
    item, by Codex's own estimate), which `summary` stands in for with a placeholder. `usage`: the
    summarizer call's own usage as the log records it (Anthropic's server-side compaction bills it
    in the response's `usage.iterations`), or None where the log does not record it (pi's
    compaction entry, Claude Code's `compact_boundary` and Codex's rollout record none).
    """

    at_message: int
    trigger: Literal["auto", "manual", "unknown"]
    pre_tokens: int | None
    summary: str
    line: int | None = None
    kept: tuple[int, ...] = ()
    summary_tokens: int | None = None
    usage: LLMCall | None = None


@dataclass(frozen=True)
class SkippedRecord:
    """A damaged record left out in lenient mode: where it was and what was wrong with it."""

    line: int | None
    reason: str


@dataclass(frozen=True)
class Session:
    """One recorded agent session in the canonical form every importer produces.

    `messages` is the full uncompacted history in order, each assistant message carrying the LLM
    call that produced it; `compactions` are the compactions the production agent really made,
    beside the messages. What the importer skipped (damaged records) and ignored (records outside
    the conversation by design) is counted here, so nothing is lost silently.
    """

    id: str
    source_format: str
    source_path: str
    messages: tuple[Message, ...]
    models: tuple[str, ...] = ()
    context_window: int | None = None
    compactions: tuple[CompactionMarker, ...] = ()
    skipped: tuple[SkippedRecord, ...] = ()
    # Records that are not part of the conversation by design (e.g. Claude Code's
    # file-history snapshots), counted per kind so that nothing disappears uncounted.
    ignored: tuple[tuple[str, int], ...] = ()
    is_subagent: bool = False
    # The agent's own version as the source records it (Claude Code writes its `version` on every
    # line: the first one is kept), or None. Engines change rules between versions (the
    # claude-code preset's trigger follows it).
    agent_version: str | None = None

    @property
    def calls(self) -> list[LLMCall]:
        """The recorded LLM calls, in order."""
        return [m.call for m in self.messages if m.call is not None]

    @property
    def max_prompt_tokens(self) -> int | None:
        """The largest recorded prompt, or None without calls."""
        sizes = [c.prompt_tokens for c in self.calls]
        return max(sizes) if sizes else None


def part_to_dict(part: Part) -> dict:
    """A part as plain data (its `kind` says which part it is)."""
    return {k: v for k, v in part.__dict__.items()}


def part_from_dict(data: dict) -> Part:
    """The part `part_to_dict` wrote; an unknown kind is a ValueError naming the kinds known."""
    kind = data.get("kind")
    if kind not in PART_TYPES:
        raise ValueError(f"unknown part kind {kind!r}; expected one of {sorted(PART_TYPES)}")
    return PART_TYPES[kind](**data)
