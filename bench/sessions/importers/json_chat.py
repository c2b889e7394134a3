"""What the two whole-file chat-API importers (openai-chat, anthropic-messages) share.

Both formats are one JSON document holding a `messages` array, so both need the same reading,
the same alignment of recorded usage with assistant messages, and one detection rule that sends
every file to at most one of them. The rule lives here, in one place, so the two `match`
methods cannot disagree:

- Anthropic markers: a top-level `system`; a content block of a type only Anthropic has
  (`tool_use`, `tool_result`, `thinking`, `redacted_thinking`, `image`, `document`, server-tool
  blocks, ...); usage with Anthropic's field names (`input_tokens`, `cache_read_input_tokens`, ...).
- OpenAI markers: a message with role `tool`, `developer` or `function`; a message with
  `tool_calls`, `function_call`, `tool_call_id` or `reasoning_content`; a content part of type
  `image_url`, `input_audio`, `file` or `refusal`; usage with `prompt_tokens`/`completion_tokens`.
- Only Anthropic markers -> anthropic-messages. Only OpenAI markers -> openai-chat.
  No markers at all (plain string user/assistant/system messages) -> openai-chat.
  Markers of both -> neither: the file is mixed, and guessing would misread its usage.
- A role `system` message inside `messages` is neutral: Chat Completions uses it, and recent
  Anthropic SDKs accept it too.
- A file with a top-level `trajectory_format` (or `info.mini_version`) is an agent trajectory:
  mini-swe-agent writes OpenAI-style messages plus those keys, and has its own importer.
- A bare top-level JSON array is accepted as the `messages` array when every item is an object
  with a `role`: nothing else in this project's formats has that shape, and the same content
  rule then decides between the two APIs. Such a file has no model and no usage.
"""

from __future__ import annotations

import mimetypes
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

from compactlab.sessions.importers.importer import call_count_problem, check_tool_pairing, image_part, is_call_count, is_cost
from compactlab.sessions.model import ImagePart, Message, Part, Session, TextPart
from compactlab.sessions.source import RecordIssues, SessionError, Source

OPENAI = "openai-chat"
ANTHROPIC = "anthropic-messages"

# Content block types that only the Anthropic Messages API has (OpenAI's image part is `image_url`).
ANTHROPIC_BLOCKS = frozenset(
    {
        "tool_use",
        "tool_result",
        "thinking",
        "redacted_thinking",
        "image",
        "document",
        "search_result",
        "compaction",  # server-side compaction's summary block (compact_20260112)
        "server_tool_use",
        "mcp_tool_use",
        "mcp_tool_result",
        "container_upload",
        "web_search_tool_result",
        "web_fetch_tool_result",
        "code_execution_tool_result",
        "bash_code_execution_tool_result",
        "text_editor_code_execution_tool_result",
        "tool_search_tool_result",
    }
)
OPENAI_PARTS = frozenset({"image_url", "input_audio", "file", "refusal"})
OPENAI_ROLES = frozenset({"tool", "developer", "function"})
OPENAI_MESSAGE_KEYS = ("tool_calls", "function_call", "tool_call_id", "reasoning_content")
ANTHROPIC_USAGE_KEYS = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
OPENAI_USAGE_KEYS = ("prompt_tokens", "completion_tokens")


@dataclass
class ChatDocument:
    """The parts of the file both importers read: the top-level object and its messages."""

    top: dict
    messages: list
    bare_array: bool = False


@dataclass
class Classification:
    flavor: str | None  # OPENAI, ANTHROPIC, or None when the file is neither
    reason: str | None = None  # why it is neither
    anthropic: list[str] = field(default_factory=list)
    openai: list[str] = field(default_factory=list)


def read_chat_document(source: Source) -> ChatDocument | str:
    """The document when it has the shape of a saved chat request, else why not (for `match`)."""
    try:
        data = source.document
    except SessionError as exc:
        where = f" at line {exc.line}" if exc.line is not None else ""
        return f"not a single JSON document ({exc.what}{where})"
    if isinstance(data, list):
        if not data:
            return "the file is an empty JSON array"
        if not all(isinstance(m, dict) and "role" in m for m in data):
            return "a top-level JSON array whose items are not all chat messages with a `role`"
        return _with_content(ChatDocument(top={}, messages=data, bare_array=True))
    if not isinstance(data, dict):
        return f"the top-level JSON value is a {json_kind(data)}, not an object with a `messages` array"
    if "messages" not in data:
        keys = ", ".join(f"`{k}`" for k in list(data)[:6]) or "none"
        hint = " (a chat completion response? save the request `messages` instead)" if "choices" in data else ""
        return f"no top-level `messages` array (top-level keys: {keys}){hint}"
    if not isinstance(data["messages"], list):
        return f"top-level `messages` is a {json_kind(data['messages'])}, not an array"
    info = data.get("info")
    if "trajectory_format" in data or (isinstance(info, dict) and "mini_version" in info):
        return "has `trajectory_format`/`info.mini_version`: an agent trajectory (mini-swe-agent), not a saved API request"
    if isinstance(data.get("sessionId"), str) and "version" in data:
        return "has `version` and `sessionId`: a Cline SDK session (cline-session), not a saved API request"
    return _with_content(ChatDocument(top=data, messages=data["messages"]))


def _with_content(doc: ChatDocument) -> ChatDocument | str:
    # Other JSON formats may have a `messages` array too; chat messages always carry `content`
    # (or, for an assistant turn that only calls tools, `tool_calls`/`function_call`).
    keys = ("content", "tool_calls", "function_call")
    if doc.messages and not any(isinstance(m, dict) and any(k in m for k in keys) for m in doc.messages):
        return "no item of `messages` has a `content` field"
    return doc


def classify(source: Source) -> Classification:
    """Apply the detection rule of this module's docstring."""
    doc = read_chat_document(source)
    if isinstance(doc, str):
        return Classification(flavor=None, reason=doc)
    found = Classification(flavor=None)
    if "system" in doc.top:
        _note(found.anthropic, "a top-level `system`")
    _note_usage(found, doc.top.get("usage"), "top-level `usage`")
    for i, message in enumerate(doc.messages):
        if not isinstance(message, dict):
            continue
        if isinstance(message.get("role"), str) and message["role"] in OPENAI_ROLES:
            _note(found.openai, f"role {message['role']!r} (messages[{i}])")
        for key in OPENAI_MESSAGE_KEYS:
            if key in message:
                _note(found.openai, f"`{key}` (messages[{i}])")
        _note_usage(found, message.get("usage"), f"messages[{i}].usage")
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind in ANTHROPIC_BLOCKS:
                _note(found.anthropic, f"block type {kind!r} (messages[{i}])")
            elif kind in OPENAI_PARTS:
                _note(found.openai, f"part type {kind!r} (messages[{i}])")
    if found.anthropic and found.openai:
        found.reason = (
            f"mixes Anthropic markers ({'; '.join(found.anthropic[:3])}) with OpenAI markers "
            f"({'; '.join(found.openai[:3])}); name the format explicitly"
        )
    elif found.anthropic:
        found.flavor = ANTHROPIC
    else:
        found.flavor = OPENAI  # OpenAI markers, or none at all: plain conversations go here
    return found


def _note(markers: list[str], what: str) -> None:
    # One example per kind of marker is enough for a reason shown to a user.
    kind = what.split(" (")[0]
    if not any(m.split(" (")[0] == kind for m in markers):
        markers.append(what)


def _note_usage(found: Classification, usage: object, where: str) -> None:
    for entry in usage if isinstance(usage, list) else [usage]:
        if isinstance(entry, dict):
            if any(k in entry for k in ANTHROPIC_USAGE_KEYS):
                _note(found.anthropic, f"Anthropic usage fields in {where}")
            if any(k in entry for k in OPENAI_USAGE_KEYS):
                _note(found.openai, f"OpenAI usage fields in {where}")


def load_chat_document(source: Source, issues: RecordIssues) -> ChatDocument:
    """The document for `load`: wrong shapes are reported (the format may have been forced)."""
    data = source.document  # invalid JSON raises SessionError with the line number
    if isinstance(data, list):
        return ChatDocument(top={}, messages=data, bare_array=True)
    if not isinstance(data, dict):
        issues.report(None, f"the top-level JSON value is a {json_kind(data)}, not an object with a `messages` array")
        return ChatDocument(top={}, messages=[])
    messages = data.get("messages")
    if not isinstance(messages, list):
        what = "missing" if messages is None else f"a {json_kind(messages)}"
        issues.report(None, f"top-level `messages` is {what}; expected an array of message objects")
        return ChatDocument(top=data, messages=[])
    return ChatDocument(top=data, messages=messages)


def top_model(doc: ChatDocument, issues: RecordIssues) -> str | None:
    model = doc.top.get("model")
    if model is not None and not isinstance(model, str):
        issues.report(None, f"top-level `model` must be a string, got {json_kind(model)}")
        return None
    return model


def assistant_usages(doc: ChatDocument, issues: RecordIssues) -> dict[int, object]:
    """The recorded usage of each assistant message, by index in `messages`.

    A top-level `usage` list gives one entry (an object, or null when nothing was recorded) per
    assistant message, in order. Alignment is by the raw array, so a damaged message skipped
    later does not shift the usage of the ones after it. A `usage` object on the message itself
    wins over the list entry. A list of the wrong length is not used at all: there is no way to
    know which call each entry belongs to, and misattributed usage is worse than none.
    """
    assistants = [i for i, m in enumerate(doc.messages) if isinstance(m, dict) and m.get("role") == "assistant"]
    found: dict[int, object] = {}
    listed = doc.top.get("usage")
    if isinstance(listed, list):
        if len(listed) == len(assistants):
            found.update((i, u) for i, u in zip(assistants, listed) if u is not None)
        else:
            issues.report(
                None,
                (
                    f"top-level `usage` has {len(listed)} entries but `messages` has {len(assistants)} assistant "
                    "messages; it must have one entry (or null) per assistant message, so it was not used"
                ),
            )
    elif listed is not None:
        issues.report(
            None,
            (
                f"top-level `usage` is a {json_kind(listed)}; expected an array with one usage object per "
                "assistant message (or put a `usage` object on each assistant message)"
            ),
        )
    for i in assistants:
        if doc.messages[i].get("usage") is not None:
            found[i] = doc.messages[i]["usage"]
    return found


class ChatConverter:
    """One chat document turned into messages, record by record (`convert`, per format). What both
    formats share: the document, its top-level model, each assistant message's usage, the records
    that are objects with a role of the format, and where problems go."""

    roles: tuple[str, ...] = ()  # the roles the format knows, in the order its errors name them

    def __init__(self, doc: ChatDocument, model: str | None, issues: RecordIssues):
        self.doc = doc
        self.model = model
        self.issues = issues
        self.usages = assistant_usages(doc, issues)

    def report(self, what: str) -> None:
        self.issues.report(None, what)  # a JSON document has no per-record line; `what` names the record

    def records(self) -> Iterator[tuple[int, str, dict]]:
        """(index, where, record) of each message record that is an object with a known role; the others are reported."""
        for i, raw in enumerate(self.doc.messages):
            where = f"messages[{i}]"
            if not isinstance(raw, dict):
                self.report(f"{where} must be an object, got {json_kind(raw)}")
                continue
            role = raw.get("role")
            if not isinstance(role, str) or role not in self.roles:
                self.report(f"{where} has unknown role {role!r}; expected one of {', '.join(self.roles)}")
                continue
            yield i, where, raw

    def model_of(self, raw: dict) -> str:
        """The model of an assistant message's call: its own, else the document's."""
        return (raw.get("model") if isinstance(raw.get("model"), str) else self.model) or "unknown"

    def convert(self) -> list[Message]:
        raise NotImplementedError

    def finished(self, session: Session) -> Session:
        """The session built from `convert`'s messages, with what the format adds to it (none here)."""
        return session


class ChatImporter:
    """An importer of one of the two chat formats: it matches a document `classify` finds to be of
    its format (`name`), and loads it through its format's `converter`."""

    name: str
    description: str

    def match(self, source: Source) -> str | None:
        found = classify(source)
        if found.flavor == self.name:
            return None
        return found.reason or self.why_not(found)

    def why_not(self, found: Classification) -> str:
        """Why a document of no other problem is not of this format (the other format's markers)."""
        raise NotImplementedError

    def converter(self) -> type[ChatConverter]:
        raise NotImplementedError

    def load(self, source: Source, issues: RecordIssues) -> list[Session]:
        doc = load_chat_document(source, issues)
        model = top_model(doc, issues)
        converter = self.converter()(doc, model, issues)
        messages = converter.convert()
        return [converter.finished(build_session(source, self.name, messages, {model} if model else set(), issues))]


def token_counts(
    usage: object, fields: tuple[str, ...], required: str, where: str, issues: RecordIssues
) -> dict[str, int] | None:
    """The integer token counts of `usage` (missing -> 0), or None after reporting damage (a null count: the
    call's usage is unknown; no real response writes one in a count compactlab reads)."""
    if not isinstance(usage, dict):
        issues.report(None, f"{where}: usage must be an object, got {json_kind(usage)}")
        return None
    if usage.get(required) is None:
        issues.report(None, f"{where}: usage has no `{required}`")
        return None
    counts: dict[str, int] = {}
    for name in fields:
        value = usage.get(name)
        count = None if name in usage and value is None else as_count(value)
        if count is None:
            issues.report(None, f"{where}: usage `{name}` {call_count_problem(value)}")
            return None
        counts[name] = count
    return counts


def as_count(value: object) -> int | None:
    """One call's token count (see `is_call_count`), or None when it is not one; None (absent) counts as 0."""
    if value is None:
        return 0
    return int(value) if is_call_count(value) else None


def cost_of(usage: dict, message: dict, where: str, issues: RecordIssues) -> float | None:
    """`cost` (USD) from the usage object (as OpenRouter records it) or the message, if present."""
    value = usage.get("cost", message.get("cost"))
    if value is None:
        return None
    if not is_cost(value):
        issues.report(None, f"{where}: `cost` must be a number (finite, non-negative), got {value!r:.40}")
        return None
    return float(value)


def url_image(url: str, default: str = "image/*") -> ImagePart:
    """An image given by URL. `data:` URLs hold the bytes and are measured; others are not fetched."""
    if url.startswith("data:"):
        header, _, payload = url[5:].partition(",")
        media_type = header.split(";")[0] or default
        if ";base64" in header:
            return image_part(media_type, payload)
        return ImagePart(media_type=media_type, byte_size=len(unquote(payload).encode()))
    guessed = mimetypes.guess_type(url.split("?")[0])[0]
    return ImagePart(media_type=guessed or default, byte_size=0)


def placeholder(what: str) -> TextPart:
    """Kept in place of content this importer has no canonical part for, so nothing vanishes."""
    return TextPart(text=f"[{what} not imported]")


def ensure_parts(parts: list[Part]) -> tuple[Part, ...]:
    # A message with no parts would be dropped by the pairing check, and with it an assistant
    # turn's recorded LLM call; an empty text part keeps the turn and its usage.
    return tuple(parts) if parts else (TextPart(text=""),)


def build_session(source: Source, fmt: str, messages: list[Message], models: set[str], issues: RecordIssues) -> Session:
    kept = check_tool_pairing(messages, issues)
    all_models = models | {m.call.model for m in kept if m.call is not None}
    name = source.path.name.removesuffix(".gz")
    return Session(
        id=Path(name).stem,
        source_format=fmt,
        source_path=str(source.path),
        messages=tuple(kept),
        models=tuple(sorted(all_models)),
        skipped=tuple(issues.skipped),
    )


def json_kind(value: object) -> str:
    """JSON's name for the type of a parsed value, for error messages."""
    if value is None:
        return "null"
    return {bool: "boolean", int: "number", float: "number", str: "string", list: "array", dict: "object"}.get(
        type(value), type(value).__name__
    )
