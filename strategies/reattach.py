"""What Claude Code puts back into the context after it compacts, modelled from the session.

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

From the session (strategies/file_states.py reads it): a file's content is the last the session
saw of it; newest is the order in which the session last read or wrote it. What cannot be known is
counted, not hidden: a file the session saw only in part is restored with the part it saw
(`Reattachment.partial`). The per-file limit is checked in provider tokens at the session's
measured ratio (the caller's `tokens`), as the Read tool asks the provider to count.

What the session cannot say is a rule (`ReattachRules`), each chosen by leave-one-session-out
over every shared real Claude Code compaction (`python -m tests.scripts.real_compactions`
prints the figures both ways): whether files the session only created (a Write, never a Read) are
candidates, as the code read says (its Write tool puts the file in the cache too) though the agent's
turn after the bundled auto-compaction (m-claude 3af9b1a7, Claude Code 2.1.5) lists none of the four
documents it had created; and what a file known only in part counts for: Claude Code re-reads it
whole, whose size the session does not hold (the slice seen, or left out as over the per-file
limit, which is why most files are read in part).

Images read with the Read tool are re-attached as images (their tokens are the provider's image
formula, not text). The plan file's whole text is the `plan` argument of the last approved
`ExitPlanMode` (its result names the file), else what the session last read or wrote of it.

The tools read are Claude Code's (Read, Write, Edit, MultiEdit, TodoWrite); other agents'
sessions hold none of them, so nothing is re-attached there.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from compactlab.contract import CompactionRequest, CompactionResult, Context, Strategy
from compactlab.sessions.messages import leading_system
from compactlab.sessions.model import Message, TextPart
from compactlab.strategies.base import setting
from compactlab.strategies.file_states import (
    attachment_message,
    attachment_text,
    file_message,
    file_states,
    latest_todos,
    unnumbered,
)

MAX_FILES = 5
MAX_TOKENS_PER_FILE = 5_000
TOKEN_BUDGET = 50_000
ROUGH_CHARS_PER_TOKEN = 4  # Claude Code's rough count, used for the 50,000-token budget

MEMORY_FILE_NAMES = frozenset({"CLAUDE.md", "CLAUDE.local.md"})
PLAN_FOLDER = "/.claude/plans/"
TODO_FOLDER = "/.claude/todos/"


@dataclass(frozen=True)
class ReattachRules:
    """What the session cannot tell about a re-attachment (see the module docstring)."""

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
    context still shows (Claude Code does not restore those); `rules`: what the session cannot tell."""
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
        if tokens(state.raw if state.raw is not None else unnumbered(state.shown)) > MAX_TOKENS_PER_FILE:
            over_limit.append(state.path)
            continue
        message = file_message(state.path, state.shown, state.images, written=state.modified is not None)
        rough = len(attachment_text(message)) / ROUGH_CHARS_PER_TOKEN
        if spent + rough > TOKEN_BUDGET:
            over_budget.append(state.path)
            continue
        spent += rough
        restored.insert(0, message)  # oldest first, so that a later compaction sees them in the order they were touched
        files.append(state.path)
    todos = latest_todos(messages)
    if todos:
        restored.append(attachment_message("todo", "Here are the latest contents of your todo list:\n\n" + json.dumps(todos)))
    plan = next((s for s in sorted(states.values(), key=lambda s: -s.order) if PLAN_FOLDER in s.path), None)
    if plan is not None:
        restored.append(
            attachment_message(
                "plan", f"A plan file exists from plan mode at {plan.path}:\n\n{plan.raw or unnumbered(plan.shown)}"
            )
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


def _restorable(path: str) -> bool:
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return name not in MEMORY_FILE_NAMES and PLAN_FOLDER not in path and TODO_FOLDER not in path
