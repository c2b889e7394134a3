"""Recoverable and unrecoverable loss: could the agent get a lost item back, and at what cost?

Next-step preservation (`compactlab.scoring.preservation`) lists the items the next steps need that
a compaction lost. Some of them the agent can fetch again with one tool call (a file still on disk,
a listing nothing changed); others existed only in the conversation (what the user said, the
agent's own decisions, an error, the output of a command that cannot be repeated). The rule, with
its cases, is docs/recoverability.md; in short, each place the item occurs in the history before
the compaction is a *source*, judged at the time of use (the first of the next k steps that uses
the item):

    recoverable    a tool result whose source is still there unchanged: a file read or written and
                   not modified since, a listing or search when nothing the session did since could
                   have changed it, a URL fetched
    unrecoverable  a user message, the agent's own text or calls, an error result, the output of a
                   command with side effects or that depends on the time, a file modified since
    unknown        a command the session cannot judge (a script, a test run), a listing after
                   changes, a file named only in the agent's own calls (it is on disk, but finding
                   its name again needs a search the session does not show)

An item is recoverable when any of its sources is, else unknown when any is, else unrecoverable.
Its re-acquisition cost is its newest recoverable source: one tool call, and that result's size
(characters / 4, the chars/4 estimate: scoring has no provider count for a re-read never made).
Sources that hold the same result are counted once per compaction.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Literal

from compactlab.memo import IdentityMemo
from compactlab.scoring.extraction import extract_items
from compactlab.scoring.matching import Item, present
from compactlab.scoring.preservation import session_text
from compactlab.sessions.model import Message, ToolCallPart, ToolResultPart
from compactlab.sessions.tool_effects import PATCH_FILE, CallEffect, call_effect, same_file

Label = Literal["recoverable", "unrecoverable", "unknown"]
LABELS: tuple[Label, ...] = ("recoverable", "unrecoverable", "unknown")
CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class Source:
    """A tool result that holds an item: `message`, the index of its part, its size in tokens."""

    message: int
    part: int
    tokens: int


@dataclass(frozen=True)
class Classified:
    item: Item
    label: Label
    reason: str  # the case of the rule that decided (docs/recoverability.md)
    source: Source | None = None  # recoverable: the newest source, what re-acquiring it costs


@dataclass(frozen=True)
class LossSplit:
    """The lost items of one compaction, by whether the agent could get them back."""

    items: tuple[Classified, ...]

    def of(self, label: Label) -> tuple[Classified, ...]:
        return tuple(c for c in self.items if c.label == label)

    @property
    def sources(self) -> tuple[Source, ...]:
        return tuple(dict.fromkeys(c.source for c in self.items if c.source is not None))

    @property
    def reacquisition_tokens(self) -> int:
        return sum(s.tokens for s in self.sources)

    @property
    def reacquisition_calls(self) -> int:
        return len(self.sources)


def loss_split(messages: Sequence[Message], index: int, lost: Sequence[Item], k: int = 5) -> LossSplit:
    """Classify the items a compaction before `messages[index]` lost, for the next `k` steps."""
    use = use_positions(messages, index, k)
    return LossSplit(tuple(classify(messages, index, item, use(item)) for item in lost))


def loss_json(split: LossSplit) -> dict:
    """What a compaction row keeps of the split, beside its preservation score (`k5`)."""
    return {
        **{f"lost_{label}": [f"{c.item.kind}:{c.item.text}" for c in split.of(label)] for label in LABELS},
        "reacquisition_tokens": split.reacquisition_tokens,
        "reacquisition_calls": split.reacquisition_calls,
    }


def use_positions(messages: Sequence[Message], index: int, k: int) -> Callable[[Item], int]:
    """The message index where each item is first used: the first of the next `k` assistant steps
    after `messages[index]` naming it (an item no step names: the last of them)."""
    steps = list(islice((i for i in range(index, len(messages)) if messages[i].role == "assistant"), k))
    first: dict[str, int] = {}
    for step in steps:
        for item in extract_items([messages[step]]):
            first.setdefault(item.text, step)
    fallback = steps[-1] if steps else index
    return lambda item: first.get(item.text, fallback)


def classify(messages: Sequence[Message], index: int, item: Item, use: int) -> Classified:
    """Where `item` could come from again, at its use in `messages[use]` (module docstring)."""
    return _CLASSIFIED.get((messages,), (index, item, use), lambda: _classify(messages, index, item, use))


_CLASSIFIED: IdentityMemo[Classified] = IdentityMemo(20_001)


def _classify(messages: Sequence[Message], index: int, item: Item, use: int) -> Classified:
    session = _session(messages)
    newest_first = [at for at in reversed(session_text(messages).occurring(item, index)) if at < index]
    found = [_occurrence(session, at, item, use) for at in newest_first]
    for label in ("recoverable", "unknown"):
        best = next((c for c in found if c.label == label), None)
        if best is not None:
            return best
    if found:
        return found[0]  # the newest source: unrecoverable
    return Classified(item, "unknown", "not found in the history")  # preservation needs items from the history


def classify_newest_first(messages: Sequence[Message], index: int, item: Item, use: int) -> Classified:
    """`classify`, judging the sources newest first and stopping at the first recoverable one (the
    definition judges every source, then picks): the same answer, since the newest recoverable
    source wins, then the newest unknown one, then the newest. tests/scoring/test_fast_scores.py
    holds the two equal through the compactions' scores."""
    return _NEWEST_FIRST.get((messages,), (index, item, use), lambda: _newest_first(messages, index, item, use))


_NEWEST_FIRST: IdentityMemo[Classified] = IdentityMemo(20_001)


def _newest_first(messages: Sequence[Message], index: int, item: Item, use: int) -> Classified:
    session = _session(messages)
    newest: Classified | None = None
    unknown: Classified | None = None
    for at in reversed(session_text(messages).occurring(item, index)):
        if at >= index:
            continue
        found = _occurrence(session, at, item, use)
        if found.label == "recoverable":
            return found
        newest = newest or found
        unknown = unknown or (found if found.label == "unknown" else None)
    return unknown or newest or Classified(item, "unknown", "not found in the history")


class _Session:
    """A session's tool calls by id, and the calls that may have changed the environment."""

    def __init__(self, messages: Sequence[Message]) -> None:
        self.messages = messages
        self.calls: dict[str, tuple[ToolCallPart, CallEffect]] = {}
        self.change_at: list[int] = []  # message indexes of the calls below, in order
        self.changes: list[tuple[ToolCallPart, CallEffect]] = []  # writes, side effects and runs
        for at, message in enumerate(messages):
            for part in message.parts:
                if isinstance(part, ToolCallPart):
                    effect = call_effect(part)
                    self.calls[part.id] = (part, effect)
                    if effect.effect in ("write", "side_effect", "run"):
                        self.change_at.append(at)
                        self.changes.append((part, effect))

    def changes_between(self, start: int, end: int) -> list[tuple[ToolCallPart, CallEffect]]:
        """The changing calls made after message `start` and before message `end`."""
        return self.changes[bisect_right(self.change_at, start) : bisect_right(self.change_at, end - 1)]

    def still_in_files(self, item: Item, paths: Sequence[str], start: int, end: int) -> bool | None:
        """Whether `item`, read from `paths` at `start`, is still in them at `end`: True when no call
        between changed them or every change kept it, False when one removed it (an edit's old text
        held it and its new text does not, a rewrite without it, the file deleted or moved), None
        when a change cannot be read (a shell command rewrote the file)."""
        verdict: bool | None = True
        for call, effect in self.changes_between(start, end):
            if effect.effect == "run" or not any(same_file(p, c) for p in paths for c in effect.paths):
                continue
            kept = _kept_by(call, effect, item, paths)
            if kept is False:
                return False
            if kept is None:
                verdict = None
        return verdict


_SESSIONS: IdentityMemo[_Session] = IdentityMemo(8)


def _session(messages: Sequence[Message]) -> _Session:
    return _SESSIONS.of(messages, _Session)


def _occurrence(session: _Session, at: int, item: Item, use: int) -> Classified:
    """The label of one source: `item` in `session.messages[at]`, used at `use`."""
    message = session.messages[at]
    results = [(i, p) for i, p in enumerate(message.parts) if isinstance(p, ToolResultPart) and present(item, p.content)]
    if results:
        return _result(session, at, *results[-1], item, use)
    if message.role == "assistant":
        named = [
            path
            for part in message.parts
            if isinstance(part, ToolCallPart)
            for path in session.calls.get(part.id, (part, call_effect(part)))[1].paths
        ]
        if item.kind == "path" and any(same_file(item.text, path) for path in named):
            return Classified(item, "unknown", "a file named in the agent's own call: on disk, found again only by a search")
        return Classified(item, "unrecoverable", "the agent's own text or call")
    if message.role == "user":
        return Classified(item, "unrecoverable", "a user message")
    return Classified(item, "unrecoverable", f"a {message.role} message")


def _result(session: _Session, at: int, part_index: int, part: ToolResultPart, item: Item, use: int) -> Classified:
    """The label of a tool result holding `item`, by the call it answers."""
    found = session.calls.get(part.call_id)
    if found is None:
        return Classified(item, "unknown", "a tool result whose call is not in the history")
    if part.is_error:
        return Classified(item, "unrecoverable", "error output")
    effect = found[1]
    source = Source(at, part_index, math.ceil(len(part.content) / CHARS_PER_TOKEN))
    if effect.effect in ("read", "write") and effect.paths:
        kept = session.still_in_files(item, effect.paths, at, use)
        if kept is False:
            return Classified(item, "unrecoverable", "removed from the file since")
        if kept is None:
            return Classified(item, "unknown", "the file was rewritten since by a command")
        return Classified(
            item, "recoverable", f"a file {'read' if effect.effect == 'read' else 'written'}, still holding it", source
        )
    if effect.effect == "read":
        if session.changes_between(at, use):  # any write, side effect or run may change a listing
            return Classified(item, "unknown", "a listing or search, with changes since")
        return Classified(item, "recoverable", "a listing or search, nothing changed since", source)
    if effect.effect == "fetch":
        return Classified(item, "recoverable", "a URL fetched", source)
    if effect.effect == "time":
        return Classified(item, "unrecoverable", "output that depends on the time")
    if effect.effect == "side_effect":
        return Classified(item, "unrecoverable", "output of a command with side effects")
    if effect.effect == "write":
        return Classified(item, "unknown", "output of a write naming no file")
    return Classified(item, "unknown", "output of a command the session cannot judge")


_OLD_NEW = (("old_string", "new_string"), ("old_str", "new_str"), ("old_text", "new_text"))
_CONTENT_KEYS = ("content", "file_text", "text")


def _kept_by(call: ToolCallPart, effect: CallEffect, item: Item, paths: Sequence[str]) -> bool | None:
    """Whether a change of the file(s) `paths` keeps `item` in them: an edit whose old text held it
    keeps it only if its new text does; a rewrite keeps it if its content holds it; a patch if, in
    the file's section, no removed line holds it or an added line does; a deletion or move does
    not; a command that rewrites or resets files cannot be read (None)."""
    if effect.effect == "side_effect":
        command = effect.command or ""
        if _REMOVES.search(command):
            return False  # `rm`, `mv`: the file is gone from where it was read
        return None if _RESETS.search(command) else True  # `git add`, `cp a b`, `chmod`: its text is unchanged
    arguments = call.parsed_arguments()
    if call.name.lower() == "apply_patch":
        patch = str(arguments.get("input", "") if isinstance(arguments, dict) else call.arguments)
        return _kept_by_patch(patch, item, paths)
    if not isinstance(arguments, dict) or effect.command is not None:
        return None
    listed = arguments.get("edits")
    edits: list = listed if isinstance(listed, list) else [arguments]  # MultiEdit lists its edits
    for edit in edits:
        if not isinstance(edit, dict):
            return None
        for old_key, new_key in _OLD_NEW:
            if (
                isinstance(edit.get(old_key), str)
                and present(item, edit[old_key])
                and not present(item, str(edit.get(new_key, "")))
            ):
                return False
    content = next((arguments[k] for k in _CONTENT_KEYS if isinstance(arguments.get(k), str)), None)
    return present(item, content) if content is not None else True


_REMOVES = re.compile(r"(?:^|[;&|]\s*)(?:sudo\s+)?(?:rm|mv|unlink|git\s+rm|git\s+mv)\b")
_RESETS = re.compile(r"\bgit\s+(?:checkout|restore|reset|stash|apply|pull|merge|rebase|cherry-pick)\b")


def _kept_by_patch(patch: str, item: Item, paths: Sequence[str]) -> bool:
    """Whether a Codex patch keeps `item` in the sections that change one of `paths`."""
    heads = list(PATCH_FILE.finditer(patch))
    for head, following in zip(heads, [*heads[1:], None]):
        if not any(same_file(path, head.group(2).strip()) for path in paths):
            continue
        if head.group(1) == "Delete":
            return False
        lines = patch[head.end() : following.start() if following else len(patch)].splitlines()
        removed = "\n".join(line[1:] for line in lines if line.startswith("-"))
        added = "\n".join(line[1:] for line in lines if line.startswith("+"))
        if present(item, removed) and not present(item, added):
            return False
    return True
