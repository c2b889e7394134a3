"""What the records of a Codex rollout hold, record by record: the kinds a rollout has, and one
response item's content, reasoning and tool output as canonical parts.

`compactlab.sessions.importers.codex` reads a rollout in order and assembles its messages and
calls (the session's state); everything here looks at one record alone. A kind is either one this
importer knows, a new one Codex added (ignored and counted), or a damaged spelling of a known one
(`damaged_kind`), which is reported rather than dropped without a word.
"""

from __future__ import annotations

import difflib
import mimetypes
from collections import Counter
from typing import TypeGuard

from compactlab.sessions.importers.importer import image_part, is_call_count
from compactlab.sessions.model import ImagePart, Part, TextPart
from compactlab.sessions.source import RecordIssues

ENVELOPE_TYPES = ("session_meta", "response_item", "event_msg", "turn_context", "compacted")
# Bare item types of the legacy layout (the serde tags of `ResponseItem` in models.rs).
LEGACY_ITEM_TYPES = ("message", "reasoning", "function_call", "function_call_output", "local_shell_call")
# User messages Codex writes itself, before the user's first message and again when they change
# (codex-rs/core: AGENTS.md as `# AGENTS.md instructions for <dir>` or, in older versions,
# `<user_instructions>`; `<environment_context>` with cwd, sandbox and approval policy). They are
# instructions, not conversation: marked `instruction` so strategies keep them as the system prompt.
INSTRUCTION_PREFIXES = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions for ")
# Event copies of response items, written for UIs (policy.rs persists them); the item is the truth.
COPY_EVENTS = ("user_message", "agent_message", "agent_reasoning", "agent_reasoning_raw_content")
# Response item types this importer reads or ignores by design (the serde tags of `ResponseItem`).
ITEM_TYPES = (
    *LEGACY_ITEM_TYPES,
    "custom_tool_call",
    "custom_tool_call_output",
    "web_search_call",
    "ghost_snapshot",
)
# How alike (difflib's ratio) a kind must be to a known one to be taken for a damaged spelling of
# it: one letter lost or changed in a name of 7+ letters is over 0.85; distinct real kinds
# ("function_call" / "custom_tool_call", "reasoning" / "agent_reasoning") stay below 0.8.
DAMAGED_KIND_CUTOFF = 0.85


def is_legacy_meta(data: dict) -> bool:
    """The first line of the legacy layout: a bare `{"id", "timestamp", "instructions"}` header."""
    return "type" not in data and isinstance(data.get("id"), str) and isinstance(data.get("timestamp"), str)


def content_parts(content: list, line: int, issues: RecordIssues, ignored: Counter[str]) -> list[Part] | None:
    """A message item's content entries as parts (None, reported, when an entry is damaged); entry
    kinds that carry nothing a prompt holds as text or image are counted in `ignored`."""
    parts: list[Part] = []
    for entry in content:
        kind = entry.get("type") if isinstance(entry, dict) else None
        if kind in ("input_text", "output_text", "text") and isinstance(entry.get("text"), str):
            parts.append(TextPart(entry["text"]))
        elif kind == "input_image" and isinstance(entry.get("image_url"), str):
            parts.append(image(entry["image_url"]))
        elif kind in ("input_text", "output_text", "text") or not is_type_name(kind):
            issues.report(line, f"message content entry has no 'type' name or no string 'text' (type {kind!r:.30})")
            return None
        else:
            ignored[f"message content:{kind}"] += 1
    return parts


def reasoning_texts(item: dict) -> list[str] | None:
    """A reasoning item's readable texts: its summary's, or without one its raw content's (recorded
    by some open-weight providers); None when `summary` or `content` is not a list."""
    summary, content = item.get("summary"), item.get("content")
    if not isinstance(summary, (list, type(None))) or not isinstance(content, (list, type(None))):
        return None
    texts = [s["text"] for s in summary or [] if isinstance(s, dict) and isinstance(s.get("text"), str)]
    if not texts:
        texts = [c["text"] for c in content or [] if isinstance(c, dict) and isinstance(c.get("text"), str)]
    return texts


def damaged_kind(kind: object, known: tuple[str, ...]) -> str | None:
    """The known kind `kind` is a damaged spelling of (a letter lost, changed or added: "mesage"),
    else None. Codex adds kinds over time, and a new one is ignored and counted; one this close to
    a kind it already has is damage, which would drop a record without a word."""
    if not isinstance(kind, str) or kind in known:
        return None
    close = difflib.get_close_matches(kind, known, n=1, cutoff=DAMAGED_KIND_CUTOFF)
    return close[0] if close else None


def is_type_name(kind: object) -> bool:
    """Item and content types are snake_case names: anything else is damage, not a new kind to ignore."""
    return isinstance(kind, str) and kind.replace("_", "").isalpha() and kind.islower()


def is_usage(usage: object) -> TypeGuard[dict]:
    """One call's usage (`last_token_usage`): its counts are calls' counts; a null cached count is unknown, not 0."""
    keys = ("input_tokens", "output_tokens")
    return (
        isinstance(usage, dict)
        and all(is_call_count(usage.get(k)) for k in keys)
        and is_call_count(usage.get("cached_input_tokens", 0))
    )


def tool_output(output: object) -> tuple[str | None, bool, list[ImagePart]]:
    """A tool output's text, error flag and images. models.rs `FunctionCallOutputPayload` is
    written as a plain string, or as a list of input_text/input_image items; older versions wrote
    `{"content", "success"}` objects, where success=false marks a failure."""
    if isinstance(output, str):
        return output, False, []
    if isinstance(output, dict):
        text, _, images = tool_output(output.get("content"))
        return text, output.get("success") is False, images
    if isinstance(output, list):
        texts = [e["text"] for e in output if isinstance(e, dict) and isinstance(e.get("text"), str)]
        images = [image(e["image_url"]) for e in output if isinstance(e, dict) and isinstance(e.get("image_url"), str)]
        return "\n".join(texts), False, images
    return None, False, []


def image(url: str) -> ImagePart:
    # Codex inlines local images as data URLs; a remote URL keeps only its guessed type.
    if url.startswith("data:") and "," in url:
        header, data = url[5:].split(",", 1)
        return image_part(header.split(";")[0], data if header.endswith(";base64") else None)
    return image_part(mimetypes.guess_type(url)[0] or "", None)
