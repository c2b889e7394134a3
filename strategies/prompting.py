"""Summary prompts: editable jinja2 templates, rendered with a hash that names the exact prompt.

Templates live in `strategies/prompts/`; a strategy names one by file name (`summary.j2`) or by
path (`my_prompts/summary.j2`) so teams can keep their own prompt in their repository. The hash
covers the template's text (and the system prompt's), so every result can say precisely which
prompt produced it, and a CI gate can tell when a prompt changed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import jinja2

from bench.model import ImagePart, Message, TextPart, ThinkingPart, ToolCallPart, ToolResultPart

PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"
SYSTEM_TEMPLATE = "system.j2"
# Long tool outputs are cut in the transcript shown to the summarizer (pi and opencode do the same):
# the summary needs what happened, not every line of a 50k-token file dump.
TOOL_RESULT_MAX_CHARS = 2000


@dataclass(frozen=True)
class Prompt:
    system: str
    text: str
    hash: str  # sha256 of system + template source, first 16 hex digits


def template_path(name: str) -> Path:
    path = Path(name)
    if path.is_file():
        return path
    bundled = PROMPTS_DIR / name
    if bundled.is_file():
        return bundled
    known = sorted(p.name for p in PROMPTS_DIR.glob("*.j2"))
    raise FileNotFoundError(f"prompt template {name!r} not found: give a path to a .j2 file or one of {', '.join(known)}")


@lru_cache(maxsize=64)
def _template(path: Path, mtime: float) -> tuple[jinja2.Template, str]:
    source = path.read_text(encoding="utf-8")
    environment = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)
    return environment.from_string(source), source


def render(template: str, **variables: object) -> Prompt:
    path = template_path(template)
    body, source = _template(path, path.stat().st_mtime)
    system_path = template_path(SYSTEM_TEMPLATE)
    system, system_source = _template(system_path, system_path.stat().st_mtime)
    digest = hashlib.sha256((system_source + "\0" + source).encode("utf-8")).hexdigest()[:16]
    return Prompt(system=system.render().strip(), text=body.render(**variables).strip() + "\n", hash=digest)


def prompt_set_hash(*templates: str) -> str:
    """One hash for every template a strategy may use (and the system prompt): change any of
    them and the hash changes, whichever of them a particular compaction happened to need."""
    sources = [template_path(t).read_text(encoding="utf-8") for t in (SYSTEM_TEMPLATE, *templates)]
    return hashlib.sha256("\0".join(sources).encode("utf-8")).hexdigest()[:16]


def serialize(messages: Sequence[Message]) -> str:
    """The transcript as plain text for a summarizer, one labelled block per part."""
    blocks: list[str] = []
    for message in messages:
        for part in message.parts:
            if isinstance(part, TextPart):
                label = {"user": "User", "assistant": "Assistant", "system": "System", "tool": "Tool"}[message.role]
                blocks.append(f"[{label}]: {part.text}")
            elif isinstance(part, ThinkingPart):
                blocks.append(f"[Assistant thinking]: {part.text}")
            elif isinstance(part, ToolCallPart):
                blocks.append(f"[Assistant tool call]: {part.name}({part.arguments})")
            elif isinstance(part, ToolResultPart):
                content = part.content
                if len(content) > TOOL_RESULT_MAX_CHARS:
                    content = content[:TOOL_RESULT_MAX_CHARS] + f"\n[... {len(part.content) - TOOL_RESULT_MAX_CHARS} more characters]"
                blocks.append(f"[Tool result{' (error)' if part.is_error else ''}]: {content}")
            elif isinstance(part, ImagePart):
                blocks.append(f"[Image: {part.media_type}]")
    return "\n\n".join(blocks)


def fill_missing_results(messages: Sequence[Message]) -> list[Message]:
    """Seed 001's cleaning: a tool call without a result gets a placeholder result after it, so the
    summarized span is a valid conversation (the replay's next steps may hold the real result)."""
    answered = {p.call_id for m in messages for p in m.parts if isinstance(p, ToolResultPart)}
    cleaned: list[Message] = []
    for message in messages:
        cleaned.append(message)
        missing = [p for p in message.parts if isinstance(p, ToolCallPart) and p.id not in answered]
        for call in missing:
            cleaned.append(Message(role="tool", parts=(ToolResultPart(call.id, "[no result recorded before this point]"),)))
    return cleaned
