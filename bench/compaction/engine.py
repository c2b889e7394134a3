"""The compaction engine: when to compact, calling the strategy, and keeping itself safe.

Before each LLM call the driver (an agent, or the replay) asks `Engine.before_call(context)`: before
every call, or only before those that start a prompt run when the harness says the design checks
only there (`Harness.checks`, which the driver honours: the engine does not know the calls' places).
The engine measures the context with the run's estimator, checks the trigger, calls the strategy
when it fires, and returns the new context with a `CompactionEvent` describing what happened
(inspect_ai's vocabulary: `tokens_before` / `tokens_after`). It knows only the strategy interface.

Safety, as production agents learned it:
- loop guard: a compaction that removes less than `min_reduction` (5%) of the context would fire
  again on the next call and the next; the engine stops threshold-triggered attempts after one,
  until a compaction (an emergency one) works again, or the context has grown by `min_reduction`
  of the window since: then what the strategy may remove has changed enough that an attempt can
  differ (a pruning strategy finds nothing beyond its protected tail at first, and more as the
  session grows), so it tries once more. A guard that held for good hid that a strategy could work.
  A strategy that returns the context unchanged (nothing it may remove) made no compaction: the
  event says so (`changed=False`, before = after), it counts as no compaction, and the guard stops
  further attempts of its kind.
- before and after are measured the same way: the meter on the context and on its result, neither
  anchored on the provider's last count (which describes only the context before), so a
  compaction's reduction is never an artefact of two different counts.
- failure breaker: after `max_failures` consecutive failed compactions (e.g. the summarizer keeps
  erroring) the engine stops trying rather than stalling every call.
- one size: a strategy's budgets (`CompactionRequest.count_tokens`) count in the units of the
  engine's sizes (`piece_size`), unless the harness says the design counts with its own estimator.
- overflow: when the provider rejects a request as too long (`compactlab.compaction.overflow` recognises each
  provider's message) or reports an input larger than the window (silent overflow), `emergency()`
  compacts regardless of the guard; the driver retries the call once.
The guard, the emergency path and task pinning are the engine's policies, not every agent's: a
preset turns off those its source does not have (`compactlab.contract.Harness`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from compactlab.contract import CompactionFailed, CompactionRequest, Context, Harness, Reason, Strategy, Summarizer, Trigger
from compactlab.sessions.model import Message


@dataclass(frozen=True)
class CompactionEvent:
    """What one compaction did, or why it did not: why it was asked, the strategy, the context's size
    and message count before and after (measured the same way), the summarizer's tokens and cost,
    and whether it failed, stalled the loop guard or changed nothing."""

    reason: Reason
    strategy: str
    tokens_before: int
    tokens_after: int
    messages_before: int
    messages_after: int
    messages_removed: int
    summarizer_input_tokens: int = 0
    summarizer_output_tokens: int = 0
    summarizer_cost_usd: float | None = None
    prompt_hash: str | None = None
    note: str = ""
    failed: str | None = None  # why the compaction failed, when it did
    stalled: bool = False  # the loop guard stopped further threshold-triggered attempts here
    changed: bool = True  # False: the strategy returned the context as it was (no compaction happened)

    @property
    def reduction(self) -> float:
        """The share of the context's tokens the compaction removed (0 for an empty context)."""
        return 1 - self.tokens_after / self.tokens_before if self.tokens_before else 0.0

    @property
    def compacted(self) -> bool:
        """Whether a compaction happened: the strategy succeeded and changed the context."""
        return self.failed is None and self.changed


Meter = Callable[[Context], int]


@dataclass
class Engine:
    """Decides when to compact and calls the strategy, with the safety rules of the module's doc.

    A driver (an agent, the replay) calls `before_call` before each LLM call and `emergency` when the
    provider rejected a request as too long; each returns the context to send and the event, if any.
    The fields after `max_failures` are its state between calls.
    """

    strategy: Strategy
    window: int
    meter: Meter  # the run's estimator applied to a whole context (may use known usage)
    count_tokens: Callable[[Sequence[Message]], int]  # the same estimator over a message list
    trigger: Trigger = field(default_factory=Trigger)
    summarizer: Summarizer | None = None
    harness: Harness = field(default_factory=Harness)  # the loop guard, the emergency path, task pinning
    text_tokens: Callable[[str], float] | None = None  # the provider's count of one text (`CompactionRequest`)
    # A faster equal of `piece_size_plain` the driver may offer (the replay's `Walk.piece_size`, which
    # sums the pieces' message estimates without building two contexts): None where it cannot tell.
    piece_sizes: Callable[[Sequence[Message]], int | None] | None = None
    min_reduction: float = 0.05
    max_failures: int = 3
    stalled: bool = False
    stalled_at: int = 0  # the context's size (the trigger's measure) when the guard last stopped attempts
    failures: int = 0
    # An emergency compaction that could not shrink the context will not do better on the next
    # call: further emergencies wait until some compaction has worked again.
    emergency_stalled: bool = False

    @property
    def breaker_open(self) -> bool:
        """Whether too many consecutive compactions failed for the engine to try again."""
        return self.failures >= self.max_failures

    def due(self, tokens: int, cache_expired: bool = False) -> Reason | None:
        """Why a context of `tokens` must be compacted now, or None (also while the guard or breaker
        holds); `cache_expired`: the provider's prompt cache has expired at this call (`Trigger.on_cache_expiry`)."""
        return None if tokens < self.attempts_from() else self.trigger.check(tokens, self.window, cache_expired)

    def attempts_from(self) -> float:
        """The loop guard and the failure breaker, the one definition `due` and `fires_from` both ask:
        the smallest context size at which they let a threshold attempt through. inf while the
        breaker holds; while the guard holds, the size it stopped at grown by what a working
        compaction must remove (`min_reduction` of the window), from where an attempt may differ
        from the one it stopped; otherwise no bound (-inf)."""
        if self.breaker_open:
            return math.inf
        return self.stalled_at + self.min_reduction * self.window if self.stalled else -math.inf

    @property
    def can_emergency(self) -> bool:
        """Whether `emergency` would try a compaction now (else it returns no event)."""
        return self.harness.emergency and not (self.emergency_stalled or self.breaker_open)

    def fires_from(self, cache_expired: bool = False) -> float:
        """The smallest context size `due` answers for (inf while the breaker holds)."""
        return max(self.trigger.fires_from(self.window, cache_expired), self.attempts_from())

    def before_call(
        self, context: Context, tokens: int | None = None, cache_expired: bool = False
    ) -> tuple[Context, CompactionEvent | None]:
        """Compact if the trigger fires (and the guard and breaker allow it).

        `tokens`: the context's size when the driver has already measured it with `meter`;
        `cache_expired`: the provider's prompt cache has expired at this call."""
        tokens = self.meter(context) if tokens is None else tokens
        reason = self.due(tokens, cache_expired)
        if reason is None:
            return context, None
        compacted, event = self._compact(context, reason)
        if event.stalled:
            self.stalled_at = tokens
        return compacted, event

    def size(self, context: Context) -> int:
        """The context's size for a compaction's before and after: the meter without the provider's
        last count, which describes only the uncompacted prompt (so before and after are alike)."""
        return self.meter(replace(context, known_usage=None) if context.known_usage else context)

    def piece_size(self, messages: Sequence[Message]) -> int:
        """`piece_size_plain`, by the driver's `piece_sizes` where it offers an answer (a strategy
        asks for hundreds of pieces per compaction: most of a sweep's counting)."""
        if self.piece_sizes is not None:
            found = self.piece_sizes(messages)
            if found is not None:
                return found
        return self.piece_size_plain(messages)

    def piece_size_plain(self, messages: Sequence[Message]) -> int:
        """A piece of a context (a kept tail, one message) in the units of `size`: what it adds to a
        prompt. The one size definition a strategy budgets with (`Harness.pieces` "measured"), so
        that what it keeps is what the next prompt is measured at."""
        return self.size(Context(tuple(messages))) - self.size(Context(()))

    def emergency(self, context: Context, reason: Reason = "overflow") -> tuple[Context, CompactionEvent | None]:
        """Compact now, whatever the loop guard says: the provider refused the request as too long.

        Returns no event when the previous emergency already failed to shrink the context and no
        compaction has worked since (the driver then records the overflow and goes on), and when the
        harness has no emergency path (a manual compaction, which a user asks for, still happens)."""
        if self.emergency_stalled or self.breaker_open or (reason != "manual" and not self.harness.emergency):
            return context, None
        compacted, event = self._compact(context, reason)
        self.emergency_stalled = not event.compacted or event.reduction < self.min_reduction
        return compacted, event

    def _compact(self, context: Context, reason: Reason) -> tuple[Context, CompactionEvent]:
        request = CompactionRequest(
            reason=reason,
            window=self.window,
            target_tokens=self.trigger.target_tokens(self.window),
            count_tokens=self.piece_size if self.harness.pieces == "measured" else self.count_tokens,
            summarizer=self.summarizer,
            prompt_tokens=lambda messages: self.size(Context(tuple(messages))),
            pin_task=self.harness.pin_task,
            text_tokens=self.text_tokens,
        )
        name = getattr(self.strategy, "name", type(self.strategy).__name__)
        try:
            result = self.strategy.compact(context, request)
        except CompactionFailed as exc:
            self.failures += 1
            tokens = self.size(context)
            event = CompactionEvent(
                reason, name, tokens, tokens, len(context.messages), len(context.messages), 0, failed=str(exc)
            )
            return context, event
        self.failures = 0
        tokens = self.size(context)
        if _unchanged(context, result.context):
            # Nothing was removed: no compaction to count or score, and trying again on the next
            # call would find the same nothing, so the guard holds for this kind of attempt.
            if (
                reason in ("threshold", "warning", "critical", "cache_expired") and self.harness.loop_guard
            ):  # `emergency` holds its own
                self.stalled = True
            event = CompactionEvent(
                reason,
                name,
                tokens,
                tokens,
                len(context.messages),
                len(context.messages),
                0,
                note=result.note or "nothing to remove",
                changed=False,
                stalled=self.stalled,
            )
            return context, event
        compacted = replace(result.context, compactions=context.compactions + 1, known_usage=None)
        after = self.meter(compacted)
        calls = result.summarizer_calls
        costs = [c.cost_usd for c in calls if c.cost_usd is not None]
        event = CompactionEvent(
            reason=reason,
            strategy=name,
            tokens_before=tokens,
            tokens_after=after,
            messages_before=len(context.messages),
            messages_after=len(compacted.messages),
            messages_removed=result.messages_removed,
            summarizer_input_tokens=sum(c.prompt_tokens for c in calls),
            summarizer_output_tokens=sum(c.output_tokens for c in calls),
            summarizer_cost_usd=sum(costs) if costs else None,
            prompt_hash=result.prompt_hash,
            note=result.note,
        )
        if event.reduction >= self.min_reduction:
            # A compaction that worked changed the context enough that a later attempt is no repeat
            # of the one the guard stopped: threshold attempts may go on.
            self.stalled = self.emergency_stalled = False
        elif reason not in ("overflow", "silent_overflow", "manual") and self.harness.loop_guard:
            self.stalled = True
            event = replace(event, stalled=True)
        return compacted, event


def _unchanged(before: Context, after: Context) -> bool:
    """Whether a strategy's result is the context it was given (the same messages and summary)."""
    if after.summary != before.summary or len(after.messages) != len(before.messages):
        return False
    return all(a is b or a == b for a, b in zip(after.messages, before.messages))
