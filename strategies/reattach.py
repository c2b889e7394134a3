"""What Claude Code puts back into the context after it compacts, modelled from the transcript.

Claude Code does not leave the summary alone after a compaction: it re-attaches state the summary
cannot carry, and the session file does not record it (the next prompt's token count does). From
its compaction code (`services/compact/compact.ts`: `createPostCompactFileAttachments` and the
constants at lines 122-124; the same logic in the minified cli.js of 2.0.x and 2.1.x, as public
de-minified copies show; described in Zhang Handong, "Harness Engineering from CC to AI coding",
ch. 10, https://zhanghandong.github.io/harness-engineering-from-cc-to-ai-coding/en/part3/ch10.html):

- Files: the file-state cache (every file read, written or edited) is sorted newest first, without
  CLAUDE.md memory files, the todo file and the plan file; the newest 5 (`MAX_FILES`, Claude
  Code's POST_COMPACT_MAX_FILES_TO_RESTORE) are read again through the Read tool with a 5,000-token
  limit (`MAX_TOKENS_PER_FILE`, POST_COMPACT_MAX_TOKENS_PER_FILE): a file over it fails to read and
  is not restored (the Read tool refuses, it does not cut). The restored files are kept in that
  order while their rough size (characters / 4 of the attachment, Claude Code's rough count) adds
  up to at most 50,000 tokens (`TOKEN_BUDGET`, POST_COMPACT_TOKEN_BUDGET).
- The todo list, when it is not empty (an attachment of type "todo", context "post-compact").
- The plan file, when one exists (an attachment "plan_file_reference": its path and content).

From the transcript: a file's content is the last the session saw of it (a whole-file Read
result, a Write's content, an Edit applied to a known content); newest is the order in which the
session last read or wrote it (Claude Code sorts by its cache's timestamp, which the transcript
does not hold). What cannot be known is counted, not hidden: a file the session saw only in part
(a Read with offset/limit, an Edit of a file never read whole) is restored with the part it saw
(`Reattachment.partial`). The per-file limit is checked in provider tokens at the session's
measured ratio (the caller's `tokens`), as the Read tool asks the provider to count.

What the transcript cannot say is a rule (`ReattachRules`), each chosen by leave-one-session-out
over every shared real Claude Code compaction (`python -m compactlab.measure.real_compactions`
prints the figures both ways): whether files the session only created (a Write, never a Read) are
candidates, as the code read says (its Write tool puts the file in the cache too) though the agent's
turn after the bundled auto-compaction (m-claude 3af9b1a7, Claude Code 2.1.5) lists none of the four
documents it had created; and what a file known only in part counts for: Claude Code re-reads it
whole, whose size the transcript does not hold (the slice seen, or left out as over the per-file
limit, which is why most files are read in part). A partial read that returned fewer lines than
its limit from the top is the whole file; a partial read after the whole content was known (a
Write, a whole Read) does not make it partial.

Images read with the Read tool are re-attached as images (their tokens are the provider's image
formula, not text). The plan file's whole text is the `plan` argument of the last approved
`ExitPlanMode` (its result names the file), else what the session last read or wrote of it.

The tools read are Claude Code's (Read, Write, Edit, MultiEdit, TodoWrite); other agents'
transcripts hold none of them, so nothing is re-attached there.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from compactlab.contract import CompactionRequest, CompactionResult, Context, Strategy
from compactlab.strategies.base import setting
from compactlab.transcripts.messages import leading_system
from compactlab.transcripts.model import ImagePart, Message, Part, TextPart, ToolCallPart, ToolResultPart

MAX_FILES = 5
MAX_TOKENS_PER_FILE = 5_000
TOKEN_BUDGET = 50_000
ROUGH_CHARS_PER_TOKEN = 4  # Claude Code's rough count, used for the 50,000-token budget

REATTACHED_SOURCE_ID = "compactlab:reattached"
FILE_TOOLS = frozenset({"Read", "Write", "Edit", "MultiEdit"})
MEMORY_FILE_NAMES = frozenset({"CLAUDE.md", "CLAUDE.local.md"})
PLAN_FOLDER = "/.claude/plans/"
TODO_FOLDER = "/.claude/todos/"

_READ_CALL = "Called the Read tool with the following input: "
_READ_RESULT = "Result of calling the Read tool:\n"
_REMINDER = re.compile(r"\n*<system-reminder>.*?</system-reminder>\n*", re.DOTALL)
_NUMBERED_LINE = re.compile(r"^ *\d+→", re.MULTILINE)
_PLAN_SAVED = re.compile(r"Your plan has been saved to: (\S+)")


@dataclass(frozen=True)
class ReattachRules:
    """What the transcript cannot tell about a re-attachment (see the module docstring)."""

    created_files: bool = True  # files the session only wrote are candidates
    partial_files: Literal["slice", "left-out"] = "slice"  # what a file known only in part counts for
    # How the 5,000-token file limit counts a file: "text", its own text by the model family's fitted
    # tokenizer (the Read tool counts the file alone), or "prompt", what it adds to the prompt at the
    # session's measured ratio (which also carries the framing of the history's tool calls).
    file_limit_count: Literal["text", "prompt"] = "text"
    # Which files are newest: "touched", by when the session last read or wrote each; "modified",
    # files the session wrote or edited first (by when), then the others (by when read): Claude
    # Code sorts its cache by each entry's timestamp, a file's modification time, which a file the
    # session only read keeps from before the session.
    newest: Literal["touched", "modified"] = "modified"


@dataclass(frozen=True)
class FileState:
    """The last the session saw of one file: `shown` as the Read tool returns it, `raw` its text."""

    path: str
    shown: str
    raw: str | None
    partial: bool
    order: int
    was_read: bool = True
    images: tuple[ImagePart, ...] = ()  # an image file's content, as the Read tool returned it
    modified: int | None = None  # when the session last wrote or edited it (its order), if it did


@dataclass(frozen=True)
class Reattachment:
    """What one compaction re-attaches, and what was left out (and why)."""

    messages: tuple[Message, ...]
    files: tuple[str, ...]
    partial: tuple[str, ...]
    over_file_limit: tuple[str, ...]
    over_budget: tuple[str, ...]
    todos: int
    plan: str | None
    unknown_whole: tuple[str, ...] = ()  # known only in part and left out (`ReattachRules.partial_files`)

    def note(self) -> str:
        if not self.messages:
            return ""
        parts = [f"re-attached {len(self.files)} file(s)"]
        if self.partial:
            parts.append(f"{len(self.partial)} known only in part (the part seen counted)")
        if self.unknown_whole:
            parts.append(f"{len(self.unknown_whole)} known only in part left out (whole size unknown)")
        if self.over_file_limit:
            parts.append(f"{len(self.over_file_limit)} over the {MAX_TOKENS_PER_FILE:,}-token file limit left out")
        if self.over_budget:
            parts.append(f"{len(self.over_budget)} over the {TOKEN_BUDGET:,}-token budget left out")
        if self.todos:
            parts.append(f"the todo list ({self.todos} items)")
        if self.plan:
            parts.append("the plan file")
        return ", ".join(parts)


@dataclass(frozen=True, kw_only=True)
class ReattachSettings:
    """The `ReattachRules` as settings of a strategy that re-attaches (`WithReattachments`, `Recorded`)."""

    created_files: bool = setting(ReattachRules.created_files, "files the session only created are re-attached too")
    partial_files: str = setting(ReattachRules.partial_files, "a file known only in part: 'slice' (the part seen) or 'left-out'")
    file_limit_count: str = setting(
        ReattachRules.file_limit_count, "the file limit counts the file's 'text' alone or what it adds to the 'prompt'"
    )
    newest: str = setting(
        ReattachRules.newest, "which files are newest: 'touched' (read or written last) or 'modified' (written first)"
    )

    def rules(self) -> ReattachRules:
        return rules_of(self.created_files, self.partial_files, self.file_limit_count, self.newest)


@dataclass(frozen=True)
class WithReattachments(ReattachSettings):
    """A strategy followed by what Claude Code re-attaches after compacting (see the module docstring)."""

    name = "with-reattachments"
    inner: Strategy | None = setting(None, "the strategy that compacts; its result gets Claude Code's re-attachments")

    def compact(self, context: Context, request: CompactionRequest) -> CompactionResult:
        if self.inner is None:
            raise ValueError("with-reattachments needs the strategy that compacts (its `inner` setting)")
        result = self.inner.compact(context, request)
        if not result.messages_removed:
            return result
        kept = file_states(result.context.messages)
        history = context.messages[leading_system(context.messages) :]
        rules = self.rules()
        extra = reattach(history, file_tokens(request, rules), frozenset(kept), rules)
        if not extra.messages:
            return result
        messages = (*result.context.messages, *extra.messages)
        note = f"{result.note}; {extra.note()}" if result.note else extra.note()
        return CompactionResult(
            replace(result.context, messages=messages),
            result.messages_removed,
            result.summarizer_calls,
            result.prompt_hash,
            note,
        )


def rules_of(created_files: bool, partial_files: str, file_limit_count: str, newest: str = ReattachRules.newest) -> ReattachRules:
    """The rules a strategy's settings name (a setting is checked here, where it is used)."""
    if partial_files not in ("slice", "left-out"):
        raise ValueError(f"partial_files must be 'slice' or 'left-out', got {partial_files!r}")
    if file_limit_count not in ("text", "prompt"):
        raise ValueError(f"file_limit_count must be 'text' or 'prompt', got {file_limit_count!r}")
    if newest not in ("touched", "modified"):
        raise ValueError(f"newest must be 'touched' or 'modified', got {newest!r}")
    return ReattachRules(
        created_files,
        "slice" if partial_files == "slice" else "left-out",
        "text" if file_limit_count == "text" else "prompt",
        "touched" if newest == "touched" else "modified",
    )


def file_tokens(request: CompactionRequest, rules: ReattachRules) -> Callable[[str], float]:
    """How the per-file limit counts a file's text (`ReattachRules.file_limit_count`)."""
    if rules.file_limit_count == "text" and request.text_tokens is not None:
        return request.text_tokens
    return provider_tokens(request)


def provider_tokens(request: CompactionRequest) -> Callable[[str], float]:
    """The size of a text in provider tokens at the session's measured ratio (what the text adds to a prompt)."""
    empty = request.prompt_size(())
    return lambda text: request.prompt_size((Message(role="user", parts=(TextPart(text),)),)) - empty


def reattach(
    messages: Sequence[Message],
    tokens: Callable[[str], float],
    skip: frozenset[str] = frozenset(),
    rules: ReattachRules = ReattachRules(),
) -> Reattachment:
    """What Claude Code re-attaches after compacting `messages` (the history it summarized).
    `tokens(text)`: the provider-token size of a text in this session; `skip`: files the compacted
    context still shows (Claude Code does not restore those); `rules`: what the transcript cannot tell."""
    states = file_states(messages)
    candidates = sorted(
        (s for s in states.values() if _restorable(s.path) and s.path not in skip and (rules.created_files or s.was_read)),
        key=(lambda s: s.order) if rules.newest == "touched" else (lambda s: (s.modified is not None, s.modified or s.order)),
        reverse=True,
    )[:MAX_FILES]
    restored: list[Message] = []
    files: list[str] = []
    over_limit: list[str] = []
    over_budget: list[str] = []
    unknown: list[str] = []
    spent = 0.0
    for state in candidates:
        if state.partial and rules.partial_files == "left-out":
            unknown.append(state.path)
            continue
        if tokens(state.raw if state.raw is not None else _unnumbered(state.shown)) > MAX_TOKENS_PER_FILE:
            over_limit.append(state.path)
            continue
        message = file_message(state.path, state.shown, state.images, written=state.modified is not None)
        rough = len(_text(message)) / ROUGH_CHARS_PER_TOKEN
        if spent + rough > TOKEN_BUDGET:
            over_budget.append(state.path)
            continue
        spent += rough
        restored.insert(0, message)  # oldest first, so that a later compaction sees them in the order they were touched
        files.append(state.path)
    todos = latest_todos(messages)
    if todos:
        restored.append(_attachment("todo", "Here are the latest contents of your todo list:\n\n" + json.dumps(todos)))
    plan = next((s for s in sorted(states.values(), key=lambda s: -s.order) if PLAN_FOLDER in s.path), None)
    if plan is not None:
        restored.append(
            _attachment("plan", f"A plan file exists from plan mode at {plan.path}:\n\n{plan.raw or _unnumbered(plan.shown)}")
        )
    partial = tuple(p for p in files if states[p].partial)
    return Reattachment(
        tuple(restored),
        tuple(files),
        partial,
        tuple(over_limit),
        tuple(over_budget),
        len(todos),
        plan.path if plan else None,
        tuple(unknown),
    )


def file_states(messages: Sequence[Message]) -> dict[str, FileState]:
    """Each file the session read, wrote or edited in `messages`, as it last saw it (files an
    earlier re-attachment restored included: Claude Code refills its cache with them), and the plan
    file an approved `ExitPlanMode` saved."""
    calls: dict[str, ToolCallPart] = {}
    states: dict[str, FileState] = {}
    for order, message in enumerate(messages):
        kind, _, path = (message.source_id or "").removeprefix(f"{REATTACHED_SOURCE_ID}:").partition(":")
        if is_reattached(message) and kind in ("file", "written"):
            shown = _text(message).split(_READ_RESULT, 1)[-1]
            images = tuple(p for p in message.parts if isinstance(p, ImagePart))
            modified = order if kind == "written" else None
            states[path] = FileState(path, shown, _unnumbered(shown), False, order, images=images, modified=modified)
            continue
        images = tuple(p for p in message.parts if isinstance(p, ImagePart))
        for part in message.parts:
            if isinstance(part, ToolCallPart) and (part.name in FILE_TOOLS or part.name == "ExitPlanMode"):
                calls[part.id] = part
            elif isinstance(part, ToolResultPart) and part.call_id in calls and not _failed(part):
                call = calls.pop(part.call_id)
                state = _plan(call, part, order) if call.name == "ExitPlanMode" else _after(call, part, states, order, images)
                if state is not None:
                    states[state.path] = state
    return states


def latest_todos(messages: Sequence[Message]) -> list:
    """The todo list as the last successful TodoWrite left it (empty when there is none)."""
    calls: dict[str, list] = {}
    latest: list = []
    for message in messages:
        if message.source_id == f"{REATTACHED_SOURCE_ID}:todo":
            latest = json.loads(_text(message).split("\n\n", 1)[1].removesuffix(_END))
            continue
        for part in message.parts:
            if isinstance(part, ToolCallPart) and part.name == "TodoWrite":
                todos = _arguments(part).get("todos")
                calls[part.id] = todos if isinstance(todos, list) else []
            elif isinstance(part, ToolResultPart) and part.call_id in calls and not _failed(part):
                latest = calls.pop(part.call_id)
    return latest


def file_message(path: str, shown: str, images: tuple[ImagePart, ...] = (), written: bool = False) -> Message:
    """A re-attached file as Claude Code sends it: the Read call and its result, as a user message
    (an image file's content is the image itself). `written`: the session wrote or edited it (its
    source id says so, for the next compaction's order)."""
    text = f"{_BEGIN}{_READ_CALL}{json.dumps({'file_path': path})}\n{_READ_RESULT}{shown}"
    parts: tuple[Part, ...] = (TextPart(text), *images)
    return Message(role="user", parts=parts, source_id=f"{REATTACHED_SOURCE_ID}:{'written' if written else 'file'}:{path}")


def _text(message: Message) -> str:
    """The text of an attachment message (`_attachment`, `file_message`: one text part)."""
    part = message.parts[0]
    assert isinstance(part, TextPart), part
    return part.text


def is_reattached(message: Message) -> bool:
    return bool(message.source_id and message.source_id.startswith(REATTACHED_SOURCE_ID))


_BEGIN = "<system-reminder>\n"
_END = "\n</system-reminder>"


def _attachment(kind: str, text: str) -> Message:
    return Message(role="user", parts=(TextPart(f"{_BEGIN}{text}{_END}"),), source_id=f"{REATTACHED_SOURCE_ID}:{kind}")


def _plan(call: ToolCallPart, result: ToolResultPart, order: int) -> FileState | None:
    """The plan file an approved ExitPlanMode saved: its whole text is the call's `plan`."""
    plan, saved = _arguments(call).get("plan"), _PLAN_SAVED.search(result.content)
    if not isinstance(plan, str) or saved is None:
        return None
    return FileState(saved.group(1), numbered(plan), plan, False, order, was_read=False)


def _after(
    call: ToolCallPart, result: ToolResultPart, states: dict[str, FileState], order: int, images: tuple[ImagePart, ...]
) -> FileState | None:
    """The file's state after a successful Read, Write, Edit or MultiEdit."""
    arguments = _arguments(call)
    path = arguments.get("file_path")
    if not isinstance(path, str):
        return None
    before = states.get(path)
    if call.name == "Read":
        whole = _whole_read(arguments, result.content)
        if not whole and before is not None and before.raw is not None:
            return replace(before, order=order, was_read=True)  # a part of a file known whole: still known whole
        if before is not None and before.modified is not None:
            return FileState(
                path,
                result.content,
                _unnumbered(result.content) if whole else None,
                not whole,
                order,
                True,
                images,
                before.modified,
            )
        return FileState(path, result.content, _unnumbered(result.content) if whole else None, not whole, order, images=images)
    if call.name == "Write":
        content = arguments.get("content")
        if not isinstance(content, str):
            return None
        return FileState(path, numbered(content), content, False, order, before is not None and before.was_read, modified=order)
    edits = arguments.get("edits") if call.name == "MultiEdit" else [arguments]
    raw = before.raw if before is not None else None
    for edit in edits if isinstance(edits, list) else []:
        old, new = (edit.get("old_string"), edit.get("new_string")) if isinstance(edit, dict) else (None, None)
        if raw is None or not isinstance(old, str) or not isinstance(new, str) or old not in raw:
            raw = None
            break
        raw = raw.replace(old, new) if edit.get("replace_all") else raw.replace(old, new, 1)
    was_read = before is None or before.was_read  # an Edit needs a Read first: one the transcript lacks was before it
    if raw is not None:
        return FileState(path, numbered(raw), raw, False, order, was_read, modified=order)
    # Edited without a whole view of the file: what is known is what was seen before (if anything).
    return FileState(path, before.shown if before else "", None, True, order, was_read, modified=order)


def _whole_read(arguments: dict, shown: str) -> bool:
    """Whether a Read returned the whole file: no offset or limit, or a limit from the top that the
    file ended before (fewer numbered lines came back than asked for)."""
    if arguments.get("offset") not in (None, 0, 1):
        return False
    limit = arguments.get("limit")
    return limit is None or (isinstance(limit, int) and len(_NUMBERED_LINE.findall(shown)) < limit)


def numbered(text: str) -> str:
    """Text as the Read tool returns it: each line after its number (`cat -n`, with an arrow)."""
    return "\n".join(f"{number:>6}→{line}" for number, line in enumerate(text.split("\n"), 1))


def _unnumbered(shown: str) -> str:
    return _NUMBERED_LINE.sub("", _REMINDER.sub("", shown))


def _restorable(path: str) -> bool:
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return name not in MEMORY_FILE_NAMES and PLAN_FOLDER not in path and TODO_FOLDER not in path


def _failed(result: ToolResultPart) -> bool:
    return result.is_error or result.content.lstrip().startswith("<tool_use_error>")


def _arguments(call: ToolCallPart) -> dict:
    try:
        value = json.loads(call.arguments)
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}
