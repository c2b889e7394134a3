"""The replay: walk a recorded session call by call as the agent would, compacting on the way.

For each recorded LLM call, the replay keeps the agent's context, asks the engine before the call
(which may compact), records what the prompt would have been, then appends the recorded new
messages. Replay is open-loop: after a compaction the agent would really have acted differently,
but the replay appends what it recorded anyway. So the numbers say what a strategy keeps and
removes from the context a real session built, and whether the facts its real next steps needed
were still there; they cannot say what the agent would have done instead.

Until a setting first compacts, its replay is the recorded session itself: those rows come from
the uncompacted replay every setting of a transcript shares (`compactlab.replay.uncompacted`), and the walk
below starts at the first compaction.

Token numbers per call (one definition, `compactlab.replay.prompt_size`, used by every figure a run reports):
- `full_tokens`: the prompt without compaction. Before any real compaction in the source this is
  the provider's recorded count; after one, the source itself was compacted, so it is the
  history's estimate sized with the last ratio measured before that compaction.
- `context_tokens`: the prompt with this strategy's compactions, measured: the fixed part plus
  the estimate of its messages times the call's measured ratio (recorded ÷ estimated history), so
  it is the recorded count exactly while nothing was removed.
- `prefix_tokens`: the part of the prompt identical to the previous call's prompt (what a
  provider's prompt cache could serve); a compaction changes the prompt from the first changed
  message on, which is where the cache stops.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from compactlab.compaction.engine import Engine
from compactlab.contract import Strategy, Summarizer, Trigger
from compactlab.replay.strategy_config import StrategyConfig
from compactlab.replay.uncompacted import uncompacted
from compactlab.replay.walk import CALL_COLUMNS, CallColumns, CompactionRow, Walk
from compactlab.strategies.recorded import Recorded
from compactlab.strategies.registry import get_strategy
from compactlab.tokens.context_windows import ContextWindows
from compactlab.tokens.metering import Meter
from compactlab.transcripts.context_readings import readings_after_compactions, with_readings
from compactlab.transcripts.model import Message, Transcript

__all__ = ["CALL_COLUMNS", "CallColumns", "CompactionRow", "Replayed", "StrategyConfig", "replay"]


@dataclass(frozen=True)
class Replayed:
    calls: CallColumns
    compactions: list[CompactionRow]
    compacted: list[tuple[Message, ...]] = field(default_factory=list)  # each compaction's context after it
    # How many leading call rows are the uncompacted replay's (the same, but for the config label,
    # for every setting of the transcript with the same estimator and window).
    shared_calls: int = 0


def replay(
    transcript: Transcript,
    config: StrategyConfig,
    windows: ContextWindows | None = None,
    summarizer: Summarizer | None = None,
    meter: Meter | None = None,
    strategy: Strategy | None = None,
) -> Replayed:
    """Replay `transcript` under `config`. `strategy`: the one `config` names, when the caller has
    it already (a run makes each setting's once, not once per transcript)."""
    strategy = strategy if strategy is not None else get_strategy(config.strategy, **dict(config.settings))
    trigger = config.trigger or getattr(strategy, "trigger", None) or Trigger()
    estimator = config.estimator or getattr(strategy, "estimator", None) or "hybrid"
    if meter is None or meter.estimator_name != estimator or meter.transcript is not transcript:
        meter = Meter(transcript, estimator)
    first_call = next((m.call for m in transcript.messages if m.call is not None), None)
    if first_call is None:
        return Replayed({name: [] for name in CALL_COLUMNS}, [])
    windows = (windows or ContextWindows()).with_table(getattr(strategy, "context_windows", ()))
    window = windows.lookup(first_call.model, transcript.context_window).tokens
    base = uncompacted(meter, window)
    walk = Walk(transcript, config, base)
    engine = Engine(
        strategy=strategy,
        window=window,
        meter=walk.engine_meter,
        count_tokens=meter.count,
        trigger=trigger,
        summarizer=summarizer,
    )
    recorded_mode = config.strategy == "recorded"
    # Nothing differs from the uncompacted replay before the first compaction: the first recorded
    # marker (recorded strategy), or the first call where the trigger fires or the prompt overflows.
    if recorded_mode:
        start = base.markers[0] if base.markers else len(transcript.messages)
    else:
        first = base.first_stop(engine.fires_from())
        start = len(transcript.messages) if first is None else base.positions[first]
    walk.start_at(start)
    markers = {m.at_message: m for m in transcript.compactions}
    index = start
    while index < len(transcript.messages):
        while not recorded_mode and walk.can_coast(index):  # calls that need no engine are rowed in bulk
            index, before = walk.coast(index, engine.fires_from(), engine.can_emergency), index
            if index == before or index == len(transcript.messages):
                break
        if index == len(transcript.messages):
            break
        message = transcript.messages[index]
        if index in markers:
            walk.real_compaction_seen = True
            walk.compaction_marker_since_call = True
            if recorded_mode:
                marker = markers[index]
                engine.strategy = Recorded(summary=marker.summary)
                engine.emergency_stalled = False  # the production agent compacted here, whatever came before
                context, event = engine.emergency(
                    walk.context(index), reason="manual" if marker.trigger == "manual" else "threshold"
                )
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
        index += 1
    # A real compaction no call followed is checked against Claude Code's own /context reading.
    compactions = with_readings(walk.compactions, readings_after_compactions(transcript)) if recorded_mode else walk.compactions
    return Replayed(walk.columns(), compactions, walk.compacted, base.calls_before(start))
