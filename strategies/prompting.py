"""Summary prompts: editable jinja2 templates, rendered with a hash that names the exact prompt.

Templates live in `strategies/prompts/`; a strategy names one by file name (`summary.j2`) or by
path (`my_prompts/summary.j2`) so teams can keep their own prompt in their repository. The hash
covers the template's text (and the system prompt's), so every result can say precisely which
prompt produced it, and a CI gate can tell when a prompt changed.

A template also decides what the strategy itself adds to the summaries it writes: its top-level
`files` macro (defined in it, or imported with `{% from "files.j2" import files %}`) renders the
cumulative lists of files read and modified (`file_lists`). A template without it writes summaries
without file lists. Templates may import from their own folder and from `strategies/prompts`; the
hash covers the imported templates too.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

import jinja2
import jinja2.meta
from jinja2 import nodes

from compactlab.contract import CompactionFailed, CompactionRequest, Summarizer, SummaryRequest
from compactlab.sessions.model import ImagePart, Message, TextPart, ThinkingPart, ToolCallPart, ToolResultPart
from compactlab.strategies.base import named_strategy
from compactlab.strategies.extractive_summarizer import ExtractiveSummarizer

PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"
SYSTEM_TEMPLATE = "system.j2"
# Long tool outputs are cut in the session shown to the summarizer (pi and opencode do the same):
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


def _environment(path: Path) -> jinja2.Environment:
    # Imports resolve next to the template first, then among the bundled prompts (files.j2).
    loader = jinja2.FileSystemLoader([str(path.parent), str(PROMPTS_DIR)])
    # No auto_reload: an edit to any imported file changes the stamp, which compiles the template
    # again in a new environment; jinja would otherwise check every import's file at every render.
    return jinja2.Environment(
        loader=loader, undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False, auto_reload=False
    )


@lru_cache(maxsize=128)
def _imports(path: Path, mtime: float) -> tuple[Path, ...]:
    """The template files `path` imports or includes (found next to it, then among the bundled prompts)."""
    tree = _environment(path).parse(path.read_text(encoding="utf-8"))
    found = []
    for name in jinja2.meta.find_referenced_templates(tree):
        candidates = [d / name for d in (path.parent, PROMPTS_DIR)] if name else []
        found += [c.resolve() for c in candidates if c.is_file()][:1]
    return tuple(found)


def _stamp(path: Path, seen: frozenset[Path] = frozenset()) -> tuple[tuple[Path, float], ...]:
    """(file, mtime) of the template and of every template it imports, recursively: a cache key
    that changes when any of them is edited."""
    own = (path, path.stat().st_mtime)
    nested = [_stamp(p, seen | {path}) for p in _imports(*own) if p not in seen and p != path]
    return (own, *(entry for stamp in nested for entry in stamp))


@lru_cache(maxsize=64)
def _template(path: Path, stamp: tuple) -> tuple[jinja2.Template, str]:
    """The compiled template and the text its hash covers: its source plus every template it imports."""
    sources = "\0".join(p.read_text(encoding="utf-8") for p, _ in dict.fromkeys(stamp))
    return _environment(path).from_string(path.read_text(encoding="utf-8")), sources


# template name -> (its file, its stamp): checked with a few `os.stat`s per use instead of resolving
# and stamping it anew (a sweep renders templates thousands of times; that was most of the cost).
_CURRENT: dict[str, tuple[Path, tuple[tuple[Path, float], ...]]] = {}


_FIXED = False  # inside `fixed_templates`


@contextmanager
def fixed_templates() -> Iterator[None]:
    """Within it, a template is resolved and read at its first use and not checked again: a run
    replays all its compactions with one version of each prompt, and does not look at the files
    at every compaction. Processes forked inside it inherit it."""
    global _FIXED
    previous, _FIXED = _FIXED, True
    _CURRENT.clear()  # what was resolved before may have been edited since
    try:
        yield
    finally:
        _FIXED = previous


def _current(template: str) -> tuple[Path, tuple[tuple[Path, float], ...]]:
    """The template's file and stamp, as `template_path` and `_stamp` would give them now (or, in
    `fixed_templates`, at its first use there)."""
    found = _CURRENT.get(template)
    if found is not None and (_FIXED or _unchanged(template, *found)):
        return found
    path = template_path(template)
    found = _CURRENT[template] = (path, _stamp(path))
    return found


def _unchanged(template: str, path: Path, stamp: tuple[tuple[Path, float], ...]) -> bool:
    try:
        if any(os.stat(file).st_mtime != mtime for file, mtime in stamp):
            return False
    except OSError:  # deleted: resolve again, which names what is missing
        return False
    # A bundled template stays chosen only while no file of that name appears in the working directory.
    return path == Path(template) or not os.path.isfile(template)


def _compiled(template: str) -> tuple[jinja2.Template, str]:
    return _template(*_current(template))


def render(template: str, **variables: object) -> Prompt:
    body, source = _compiled(template)
    system, system_source = _compiled(SYSTEM_TEMPLATE)
    return Prompt(system=_rendered(system), text=body.render(**variables).strip() + "\n", hash=_digest(system_source, source))


@lru_cache(maxsize=16)
def _rendered(template: jinja2.Template) -> str:
    """A template without variables (the system prompt), rendered once per compiled template."""
    return template.render().strip()


@lru_cache(maxsize=64)
def _digest(*sources: str) -> str:
    return hashlib.sha256("\0".join(sources).encode("utf-8")).hexdigest()[:16]


TEMPLATES = ("template", "update_template", "turn_prefix_template")  # a summarizing strategy's prompt template settings


def renders_prompt(strategy: object) -> bool:
    """Whether a strategy's compactions render its prompt templates: only an LLM summarizer reads
    them (the extractive stand-in reads the messages; its templates give the file lists only)."""
    inner = getattr(strategy, "strategy", strategy)  # a preset compacts with its strategy
    return any(hasattr(inner, name) for name in TEMPLATES) and getattr(inner, "summarizer", "extractive") != "extractive"


def template_hash(template: str) -> str:
    """The hash `render(template)` gives its prompts (the template, what it imports, and the system
    prompt): what a summary request's `prompt_hash` is when this template wrote it."""
    return _digest(_compiled(SYSTEM_TEMPLATE)[1], _compiled(template)[1])


def summarizing_parts(strategy: object) -> Iterator[object]:
    """The parts of a strategy that may write summaries: the strategy, a preset's strategy, an
    archive's inner strategy and a pipeline's stages (names built with the strategy: see
    `compactlab.strategies.registry.resolved`)."""
    pending = [strategy]
    while pending:
        part = pending.pop(0)
        part = named_strategy(part, "a strategy's part") if isinstance(part, str) else part
        if any(hasattr(part, name) for name in TEMPLATES):
            yield part
        pending += [getattr(part, name) for name in ("strategy", "inner") if hasattr(part, name)]
        pending += list(getattr(part, "stages", ()))


def prompt_templates(strategy: object) -> dict[str, bool]:
    """Every prompt template a strategy's compactions may render, and whether a model reads it
    there (an LLM summarizer; the extractive stand-in reads none: it uses only their file lists).
    An update template counts only for a strategy that updates its earlier summary (`iterative`)."""
    found: dict[str, bool] = {}
    for part in summarizing_parts(strategy):
        read = getattr(part, "summarizer", "extractive") != "extractive"
        for name in TEMPLATES:
            if hasattr(part, name) and not (name == "update_template" and not getattr(part, "iterative", True)):
                template = getattr(part, name)
                found[template] = found.get(template, False) or read
    return found


def template_files(template: str) -> tuple[Path, ...]:
    """The files rendering `template` reads: the template, every template it imports, and the
    system prompt's (for saying which prompts a run really rendered)."""
    return tuple(dict.fromkeys(path for name in (template, SYSTEM_TEMPLATE) for path, _ in _current(name)[1]))


def prompt_set_hash(*templates: str) -> str:
    """One hash for every template a strategy may use (and the system prompt): change any of
    them (or a template they import) and the hash changes, whichever of them a particular
    compaction happened to need."""
    return _digest(*(_compiled(t)[1] for t in (SYSTEM_TEMPLATE, *templates)))


@lru_cache(maxsize=64)
def _macros(path: Path, stamp: tuple) -> dict[str, object]:
    """The template's top-level macros, defined or imported, without rendering its prompt."""
    environment = _environment(path)
    tree = environment.parse(path.read_text(encoding="utf-8"))
    tree.body = [node for node in tree.body if isinstance(node, (nodes.Macro, nodes.FromImport, nodes.Import))]
    macros_only = environment.from_string(tree)
    context = macros_only.new_context({})
    for _ in macros_only.root_render_func(context):
        pass
    return dict(context.vars)


def file_lists(template: str, read: Sequence[str], modified: Sequence[str]) -> str:
    """What `template` adds to a summary for the cumulative files read and modified: its `files`
    macro's output, stripped; '' when the template has no `files` macro (no file lists)."""
    macro = _macros(*_current(template)).get("files")
    return str(macro(list(read), list(modified))).strip() if callable(macro) else ""


def serialize(messages: Sequence[Message]) -> str:
    """The session as plain text for a summarizer, one labelled block per part."""
    blocks: list[str] = []
    for message in messages:
        for part in message.parts:
            if isinstance(part, TextPart):
                label = {"user": "User", "assistant": "Assistant", "system": "System", "tool": "Tool"}[message.role]
                blocks.append(f"[{label}]: {part.text}")
            elif isinstance(part, ThinkingPart):
                blocks.append(f"[Assistant thinking]: {part.text}")
            elif isinstance(part, ToolCallPart) and not part.from_text:  # else the text shows it
                blocks.append(f"[Assistant tool call]: {part.name}({part.arguments})")
            elif isinstance(part, ToolResultPart):
                content = part.content
                if len(content) > TOOL_RESULT_MAX_CHARS:
                    content = (
                        content[:TOOL_RESULT_MAX_CHARS] + f"\n[... {len(part.content) - TOOL_RESULT_MAX_CHARS} more characters]"
                    )
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


def summarizer_for(name: str, request: CompactionRequest) -> Summarizer:
    """The summarizer a strategy's `summarizer` setting names: "extractive" (no LLM) or "llm" (the run's)."""
    if name == "extractive":
        return ExtractiveSummarizer()
    if name == "llm":
        if request.summarizer is None:
            raise CompactionFailed("summarizer 'llm' needs an LLM provider configured for the run")
        return request.summarizer
    raise ValueError(f"unknown summarizer {name!r}: use 'extractive' or 'llm'")


def summary_request(
    messages: Sequence[Message],
    template: str,
    summarizer: Summarizer,
    max_output_tokens: int,
    *,
    previous_summary: str | None = None,
    purpose: Literal["history", "turn_prefix", "update"] = "history",
    files_tracked: bool = False,
) -> SummaryRequest:
    """What a summarizer is asked of `messages` (their tool calls given results first), with
    `template` rendered only for a summarizer that reads prompts (the contract's `reads_prompt`)."""
    cleaned = fill_missing_results(list(messages))
    if getattr(summarizer, "reads_prompt", True):
        prompt = render(template, conversation=serialize(cleaned), previous_summary=previous_summary)
    else:
        prompt = Prompt(system="", text="", hash="")  # no prompt was rendered
    return SummaryRequest(
        messages=tuple(cleaned),
        prompt=prompt.text,
        system=prompt.system,
        prompt_hash=prompt.hash,
        max_output_tokens=max_output_tokens,
        purpose=purpose,
        previous_summary=previous_summary,
        files_tracked=files_tracked,
    )
