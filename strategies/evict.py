"""Recoverability-aware eviction: shed what the agent can read again, oldest first (after CWL)."""

from __future__ import annotations

import json
from bisect import bisect_right
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import ClassVar

from compactlab.contract import CompactionRequest, CompactionResult, Context
from compactlab.memo import text_cache
from compactlab.sessions.messages import pinned_indexes
from compactlab.sessions.model import Message, ToolCallPart, ToolResultPart
from compactlab.sessions.tool_effects import CallEffect, call_effect, same_file
from compactlab.strategies.base import setting

STUB = "[evicted: {what}; {how}]"
MARK = "[evicted: "  # a tool output (or call) that starts with this was evicted before: never again
TIERS = ("recoverable", "superseded", "episode")


@dataclass(frozen=True)
class _Candidate:
    tier: int  # the index in TIERS: evicted in this order, oldest first within a tier
    message: int
    part: int
    call: ToolCallPart  # the output's call, and what it did
    effect: CallEffect
    result: ToolResultPart  # the output (an episode's call is evicted with the stub of its output)
    template: str  # `Evict.stub`

    @property
    def stub(self) -> str:
        """The line that replaces it: written only for the candidates eviction reaches (it stops at
        the target), as counting the lines of every older output at every compaction cost."""
        what, how = _stub_texts(self.tier, self.effect, self.call, self.result)
        return self.template.format(what=what, how=how)


@dataclass(frozen=True)
class Evict:
    """When over budget, replace old tool outputs the agent can get back with a one-line stub that
    says how (the path, the command), in the order of Context Window Lifecycle's policy: first the
    outputs whose source is still there unchanged (a file read and not written since, a listing or
    search with no change since, a URL fetched), oldest first; then outputs superseded by a later
    one (the same file read again, the same command run again); then, with `evict_episodes`, older
    action episodes whose effect persists in files (a write or edit call: its arguments and output
    become a stub naming the file). It stops as soon as the context is within the engine's target.

    User messages, the task statement, instructions and the newest `keep_last_steps` assistant
    steps (with their tool outputs) are never touched; no message is removed, so every call keeps
    its result. Deterministic, needs no LLM; running it again changes nothing already evicted.
    """

    name = "evict"
    source: ClassVar[str] = (
        "Semenov & Dorofeev 2026, 'Beyond Compaction: Structured Context Eviction for Long-Horizon Agents' (Context "
        "Window Lifecycle, arXiv:2606.11213, abstract): a deterministic, LLM-free policy evicts in priority order when a "
        "token budget is exceeded, drops 'the oldest-and-most-recoverable content', preserves user turns and the context "
        "the agent is actively reasoning over, and sheds action episodes whose effects are already persisted in the "
        "environment; the tiers and stubs are compactlab issue 34's reading of that"
    )
    deviations: ClassVar[str] = (
        "CWL's agent annotates its trajectory as typed, dependency-linked episodes as it works; a replay has only the "
        "session, so an episode is one tool call with its output, its type is read from the tool's name and command "
        "(compactlab.sessions.tool_effects), and the only dependencies seen are 'the same file or command later'; "
        "'actively reasoning over' is approximated by the newest keep_last_steps steps; the paper's own token "
        "accounting is the engine's trigger and target; in an open-loop replay the agent never re-reads what a stub "
        "points to, so what that would cost is measured instead (re-acquisition cost, compactlab.scoring.recoverability)"
    )

    keep_last_steps: int = setting(3, "the newest assistant steps, with their tool outputs, never evicted (the work in hand)")
    evict_episodes: bool = setting(True, "third tier: evict older write and edit calls whose effect is in the files")
    stub: str = setting(STUB, "the one line that replaces an evicted output; {what} it was, {how} to get it back")

    def compact(self, context: Context, request: CompactionRequest) -> CompactionResult:
        if self.keep_last_steps < 0:
            raise ValueError(f"keep_last_steps must be >= 0, got {self.keep_last_steps}")
        messages = list(context.messages)
        candidates = sorted(self._candidates(context.messages), key=lambda c: (c.tier, c.message, c.part))
        size = request.prompt_size(messages)
        counts = dict.fromkeys(TIERS, 0)
        for candidate in candidates:
            if size <= request.target_tokens:
                break
            before = messages[candidate.message]
            after = _with_stub(before, candidate.part, candidate.stub)
            removed = request.count_tokens([before]) - request.count_tokens([after])
            if removed <= 0:  # an output no larger than its stub stays
                continue
            messages[candidate.message] = after
            size -= removed
            counts[TIERS[candidate.tier]] += 1
        done = ", ".join(f"{n} {tier}" for tier, n in counts.items() if n)
        if not done:
            return CompactionResult(context=context, messages_removed=0, note=f"nothing to evict ({len(candidates)} candidates)")
        over = "" if size <= request.target_tokens else "; still over the target: nothing else may be evicted"
        new = replace(context, messages=tuple(messages), known_usage=None)
        return CompactionResult(context=new, messages_removed=0, note=f"evicted {done}{over}")

    def _candidates(self, messages: tuple[Message, ...]) -> list[_Candidate]:
        """Every evictable tool output (and, for episodes, call) before the protected tail, with its tier."""
        steps = [i for i, m in enumerate(messages) if m.role == "assistant"]
        if not self.keep_last_steps:
            protected_from = len(messages)
        else:
            protected_from = steps[-self.keep_last_steps] if self.keep_last_steps <= len(steps) else 0
        pinned = pinned_indexes(messages)
        calls: dict[str, tuple[int, ToolCallPart, CallEffect]] = {}
        for at, message in enumerate(messages):
            for part in message.parts:
                if isinstance(part, ToolCallPart):
                    calls[part.id] = (at, part, call_effect(part))
        later = _IndexedLater(messages, calls)
        found = []
        for at, message in enumerate(messages[:protected_from]):
            if at in pinned:
                continue
            for index, part in enumerate(message.parts):
                if not isinstance(part, ToolResultPart) or part.content.startswith(MARK) or part.call_id not in calls:
                    continue
                call_at, call, effect = calls[part.call_id]
                tier = _tier(effect, part, at, later)
                if tier == 2 and not self.evict_episodes:
                    continue
                if tier is not None:
                    found.append(_Candidate(tier, at, index, call, effect, part, self.stub))
                    if tier == 2 and not call.from_text and call_at not in pinned:  # the episode's call goes too
                        found.append(
                            _Candidate(tier, call_at, messages[call_at].parts.index(call), call, effect, part, self.stub)
                        )
        return found


class _Later:
    """What happened after a message of the context: changes, and reads of the same file or command."""

    def __init__(self, messages: tuple[Message, ...], calls: dict[str, tuple[int, ToolCallPart, CallEffect]]) -> None:
        ordered = sorted(calls.values(), key=lambda c: c[0])
        self.at = [at for at, _, _ in ordered]
        self.effects = [effect for _, _, effect in ordered]

    def after(self, at: int) -> list[CallEffect]:
        return self.effects[bisect_right(self.at, at) :]

    def changed(self, at: int, paths: tuple[str, ...]) -> bool:
        """Whether a call after message `at` changed anything (`paths` empty) or one of `paths`."""
        for effect in self.after(at):
            if effect.effect == "run" and not paths:
                return True
            if effect.effect in ("write", "side_effect") and (not paths or _overlap(paths, effect.paths)):
                return True
        return False

    def repeated(self, at: int, effect: CallEffect) -> bool:
        """Whether the same file is read (or written) again after `at`, or the same command run again."""
        for other in self.after(at):
            if effect.command is not None and other.command == effect.command:
                return True
            if effect.paths and other.effect in ("read", "write") and _overlap(effect.paths, other.paths):
                return True
        return False


class _IndexedLater(_Later):
    """`_Later`'s answers from the last position of each kind of later effect, found once per
    context: asking every output about every later call made a compaction quadratic in the
    context's calls (most of this strategy's time in a sweep). `_Later` is the definition;
    `tests/strategies/test_evict_later.py` holds the two equal on real sessions."""

    def __init__(self, messages: tuple[Message, ...], calls: dict[str, tuple[int, ToolCallPart, CallEffect]]) -> None:
        super().__init__(messages, calls)
        # Position order: the last one written for a key is its largest position.
        self.last_change = -1  # of any run, write or side effect (what `changed` asks without paths)
        self.last_command: dict[str, int] = {}
        self.writes: dict[str, list[tuple[int, tuple[str, ...]]]] = {}  # write or side effect, by file name
        self.reads_and_writes: dict[str, list[tuple[int, tuple[str, ...]]]] = {}
        for at, effect in zip(self.at, self.effects):
            if effect.effect in ("run", "write", "side_effect"):
                self.last_change = at
            if effect.command is not None:
                self.last_command[effect.command] = at
            for kind, index in (("write side_effect", self.writes), ("read write", self.reads_and_writes)):
                if effect.effect in kind.split():
                    for name in _file_names(effect.paths):
                        index.setdefault(name, []).append((at, effect.paths))
        self._last: dict[tuple[int, tuple[str, ...]], int] = {}

    def _last_overlapping(self, index: dict[str, list[tuple[int, tuple[str, ...]]]], paths: tuple[str, ...]) -> int:
        """The last position in `index` of an effect on a file of `paths` (-1: none). A file named
        alike is one `same_file` can match: it matches only paths that end in the same name."""
        key = (id(index), paths)
        found = self._last.get(key)
        if found is None:
            found = -1
            for name in _file_names(paths):
                for at, other in index.get(name, ()):
                    if at > found and _overlap(paths, other):
                        found = at
            self._last[key] = found
        return found

    def changed(self, at: int, paths: tuple[str, ...]) -> bool:
        if not paths:
            return self.last_change > at
        return self._last_overlapping(self.writes, paths) > at

    def repeated(self, at: int, effect: CallEffect) -> bool:
        if effect.command is not None and self.last_command.get(effect.command, -1) > at:
            return True
        return bool(effect.paths) and self._last_overlapping(self.reads_and_writes, effect.paths) > at


def _file_name(path: str) -> str:
    """The last segment of a path, which every path `same_file` takes for the same file ends in."""
    return path.removeprefix("./").rsplit("/", 1)[-1]


@text_cache
@lru_cache(maxsize=100_000)
def _file_names(paths: tuple[str, ...]) -> tuple[str, ...]:
    """The distinct `_file_name`s of `paths`, in order: asked for every call of a context at every
    compaction, of the same few paths."""
    return tuple(dict.fromkeys(map(_file_name, paths)))


def _tier(effect: CallEffect, result: ToolResultPart, at: int, later: _Later) -> int | None:
    """The tier of one tool output (None: never evicted)."""
    if not result.is_error and (effect.effect == "fetch" or (effect.effect == "read" and not later.changed(at, effect.paths))):
        return 0
    if later.repeated(at, effect):
        return 1
    if effect.effect == "write" and effect.paths:
        return 2
    return None


def _stub_texts(tier: int, effect: CallEffect, call: ToolCallPart, result: ToolResultPart) -> tuple[str, str]:
    """What an output of `tier` was and how to get it back (the stub's {what} and {how})."""
    if tier == 2:
        return f"{call.name} of {', '.join(effect.paths[:3])} (applied to the file)", f"read {effect.paths[0]} to see it"
    what = f"output of {call.name} ({len(result.content.splitlines())} lines)"
    if tier == 0:
        return what, effect.describe(call.name)
    return what, "superseded by a later output of the same " + ("command" if effect.command else "file")


def _overlap(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    return any(same_file(x, y) for x in a for y in b)


def _with_stub(message: Message, index: int, stub: str) -> Message:
    """`message` with its part at `index` replaced by the stub: a tool output's content, or a call's
    arguments (the call keeps its id and name, so its output still answers it)."""
    part = message.parts[index]
    if isinstance(part, ToolResultPart):
        new: ToolResultPart | ToolCallPart = replace(part, content=stub)
    else:
        assert isinstance(part, ToolCallPart), part  # only outputs and write calls are candidates
        new = replace(part, arguments=json.dumps({"evicted": stub}))
    return replace(message, parts=(*message.parts[:index], new, *message.parts[index + 1 :]))
