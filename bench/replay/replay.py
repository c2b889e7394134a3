"""The replay: walk a recorded session call by call as the agent would, compacting on the way.

For each recorded LLM call, the replay keeps the agent's context, asks the engine before the call
(which may compact), records what the prompt would have been, then appends the recorded new
messages. Replay is open-loop: after a compaction the agent would really have acted differently,
but the replay appends what it recorded anyway. So the numbers say what a strategy keeps and
removes from the context a real session built, and whether the facts its real next steps needed
were still there; they cannot say what the agent would have done instead.

`replay_plain` is the definition: every message in order, the engine asked before every call (its
trigger only before the calls the preset's harness checks at, `Harness.checks`).
`replay` gives the same rows faster (what a run uses): it starts at the setting's first
compaction with the uncompacted replay's rows before it, and rows the calls between compactions in
bulk (`compactlab.replay.fast`); tests/replay/test_fast_path_equals_plain.py checks the two agree on every bundled dataset.

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

import math
from dataclasses import dataclass, field, replace

import numpy as np

from compactlab.compaction.engine import Engine
from compactlab.contract import Strategy, Summarizer
from compactlab.replay.fast.coasting import Coasting
from compactlab.replay.row_schema import CALL_COLUMNS, CallColumns, CompactionRow
from compactlab.replay.setting import Setting, estimator_of, harness_of, window_and_trigger
from compactlab.replay.uncompacted import Uncompacted, uncompacted
from compactlab.replay.walk import Walk
from compactlab.scoring.compaction_scores import compaction_scores
from compactlab.sessions.context_readings import fidelity_exclusions, readings_after_compactions, with_readings
from compactlab.sessions.model import CompactionMarker, Message, Session
from compactlab.strategies.recorded import Recorded
from compactlab.strategies.registry import get_strategy, resolved
from compactlab.tokens.context_windows import ContextWindows
from compactlab.tokens.metering import Meter

__all__ = ["CALL_COLUMNS", "CallColumns", "CompactionRow", "Replayed", "Setting", "replay", "replay_plain"]


@dataclass(frozen=True)
class Replayed:
    calls: CallColumns
    compactions: list[CompactionRow]
    compacted: list[tuple[Message, ...]] = field(default_factory=list)  # each compaction's context after it
    # How many leading call rows are the uncompacted replay's (the same, but for the setting label,
    # for every setting of the session with the same estimator and window).
    shared_calls: int = 0


@dataclass
class _Setup:
    """What both replays start from: the engine with its strategy, the walk, the uncompacted replay."""

    session: Session
    engine: Engine
    walk: Walk
    base: Uncompacted
    recorded_mode: bool  # the production agent's own compactions, where its markers are
    markers: dict[int, CompactionMarker]
    excluded: dict[int, str]  # real compactions whose next prompt is no test of the replay, and why
    recorded: Recorded | None  # the `recorded` strategy's settings (each real compaction fills in its summary)


def _set_up(
    session: Session,
    setting: Setting,
    windows: ContextWindows | None,
    summarizer: Summarizer | None,
    meter: Meter | None,
    strategy: Strategy | None,
    fast: bool = False,
) -> _Setup | None:
    """None for a session without recorded calls (nothing to replay); `fast`: the engine sizes a
    strategy's pieces and its contexts with the walk's equals of their definitions (`Walk.piece_size`,
    `Walk.engine_meter`)."""
    # A strategy built by hand gets the strategies its settings name built here, as the registry does.
    strategy = resolved(strategy) if strategy is not None else get_strategy(setting.strategy, **dict(setting.settings))
    estimator = estimator_of(strategy, setting.estimator)
    if meter is None or meter.estimator_name != estimator or meter.session is not session:
        meter = Meter(session, estimator)
    first_call = next((m.call for m in session.messages if m.call is not None), None)
    if first_call is None:
        return None
    window, trigger = window_and_trigger(
        strategy, setting.trigger, windows or ContextWindows(), first_call.model, session.context_window, session.agent_version
    )
    harness = harness_of(strategy)
    base = uncompacted(meter, window, harness.anchor_output, harness.checks)
    walk = Walk(session, setting, base)
    engine = Engine(
        strategy=strategy,
        window=window,
        meter=walk.engine_meter if fast else walk.engine_meter_plain,
        count_tokens=meter.count,
        trigger=trigger,
        summarizer=summarizer,
        harness=harness,
        text_tokens=meter.text_counter(),
        piece_sizes=walk.piece_size if fast else None,
    )
    markers = {m.at_message: m for m in session.compactions}
    recorded = setting.strategy == "recorded" or setting.at_real_compactions
    inner = getattr(strategy, "strategy", strategy)  # a run shares a setting's compactions through a wrapper
    return _Setup(
        session,
        engine,
        walk,
        base,
        recorded,
        markers,
        fidelity_exclusions(session) if recorded else {},
        inner if isinstance(inner, Recorded) else None,
    )


def _expired_calls(engine: Engine, base: Uncompacted) -> np.ndarray | None:
    """The calls the trigger's cache-expiry rule (`Trigger.on_cache_expiry`) can fire at (None: the
    trigger has no such rule): the same for the whole replay, so found once."""
    if engine.trigger.on_cache_expiry is None:
        return None
    return base.cache.expired_calls(engine.trigger.cache_margin_seconds)


def _expiry_stops(engine: Engine, expired: np.ndarray | None) -> tuple[float, np.ndarray | None]:
    """Where the cache-expiry rule can fire now: from what size, at which calls (None: nowhere), for
    the fast path's stops (the size moves with the engine's loop guard)."""
    expired_from = engine.fires_from(cache_expired=True)
    if expired is None or expired_from >= engine.fires_from():
        return math.inf, None
    return expired_from, expired


def _step(setup: _Setup, index: int) -> None:
    """Message `index`: a production compaction noted there, the engine asked before a call (its
    trigger where the harness checks, `Harness.checks`), the call's row, then the message appended."""
    walk, engine, message = setup.walk, setup.engine, setup.session.messages[index]
    if index in setup.markers:
        walk.production_compaction()
        if setup.recorded_mode:
            marker = setup.markers[index]
            if setup.recorded is not None:  # the production agent's own summary and what it kept
                kept = tuple(setup.session.messages[i] for i in marker.kept)
                engine.strategy = replace(setup.recorded, summary=marker.summary, kept=kept)
            engine.emergency_stalled = False  # the production agent compacted here, whatever came before
            context, event = engine.emergency(walk.context(index), reason="manual" if marker.trigger == "manual" else "threshold")
            walk.note_compaction(event, index, context, real=True, excluded=setup.excluded.get(index))
    if message.call is not None:
        number = len(walk.rows["full_tokens"])
        asked = not setup.recorded_mode and setup.base.asks_trigger(number)
        expired = setup.base.cache.expired_within(number, engine.trigger.cache_margin_seconds)  # (`Trigger.on_cache_expiry`)
        if asked and engine.due(tokens := walk.trigger_tokens(index), expired):
            context, event = engine.before_call(walk.context(index), tokens, expired)
            walk.note_compaction(event, index, context)
        row = walk.measure(index, message)
        if row["over_window"] and not setup.recorded_mode:
            # The provider would refuse this prompt: compact now, whatever the guard says, and retry once.
            context, event = engine.emergency(walk.context(index), reason="silent_overflow")
            if event is not None:
                walk.note_compaction(event, index, context)
                row = walk.measure(index, message)
        walk.record(row)
    walk.append(index)


def _replayed(setup: _Setup, shared_calls: int) -> Replayed:
    walk = setup.walk
    # A real compaction no call followed is checked against Claude Code's own /context reading.
    readings = readings_after_compactions(setup.session) if setup.recorded_mode else None
    compactions = with_readings(walk.compactions, readings) if readings is not None else walk.compactions
    return Replayed(walk.columns(), _scored(setup, compactions), walk.compacted, shared_calls)


def _scored(setup: _Setup, rows: list[CompactionRow]) -> list[CompactionRow]:
    """The compaction rows with their scores, made after the walk from the contexts it kept (as
    the model judge scores them, `compactlab.scoring.judge`); a failed compaction has none."""
    messages, walk = setup.session.messages, setup.walk
    scored = []
    for row, before, after in zip(rows, walk.before, walk.compacted):
        if row.event.failed is None:
            # Every compaction of the recorded mode is the production agent's own (a real one).
            preservation, reacquired = compaction_scores(messages, row.message_index, before, after, setup.recorded_mode)
            row = replace(row, preservation=preservation, reacquisition=reacquired)
        scored.append(row)
    return scored


def replay_plain(
    session: Session,
    setting: Setting,
    windows: ContextWindows | None = None,
    summarizer: Summarizer | None = None,
    meter: Meter | None = None,
    strategy: Strategy | None = None,
) -> Replayed:
    """The definition of a replay: every message of `session` in order, the engine asked before
    every recorded call. (`replay` gives the same rows faster.)"""
    setup = _set_up(session, setting, windows, summarizer, meter, strategy)
    if setup is None:
        return Replayed({name: [] for name in CALL_COLUMNS}, [])
    for index in range(len(session.messages)):
        _step(setup, index)
    return _replayed(setup, 0)


def replay(
    session: Session,
    setting: Setting,
    windows: ContextWindows | None = None,
    summarizer: Summarizer | None = None,
    meter: Meter | None = None,
    strategy: Strategy | None = None,
) -> Replayed:
    """Replay `session` under `setting`, as `replay_plain` does, with the speed machinery of
    `compactlab.replay.fast`. `strategy`: the one `setting` names, when the caller has it already (a
    run makes each setting's once, not once per session)."""
    setup = _set_up(session, setting, windows, summarizer, meter, strategy, fast=True)
    if setup is None:
        return Replayed({name: [] for name in CALL_COLUMNS}, [])
    walk, engine, base = setup.walk, setup.engine, setup.base
    expired = _expired_calls(engine, base)
    # Nothing differs from the uncompacted replay before the first compaction: the first recorded
    # marker (recorded strategy), or the first call where the trigger fires or the prompt overflows.
    if setup.recorded_mode:
        start = base.markers[0] if base.markers else len(session.messages)
    else:
        first = base.first_stop(engine.fires_from(), *_expiry_stops(engine, expired))
        start = len(session.messages) if first is None else base.positions[first]
    walk.start_at(start)
    coasting = Coasting()
    index = start
    while index < len(session.messages):
        while not setup.recorded_mode and coasting.can_coast(walk, index):  # calls that need no engine are rowed in bulk
            stops = _expiry_stops(engine, expired)
            index, before = coasting.coast(walk, index, engine.fires_from(), engine.can_emergency, *stops), index
            if index == before or index == len(session.messages):
                break
        if index == len(session.messages):
            break
        _step(setup, index)
        index += 1
    return _replayed(setup, base.calls_before(start))
