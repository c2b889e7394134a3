"""The replay: walk a recorded session call by call as the agent would, compacting on the way.

For each recorded LLM call, the replay keeps the agent's context, asks the engine before the call
(which may compact), records what the prompt would have been, then appends the recorded new
messages. Replay is open-loop: after a compaction the agent would really have acted differently,
but the replay appends what it recorded anyway. So the numbers say what a strategy keeps and
removes from the context a real session built, and whether the facts its real next steps needed
were still there; they cannot say what the agent would have done instead.

Token numbers per call:
- `full_tokens`: the prompt without compaction. Before any real compaction in the source this is
  the provider's recorded count; after one, the source itself was compacted, so it is estimated
  (the run's estimator plus the per-session constant).
- `context_tokens`: the prompt with this strategy's compactions: `full_tokens` minus the
  estimated size of what the strategy removed. Anchoring on the recorded count keeps the
  estimator's error out of most of the number.
- `prefix_tokens`: the part of the prompt identical to the previous call's prompt (what a
  provider's prompt cache could serve); a compaction changes the prompt from the first changed
  message on, which is where the cache stops.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace

from bench.context_windows import ContextWindows
from bench.engine import CompactionEvent, Engine, Trigger
from bench.estimators import Hybrid
from bench.metering import Meter
from bench.model import Message, Transcript
from bench.overflow import silent_overflow
from bench.preservation import preservation_at
from strategies.base import Context, Summarizer
from strategies.recorded import Recorded
from strategies.registry import get_strategy

K_STEPS = (1, 5)


@dataclass(frozen=True)
class StrategyConfig:
    """One setting to replay: a strategy (or preset) with its settings, trigger and estimator."""

    label: str
    strategy: str
    settings: tuple[tuple[str, object], ...] = ()
    trigger: Trigger | None = None  # None: the preset's trigger, else the engine default (0.8)
    estimator: str | None = None  # None: the preset's estimator, else hybrid


@dataclass(frozen=True)
class CallRow:
    transcript: str
    config: str
    call: int
    message_index: int
    model: str
    window: int
    recorded_prompt_tokens: int
    output_tokens: int
    full_tokens: int
    context_tokens: int
    prefix_tokens: int
    full_prefix_tokens: int
    compactions_so_far: int
    compacted_before: bool  # a compaction happened right before this call
    over_window: bool  # the replayed prompt would still not fit


@dataclass(frozen=True)
class CompactionRow:
    transcript: str
    config: str
    call: int
    message_index: int
    reason: str
    strategy: str
    tokens_before: int
    tokens_after: int
    messages_before: int
    messages_after: int
    messages_removed: int
    summarizer_input_tokens: int
    summarizer_output_tokens: int
    summarizer_cost_usd: float | None
    prompt_hash: str | None
    note: str
    failed: str | None
    stalled: bool
    summary: str | None
    preservation: dict = field(default_factory=dict)  # {"k1": {...}, "k5": {...}}
    # For recorded compactions: the replay's predicted prompt of the next call vs the recorded one.
    fidelity_predicted: int | None = None
    fidelity_recorded: int | None = None


@dataclass(frozen=True)
class Replayed:
    calls: list[CallRow]
    compactions: list[CompactionRow]
    compacted: list[tuple[Message, ...]] = field(default_factory=list)  # each compaction's context after it


def replay(
    transcript: Transcript,
    config: StrategyConfig,
    windows: ContextWindows | None = None,
    summarizer: Summarizer | None = None,
    meter: Meter | None = None,
) -> Replayed:
    strategy = get_strategy(config.strategy, **dict(config.settings))
    trigger = config.trigger or getattr(strategy, "trigger", None) or Trigger()
    estimator = config.estimator or getattr(strategy, "estimator", None) or "hybrid"
    if meter is None or meter.estimator_name != estimator or meter.transcript is not transcript:
        meter = Meter(transcript, estimator)
    positions = [i for i, m in enumerate(transcript.messages) if m.call is not None]
    if not positions:
        return Replayed([], [])
    model = transcript.messages[positions[0]].call.model
    window = (windows or ContextWindows()).lookup(model, transcript.context_window).tokens
    recorded_mode = config.strategy == "recorded"
    markers = {m.at_message: m for m in transcript.compactions}
    walk = _Walk(transcript, config, meter, window)

    uses_usage = isinstance(meter.estimator, Hybrid)

    def trigger_meter(context: Context) -> int:
        # The engine measures the context before every call; the walk already keeps its running
        # sum, so only a context the walk does not hold (a fresh compaction) is counted anew.
        if (context.known_usage is None or not uses_usage) and context.messages is walk.context.messages:
            return round(walk.context_estimate())
        return meter(context)

    engine = Engine(strategy=strategy, window=window, meter=trigger_meter, count_tokens=meter.count, trigger=trigger, summarizer=summarizer)
    for index, message in enumerate(transcript.messages):
        if index in markers:
            walk.real_compaction_seen = True
            walk.compaction_marker_since_call = True
            if recorded_mode:
                marker = markers[index]
                engine.strategy = Recorded(summary=marker.summary)
                engine.emergency_stalled = False  # the production agent compacted here, whatever came before
                walk.context, event = engine.emergency(walk.context, reason="manual" if marker.trigger == "manual" else "threshold")
                if event is not None:
                    walk.note_compaction(event, index, fidelity_pending=True)
        if message.call is not None:
            if not recorded_mode:
                walk.context, event = engine.before_call(walk.context)
                if event is not None:
                    walk.note_compaction(event, index)
            row = walk.measure(index, message)
            if row.over_window and not recorded_mode:
                # The provider would refuse this prompt: compact now, whatever the guard says, and retry once.
                walk.context, event = engine.emergency(walk.context, reason="silent_overflow")
                if event is not None:
                    walk.note_compaction(event, index)
                    row = walk.measure(index, message)
            walk.record(row)
        walk.append(message)
    return Replayed(walk.calls, walk.compactions, walk.compacted)


class _Walk:
    """The bookkeeping of one replay: the agent's context beside the full history."""

    def __init__(self, transcript: Transcript, config: StrategyConfig, meter: Meter, window: int):
        self.transcript = transcript
        self.config = config
        self.meter = meter
        self.window = window
        self.context = Context(messages=())
        self.full_count = 0.0  # running estimate of the full history
        self.real_compaction_seen = False
        self.calls: list[CallRow] = []
        self.compactions: list[CompactionRow] = []
        self.compacted: list[tuple[Message, ...]] = []
        self.previous_prompt: tuple[Message, ...] = ()
        self.compacted_since_call = False
        self.compaction_marker_since_call = False
        self.pending_fidelity: int | None = None  # index in self.compactions awaiting the next call
        # Running estimate of the context's messages, kept in step with appends; recomputed only
        # when a compaction replaces the message tuple (so a replay is linear in its length).
        self.context_sum = 0.0
        self.summed_messages: tuple[Message, ...] = ()

    def _context_sum(self) -> float:
        if self.context.messages is not self.summed_messages:
            self.context_sum = sum(self.meter.message_tokens(m) for m in self.context.messages)
            self.summed_messages = self.context.messages
        return self.context_sum

    def context_estimate(self) -> float:
        return self._context_sum() + self.meter.local.prompt_overhead + self.meter.offset

    def append(self, message: Message) -> None:
        base = self._context_sum()
        self.context = Context(
            messages=(*self.context.messages, message),
            summary=self.context.summary,
            compactions=self.context.compactions,
            archives=self.context.archives,
            known_usage=self._known_usage(message),
        )
        tokens = self.meter.message_tokens(message)
        self.full_count += tokens
        self.context_sum = base + tokens
        self.summed_messages = self.context.messages

    def _known_usage(self, message: Message) -> tuple[int, int] | None:
        # The provider's count describes the recorded prompt, which is this context only while
        # nothing has been compacted, by this replay or by the production agent.
        if message.call is None:
            return self.context.known_usage
        if self.context.compactions or self.real_compaction_seen:
            return None
        return len(self.context.messages) + 1, message.call.prompt_tokens + message.call.output_tokens

    def measure(self, index: int, message: Message) -> CallRow:
        """The row of the call at `index` with the current context (no side effects)."""
        call = message.call
        overhead = self.meter.local.prompt_overhead + self.meter.offset
        full_estimate = round(self.full_count + overhead)
        full_tokens = full_estimate if self.real_compaction_seen else call.prompt_tokens
        context_estimate = round(self._context_sum() + overhead)
        removed = max(0, full_estimate - context_estimate)
        context_tokens = full_tokens - removed
        prompt = self.context.messages
        # What a prompt cache could serve: the part identical to the previous prompt. Append-only
        # since the last call, that is the whole previous prompt, in the same anchored units as the
        # baseline's (so an untouched session costs exactly what the baseline costs). After a
        # compaction, the unchanged head's share of the estimate applied to the anchored size.
        previous = self.calls[-1] if self.calls else None
        if previous is None:
            prefix_tokens = 0
        elif self.compacted_since_call:
            shared = _shared_prefix(self.previous_prompt, prompt)
            shared_estimate = sum(self.meter.message_tokens(m) for m in prompt[:shared]) + overhead
            prefix_tokens = round(context_tokens * shared_estimate / max(1, context_estimate))
        else:
            prefix_tokens = previous.context_tokens
        # Without compaction the previous prompt is a prefix of this one, unless the production
        # agent compacted in between (then only the system prompt and tools stay cached).
        full_prefix = 0 if previous is None else self.meter.offset if self.compaction_marker_since_call else previous.full_tokens
        return CallRow(
            transcript=self.transcript.id, config=self.config.label, call=len(self.calls), message_index=index,
            model=call.model, window=self.window, recorded_prompt_tokens=call.prompt_tokens, output_tokens=call.output_tokens,
            full_tokens=full_tokens, context_tokens=context_tokens, prefix_tokens=min(prefix_tokens, context_tokens),
            full_prefix_tokens=min(full_prefix, full_tokens), compactions_so_far=self.context.compactions,
            compacted_before=self.compacted_since_call, over_window=silent_overflow(context_tokens, self.window),
        )

    def record(self, row: CallRow) -> None:
        if self.pending_fidelity is not None:
            pending = self.compactions[self.pending_fidelity]
            self.compactions[self.pending_fidelity] = _with_fidelity(pending, row.context_tokens, row.recorded_prompt_tokens)
            self.pending_fidelity = None
        self.previous_prompt = self.context.messages
        self.compacted_since_call = False
        self.compaction_marker_since_call = False
        self.calls.append(row)

    def note_compaction(self, event: CompactionEvent, index: int, fidelity_pending: bool = False) -> None:
        scores = {}
        if not event.failed:
            found = preservation_at(self.transcript.messages, index, self.context.messages, K_STEPS)
            scores = {f"k{k}": _score_json(score) for k, score in found.items()}
        self.compactions.append(
            CompactionRow(
                transcript=self.transcript.id, config=self.config.label, call=len(self.calls), message_index=index,
                summary=self.context.summary, preservation=scores,
                **{f.name: getattr(event, f.name) for f in fields(CompactionEvent)},
            )
        )
        self.compacted.append(self.context.messages)
        if not event.failed:
            self.compacted_since_call = True
        if fidelity_pending:
            self.pending_fidelity = len(self.compactions) - 1


def _shared_prefix(previous: Sequence[Message], current: Sequence[Message]) -> int:
    shared = 0
    for a, b in zip(previous, current):
        if a is not b and a != b:
            break
        shared += 1
    return shared


def _score_json(score) -> dict:
    return {
        "score": score.score,
        "needed": [f"{i.kind}:{i.text}" for i in score.needed],
        "lost": [f"{i.kind}:{i.text}" for i in score.lost],
    }


def _with_fidelity(row: CompactionRow, predicted: int, recorded: int) -> CompactionRow:
    return replace(row, fidelity_predicted=predicted, fidelity_recorded=recorded)
