"""The replay: walk a recorded session call by call as the agent would, compacting on the way.

For each recorded LLM call, the replay keeps the agent's context, asks the engine before the call
(which may compact), records what the prompt would have been, then appends the recorded new
messages. Replay is open-loop: after a compaction the agent would really have acted differently,
but the replay appends what it recorded anyway. So the numbers say what a strategy keeps and
removes from the context a real session built, and whether the facts its real next steps needed
were still there; they cannot say what the agent would have done instead.

Until a setting first compacts, its replay is the recorded session itself: those rows come from
the uncompacted replay every setting of a transcript shares (`bench.uncompacted`), and the walk
below starts at the first compaction.

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
from itertools import accumulate

from bench.context_windows import ContextWindows
from bench.engine import CompactionEvent, Engine, Trigger
from bench.estimators import Hybrid
from bench.metering import Meter
from bench.model import Message, Transcript
from bench.overflow import silent_overflow
from bench.preservation import preservation_at
from bench.uncompacted import COLUMNS, Uncompacted, uncompacted
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


# The per-call rows of a replay, as columns (one list per name; a replay has thousands of calls):
#   transcript, config, call (number), message_index, model, window,
#   recorded_prompt_tokens, output_tokens: what the source recorded for this call;
#   full_tokens, context_tokens, prefix_tokens, full_prefix_tokens: see the module docstring;
#   compactions_so_far; compacted_before: a compaction happened right before this call;
#   over_window: the replayed prompt would still not fit.
CALL_COLUMNS = ("transcript", "config", "call", "message_index", "model", "window", "recorded_prompt_tokens", "output_tokens",
                "full_tokens", "context_tokens", "prefix_tokens", "full_prefix_tokens", "compactions_so_far", "compacted_before",
                "over_window")
CallColumns = dict[str, list]


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
    calls: CallColumns
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
    first_call = next((m.call for m in transcript.messages if m.call is not None), None)
    if first_call is None:
        return Replayed({name: [] for name in CALL_COLUMNS}, [])
    window = (windows or ContextWindows()).lookup(first_call.model, transcript.context_window).tokens
    base = uncompacted(meter, window)
    walk = _Walk(transcript, config, base)
    engine = Engine(strategy=strategy, window=window, meter=walk.engine_meter, count_tokens=meter.count, trigger=trigger, summarizer=summarizer)
    recorded_mode = config.strategy == "recorded"
    # Nothing differs from the uncompacted replay before the first compaction: the first recorded
    # marker (recorded strategy), or the first call where the trigger fires or the prompt overflows.
    if recorded_mode:
        start = base.markers[0] if base.markers else len(transcript.messages)
    else:
        fires = (c for c, tokens in enumerate(base.trigger_tokens) if engine.due(tokens) or base.columns["over_window"][c])
        first = next(fires, None)
        start = len(transcript.messages) if first is None else base.positions[first]
    walk.start_at(start)
    markers = {m.at_message: m for m in transcript.compactions}
    for index in range(start, len(transcript.messages)):
        message = transcript.messages[index]
        if index in markers:
            walk.real_compaction_seen = True
            walk.compaction_marker_since_call = True
            if recorded_mode:
                marker = markers[index]
                engine.strategy = Recorded(summary=marker.summary)
                engine.emergency_stalled = False  # the production agent compacted here, whatever came before
                context, event = engine.emergency(walk.context(index), reason="manual" if marker.trigger == "manual" else "threshold")
                walk.note_compaction(event, index, context, fidelity_pending=True)
        if message.call is not None:
            if not recorded_mode and engine.due(tokens := walk.trigger_tokens(index)):
                context, event = engine.before_call(walk.context(index), tokens)
                walk.note_compaction(event, index, context)
            row = walk.measure(index, message)
            if row["over_window"] and not recorded_mode:
                # The provider would refuse this prompt: compact now, whatever the guard says, and retry once.
                context, event = engine.emergency(walk.context(index), reason="silent_overflow")
                if event is not None:
                    walk.note_compaction(event, index, context)
                    row = walk.measure(index, message)
            walk.record(row)
        walk.append(index)
    return Replayed(walk.columns(), walk.compactions, walk.compacted)


class _Walk:
    """The bookkeeping of one replay: the agent's context beside the full history.

    The context is `head` (the context the last compaction produced, or the empty one) followed
    by the transcript's messages from `tail_start` on; its running estimate is kept in step with
    the appends, and the message tuple is built only when a compaction or the cache model needs it
    (building it at every call would make a replay quadratic in its length).
    """

    def __init__(self, transcript: Transcript, config: StrategyConfig, base: Uncompacted):
        self.transcript = transcript
        self.config = config
        self.base = base
        self.meter = base.meter
        self.window = base.window
        self.uses_usage = isinstance(base.meter.estimator, Hybrid)
        self.head = Context(messages=())
        self.tail_start = 0
        self.known_usage: tuple[int, int] | None = None
        self.context_sum = 0.0  # estimate of the context's messages
        self.full_count = 0.0  # estimate of the full history
        self.real_compaction_seen = False
        self.compaction_marker_since_call = False
        self.compacted_since_call = False
        self.pending_fidelity: int | None = None  # index in self.compactions awaiting the next call
        self.rows: dict[str, list] = {name: [] for name in COLUMNS}
        self.compactions_so_far: list[int] = []
        self.compacted_before: list[bool] = []
        self.previous_prompt: tuple[tuple[Message, ...], int, int] = ((), 0, 0)  # (head, tail_start, end) at the last call
        self.compactions: list[CompactionRow] = []
        self.compacted: list[tuple[Message, ...]] = []
        self.last_built: Context | None = None
        # The last context the engine's meter counted anew (a compaction's result) with the running
        # sums of its messages' estimates: the walk takes its size and the cache model its shared
        # prefix from them instead of summing the same messages again.
        self.counted: tuple[tuple[Message, ...], list[float]] = ((), [])

    def start_at(self, index: int) -> None:
        """Take over the uncompacted replay's state before message `index` and its rows before it."""
        base = self.base
        calls = base.calls_before(index)
        for name in COLUMNS:
            self.rows[name] = base.columns[name][:calls]
        self.compactions_so_far = [0] * calls
        self.compacted_before = [False] * calls
        previous = base.positions[calls - 1] if calls else -1
        self.previous_prompt = ((), 0, max(previous, 0))
        self.context_sum = self.full_count = base.history_tokens[index]
        self.known_usage = base.known_usage[index]
        self.real_compaction_seen = bool(base.markers) and base.markers[0] < index
        self.compaction_marker_since_call = base.marker_between(previous, index)

    def context(self, index: int) -> Context:
        """The agent's context before message `index`, as one Context (built only when asked)."""
        head = self.head
        if self.tail_start == index and self.known_usage == head.known_usage:
            built = head
        else:
            messages = head.messages + self.transcript.messages[self.tail_start : index]
            built = Context(messages, head.summary, head.compactions, self.known_usage, head.archives)
        self.last_built = built
        return built

    def engine_meter(self, context: Context) -> int:
        # The engine measures the context before a compaction and the emergency path; the walk
        # keeps a running sum of its own context, so only another context (a fresh compaction's
        # result) is counted anew.
        own = self.last_built is not None and context.messages is self.last_built.messages
        if own and (context.known_usage is None or not self.uses_usage):
            return self._own_estimate()
        if context.known_usage is not None and self.uses_usage:
            return self.meter(context)
        # As `Meter.__call__` counts it: the same additions in the same order.
        self.counted = (context.messages, list(accumulate(map(self.meter.message_tokens, context.messages))))
        return round(self.meter.local.prompt_overhead + self._counted_sum(len(context.messages))) + self.meter.offset

    def _counted_sum(self, count: int) -> float:
        """The estimate of the first `count` messages of the last counted context (as `sum` adds them)."""
        return self.counted[1][count - 1] if count else 0

    def _own_estimate(self) -> int:
        """The running estimate of the walk's context, as the engine's meter would count it."""
        return round(self.context_sum + self.meter.local.prompt_overhead + self.meter.offset)

    def trigger_tokens(self, index: int) -> int:
        """What the engine's meter says of the context before the call at `index`."""
        if self.known_usage is None or not self.uses_usage:
            return self._own_estimate()
        # Known usage exists only while nothing was compacted, so the context is the history itself.
        upto, tokens = self.known_usage
        return round(tokens + sum(self.base.message_tokens[upto:index]))

    def append(self, index: int) -> None:
        tokens = self.base.message_tokens[index]
        self.context_sum = self.context_sum + tokens
        self.full_count += tokens
        call = self.transcript.messages[index].call
        if call is not None:
            # The provider's count describes the recorded prompt, which is this context only while
            # nothing has been compacted, by this replay or by the production agent.
            if self.head.compactions or self.real_compaction_seen:
                self.known_usage = None
            else:
                length = len(self.head.messages) + index - self.tail_start
                self.known_usage = (length + 1, call.prompt_tokens + call.output_tokens)

    def measure(self, index: int, message: Message) -> dict:
        """The row of the call at `index` with the current context (no side effects)."""
        call = message.call
        overhead = self.meter.local.prompt_overhead + self.meter.offset
        full_estimate = round(self.full_count + overhead)
        full_tokens = full_estimate if self.real_compaction_seen else call.prompt_tokens
        context_estimate = round(self.context_sum + overhead)
        removed = max(0, full_estimate - context_estimate)
        context_tokens = full_tokens - removed
        # What a prompt cache could serve: the part identical to the previous prompt. Append-only
        # since the last call, that is the whole previous prompt, in the same anchored units as the
        # baseline's (so an untouched session costs exactly what the baseline costs). After a
        # compaction, the unchanged head's share of the estimate applied to the anchored size.
        first = not self.rows["full_tokens"]
        if first:
            prefix_tokens = 0
        elif self.compacted_since_call:
            prompt = self.context(index).messages
            head, tail_start, end = self.previous_prompt
            shared = _shared_prefix(head + self.transcript.messages[tail_start:end], prompt)
            if self.counted[0] is self.head.messages and shared <= len(self.head.messages):
                shared_estimate = self._counted_sum(shared) + overhead
            else:
                shared_estimate = sum(self.meter.message_tokens(m) for m in prompt[:shared]) + overhead
            prefix_tokens = round(context_tokens * shared_estimate / max(1, context_estimate))
        else:
            prefix_tokens = self.rows["context_tokens"][-1]
        # Without compaction the previous prompt is a prefix of this one, unless the production
        # agent compacted in between (then only the system prompt and tools stay cached).
        previous_full = 0 if first else self.rows["full_tokens"][-1]
        full_prefix = 0 if first else self.meter.offset if self.compaction_marker_since_call else previous_full
        return {
            "message_index": index, "model": call.model, "recorded_prompt_tokens": call.prompt_tokens,
            "output_tokens": call.output_tokens, "full_tokens": full_tokens, "context_tokens": context_tokens,
            "prefix_tokens": min(prefix_tokens, context_tokens), "full_prefix_tokens": min(full_prefix, full_tokens),
            "over_window": silent_overflow(context_tokens, self.window),
        }

    def record(self, row: dict) -> None:
        if self.pending_fidelity is not None:
            pending = self.compactions[self.pending_fidelity]
            self.compactions[self.pending_fidelity] = _with_fidelity(pending, row["context_tokens"], row["recorded_prompt_tokens"])
            self.pending_fidelity = None
        self.compactions_so_far.append(self.head.compactions)
        self.compacted_before.append(self.compacted_since_call)
        self.previous_prompt = (self.head.messages, self.tail_start, row["message_index"])
        self.compacted_since_call = False
        self.compaction_marker_since_call = False
        for name in COLUMNS:
            self.rows[name].append(row[name])

    def note_compaction(self, event: CompactionEvent | None, index: int, context: Context, fidelity_pending: bool = False) -> None:
        """Take the engine's answer before message `index`: `context` is its result (unchanged when the
        compaction failed or did not run)."""
        if event is None:
            return
        if context is not self.last_built:
            if context.messages is not self.last_built.messages:  # else the running sum still holds
                if context.messages is self.counted[0]:
                    self.context_sum = self._counted_sum(len(context.messages))
                else:
                    self.context_sum = sum(self.meter.message_tokens(m) for m in context.messages)
            self.head, self.tail_start, self.known_usage = context, index, context.known_usage
            self.last_built = context
        scores = {}
        if not event.failed:
            found = preservation_at(self.transcript.messages, index, context.messages, K_STEPS)
            scores = {f"k{k}": _score_json(score) for k, score in found.items()}
        self.compactions.append(
            CompactionRow(
                transcript=self.transcript.id, config=self.config.label, call=len(self.rows["full_tokens"]), message_index=index,
                summary=context.summary, preservation=scores,
                **{f.name: getattr(event, f.name) for f in fields(CompactionEvent)},
            )
        )
        self.compacted.append(context.messages)
        if not event.failed:
            self.compacted_since_call = True
        if fidelity_pending:
            self.pending_fidelity = len(self.compactions) - 1

    def columns(self) -> CallColumns:
        calls = len(self.rows["full_tokens"])
        constant = {"transcript": self.transcript.id, "config": self.config.label, "window": self.window}
        columns = {**self.rows, "call": list(range(calls)), "compactions_so_far": self.compactions_so_far, "compacted_before": self.compacted_before}
        return {name: [constant[name]] * calls if name in constant else columns[name] for name in CALL_COLUMNS}


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
