"""The strategy contract: the only thing the engine knows about a compaction strategy, and when to compact.

A strategy is a frozen dataclass whose fields are its settings, with one method:

    compact(context: Context, request: CompactionRequest) -> CompactionResult

It gets the agent's current context and what the engine allows it to use (a token counter bound
to the run's estimator, the window, a target, a summarizer), and returns the new message list.
It never sees the replay, the recorded future or the metrics. Its result must depend only on
the context and the request (no state, no randomness): a run makes each compaction once for all
the settings that reach the same context with equal strategies (`compactlab.replay.shared_compactions`).
Registration: see `compactlab.strategies.registry`. `Trigger` says when the engine asks for a compaction.

This module is the bottom of the compaction side: it imports only the session model.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal, Protocol

from compactlab.sessions.model import LLMCall, Message

Reason = Literal["threshold", "warning", "critical", "cache_expired", "overflow", "silent_overflow", "manual"]


@dataclass(frozen=True)
class Context:
    """What the agent would send next, and what the engine tracks about it."""

    messages: tuple[Message, ...]
    summary: str | None = None
    compactions: int = 0
    # The provider's own count for a prefix of `messages`: (number of messages it covers, tokens).
    known_usage: tuple[int, int] | None = None
    # Full pre-compaction histories kept by the archive strategy, newest last.
    archives: tuple[tuple[Message, ...], ...] = ()
    # How many messages right after the summary the last compaction kept verbatim (its kept tail):
    # pi summarizes only what came after its previous compaction and drops that tail at the next one.
    kept_tail: int = 0


@dataclass(frozen=True)
class SummaryRequest:
    """What a summarizer is asked: summarize `messages` (optionally updating `previous_summary`).

    `prompt` and `system` are the rendered prompt template, for LLM summarizers; `prompt_hash`
    identifies the template so results can name the exact prompt. Extractive summarizers read
    `messages` directly and ignore the prompt: one that says so (`reads_prompt = False`) gets
    empty `prompt`, `system` and `prompt_hash`, and the strategy does not render them. `files_tracked`: the
    strategy appends the file lists itself (through its template), so a summarizer need not list files.
    """

    messages: tuple[Message, ...]
    prompt: str
    system: str
    prompt_hash: str
    max_output_tokens: int
    purpose: Literal["history", "turn_prefix", "update"] = "history"
    previous_summary: str | None = None
    files_tracked: bool = False


@dataclass(frozen=True)
class SummaryResponse:
    """What a summarizer answers: the summary text, and the LLM call that wrote it (if one did)."""

    text: str
    usage: LLMCall | None = None  # None for summarizers that call no LLM


class Summarizer(Protocol):
    """What writes a summary for a strategy: an LLM client, or an extractive stand-in that calls none."""

    @property
    def name(self) -> str:
        """The summarizer's name, as results record it (a model, or "extractive")."""
        ...

    # Optional: `reads_prompt = False` for a summarizer that reads only `SummaryRequest.messages`
    # (a strategy then skips rendering a prompt no one reads; see docs/performance.md).

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        """The summary `request` asks for; raises `CompactionFailed` when none can be written."""
        ...


@dataclass(frozen=True)
class CompactionRequest:
    """What the engine allows a strategy to use for one compaction: why it was asked (`reason`), the
    window, the size to get under (`target_tokens`), the run's token counter and the summarizer."""

    reason: Reason
    window: int
    target_tokens: int  # the prompt size the engine would like the context to end up at or below
    count_tokens: Callable[[Sequence[Message]], int]  # the estimate of some messages (a piece of a context)
    summarizer: Summarizer | None = None
    # The size of a whole prompt made of these messages, in the units of `target_tokens` and of the
    # engine's before/after: it adds what every prompt holds besides its messages (e.g. a system
    # prompt and tools the recording lacks). None: `count_tokens`.
    prompt_tokens: Callable[[Sequence[Message]], int] | None = None
    # Whether the task statement (the first user message) is kept verbatim (`Harness.pin_task`).
    pin_task: bool = True
    # The provider's count of one text on its own (what a tool that counts a file's tokens sees):
    # the model family's fitted tokenizer where one is shipped. None: not known.
    text_tokens: Callable[[str], float] | None = None

    def prompt_size(self, messages: Sequence[Message]) -> int:
        """The size of a prompt of `messages`, to compare with `target_tokens`."""
        return (self.prompt_tokens or self.count_tokens)(messages)


@dataclass(frozen=True)
class CompactionResult:
    """What a strategy returns: the new context, how many messages it removed (a summary replacing
    several counts them), the summarizer calls it made and a one-line note of what it did."""

    context: Context
    messages_removed: int
    summarizer_calls: tuple[LLMCall, ...] = ()
    prompt_hash: str | None = None
    note: str = ""  # one line for people: what the strategy did


class Strategy(Protocol):
    """A compaction strategy: a frozen dataclass whose fields are its settings (see the module's doc).

    Its result depends only on the context and the request; it never sees the replay, the recorded
    future or the metrics. It raises `CompactionFailed` when it cannot compact.
    """

    @property
    def name(self) -> str:
        """The strategy's registered name (a class attribute: "truncate", "summarize", ...)."""
        ...

    def compact(self, context: Context, request: CompactionRequest) -> CompactionResult:
        """The compacted `context`, made with what `request` allows."""
        ...


class CompactionFailed(RuntimeError):
    """A strategy could not compact (e.g. its summarizer failed); the engine counts failures."""


# Starts the note of a compaction a strategy finished another way after a step of it failed (its
# summarizer, a pipeline stage): the engine hands on only the note, and a run counts these
# fallbacks per strategy, so that a fallback never passes for the strategy's own result.
FALLBACK_MARK = "[fell back]"


def fallback_note(failure: object, outcome: str) -> str:
    """The note of a compaction finished another way after `failure`: marked, so a run counts it."""
    return f"{FALLBACK_MARK} {failure}; {outcome}"


def fell_back(note: str | None) -> bool:
    """Whether a compaction's note says it fell back (see `fallback_note`)."""
    return note is not None and FALLBACK_MARK in note


WindowRule = Literal["scaled", "real", "as-is"]
PieceRule = Literal["measured", "estimator"]
CheckRule = Literal["every-call", "run-start"]


@dataclass(frozen=True)
class Harness:
    """What the engine and the replay do around a strategy, which a preset sets as its source does
    (`compactlab.strategies.presets`); a plain strategy gets these defaults.

    pin_task: the task statement (the first user message) is kept verbatim by every compaction
        (instructions always are).
    loop_guard: after a threshold-triggered compaction that removed less than the engine's
        `min_reduction` (or nothing), further threshold attempts wait until one works again. Off:
        the trigger is obeyed at every call, as an agent without such a guard does.
    emergency: a prompt over the window is compacted at once and the call retried. Off: the
        over-window call stays over the window (the agent's request fails) and the trigger acts
        before a later call.
    anchor_output: the hybrid estimate starts from the last call's prompt plus its output (the
        output is in the next prompt); off, from its prompt alone, as a design that counts
        `prompt_tokens` only and estimates every newer message, the reply included.
    window: how absolute sizes in the trigger (`absolute`, `reserve_tokens`) meet a simulated window
        (a run's `--window`): "scaled" multiplies them by simulated ÷ the model's real window, so
        they keep their share of the window; "real" runs the preset at the model's real window,
        whatever the run simulates; "as-is" keeps them as written at the simulated window, as the
        engine's code does for a model of that window (pi's 16,384 reserve).
    pieces: what a strategy's `CompactionRequest.count_tokens` counts a piece of the context (a kept
        tail, one output) in. "measured": the units of the engine's sizes (the window's, the
        trigger's, a compaction's before and after), so a tail kept at a quarter of the window is a
        quarter of it when the next prompt is measured; counted with the bare estimator it was a
        quarter of the estimate, up to twice that measured, and the next call overflowed (issue 27
        §3). "estimator": the bare estimator, as a design that counts its tail with its own
        estimate (pi's and opencode's chars/4) does, mismatch included.
    checks: where the driver asks the trigger. "every-call": before every call. "run-start": only
        before a call that starts a prompt run (the first call, and a call with a user message since
        the previous call: `compactlab.replay.uncompacted.run_starts`), as a design that checks
        between prompt runs and never between the calls of a tool loop (pi's `_checkCompaction`, at
        a run's end and before the next prompt). The emergency path (an over-window prompt) is
        asked at every call either way, as the provider refuses any prompt over the window.
    """

    pin_task: bool = True
    loop_guard: bool = True
    emergency: bool = True
    anchor_output: bool = True
    window: WindowRule = "scaled"
    pieces: PieceRule = "measured"
    checks: CheckRule = "every-call"


@dataclass(frozen=True)
class VersionReserve:
    """The reserve an agent keeps below the window from its version `first` to `last` (both
    included; compared number by number, "2.1.9" < "2.1.19"), with its own per-model reserves."""

    first: str
    last: str
    reserve_tokens: int
    reserve_by_model: tuple[tuple[str, int], ...] = ()

    def covers(self, version: str) -> bool:
        """Whether `version` is one of `first`..`last`."""
        return version_key(self.first) <= version_key(version) <= version_key(self.last)


def version_key(version: str) -> tuple[int, ...]:
    """A dotted version as numbers, for ordering: "2.1.19" -> (2, 1, 19); what is not a number is 0."""
    return tuple(int(part) if part.isdigit() else 0 for part in version.split("-", 1)[0].split("."))


@dataclass(frozen=True)
class Trigger:
    """When to compact.

    fraction: compact when the context reaches this share of the window (0.8).
    absolute: compact at this many tokens, whatever the window (0 disables).
    reserve_tokens: tokens kept free for the model's output: also compact when the context
        exceeds window − reserve.
    warning / critical: two levels (seed 003: 0.75 and 0.9). When set, `fraction` is ignored:
        the warning level fires a "warning" compaction, the critical level a "critical" one.
    target: share of the window a compaction aims to get under (strategies may use it as budget).
    reserve_by_model: model-name prefixes whose reserve differs from `reserve_tokens` (the longest
        matching prefix wins; `for_model` applies it): Claude Code reserves the model's output limit.
    reserve_by_version: the agent versions whose reserves differ (`VersionReserve`; `for_session`
        applies the first that covers the session's version): a version none covers, or a session
        that records none, keeps `reserve_tokens` and `reserve_by_model`.
    reserve_inclusive: the reserve rule fires at window − reserve itself (opencode's count >= usable),
        not only over it (pi's and Claude Code's `>`).
    on_cache_expiry: also compact, at a call made when the provider's prompt cache has expired anyway
        (a pause past its lifetime, `compactlab.replay.prompt_cache`), once the context reaches this
        share of the window: the whole prompt is written again there whatever the strategy does, so
        compacting then costs no cached prefix. None: no such rule.
    cache_margin_seconds: count a call as one after the cache expired when the pause before it came
        within this many seconds of the cache's lifetime (the cache would have expired soon after).
    """

    fraction: float = 0.8
    absolute: int = 0
    reserve_tokens: int = 0
    warning: float | None = None
    critical: float | None = None
    target: float = 0.5
    reserve_by_model: tuple[tuple[str, int], ...] = ()
    reserve_by_version: tuple[VersionReserve, ...] = ()
    reserve_inclusive: bool = False
    on_cache_expiry: float | None = None
    cache_margin_seconds: float = 0.0

    def for_session(self, model: str, version: str | None = None) -> Trigger:
        """This trigger for one model run by one agent version: the reserves of the version's
        `reserve_by_version` entry, if any, then the model's (`for_model`)."""
        band = next((band for band in self.reserve_by_version if version and band.covers(version)), None)
        if band is not None:
            return replace(
                self, reserve_tokens=band.reserve_tokens, reserve_by_model=band.reserve_by_model, reserve_by_version=()
            ).for_model(model)
        return replace(self, reserve_by_version=()).for_model(model) if self.reserve_by_version else self.for_model(model)

    def for_model(self, model: str) -> Trigger:
        """This trigger for one model: its reserve from `reserve_by_model` where a prefix matches."""
        matches = [(prefix, reserve) for prefix, reserve in self.reserve_by_model if model.startswith(prefix)]
        if not matches:
            return self
        return replace(self, reserve_tokens=max(matches, key=lambda match: len(match[0]))[1], reserve_by_model=())

    def levels(self, window: int, cache_expired: bool = False) -> list[tuple[float, Reason]]:
        """The trigger's one definition: each of its rules as the smallest context size it fires at
        and the reason it gives, in the order `check` asks them (the first that fires names the
        compaction), at a call after the prompt cache expired (`cache_expired`) or not. Every rule
        is a lower bound on the size, so `fires_from` is their minimum and a replay finds the first
        call the trigger fires at without asking call by call."""
        levels: list[tuple[float, Reason]] = []
        if self.critical is not None:
            levels.append((self.critical * window, "critical"))
        if self.warning is not None:
            levels.append((self.warning * window, "warning"))
        if self.warning is None and self.critical is None:
            levels.append((self.fraction * window, "threshold"))
        if self.absolute:
            levels.append((self.absolute, "threshold"))
        if self.reserve_tokens:
            # over window − reserve (sizes are whole tokens), or at it where the engine compares with >=
            levels.append((window - self.reserve_tokens + (0 if self.reserve_inclusive else 1), "threshold"))
        if cache_expired and self.on_cache_expiry is not None:  # last: a size rule above names the compaction
            levels.append((self.on_cache_expiry * window, "cache_expired"))
        return levels

    def check(self, tokens: int, window: int, cache_expired: bool = False) -> Reason | None:
        """Why a context of `tokens` (whole tokens) in `window` must be compacted, or None when it need not be."""
        return next((reason for size, reason in self.levels(window, cache_expired) if tokens >= size), None)

    def fires_from(self, window: int, cache_expired: bool = False) -> float:
        """The smallest context size `check` fires at (inf: never)."""
        return min((size for size, _ in self.levels(window, cache_expired)), default=math.inf)

    def target_tokens(self, window: int) -> int:
        """The size a compaction aims to get under in `window`."""
        return int(self.target * window)

    def scaled(self, factor: float) -> Trigger:
        """This trigger with its absolute sizes (`absolute`, `reserve_tokens`) times `factor`: the
        same shares of a window `factor` times the one they were set for (`Harness.window`)."""
        return replace(self, absolute=round(self.absolute * factor), reserve_tokens=round(self.reserve_tokens * factor))
