"""The replay of a session without compaction: what every setting shares until it first compacts.

Until a setting's trigger first fires, its replay is the recorded session itself: the context is
the whole history, the strategy has not been called and the engine's state is untouched. So a
sweep computes these rows once per session, estimator and window, and each setting copies the
rows before its first compaction and walks on from there (`compactlab.replay.walk`). The numbers come from
the same arithmetic in the same order as the walk's, so the copied rows equal walked ones. Which
calls the trigger is asked before (`Harness.checks`) is decided here too (`checked`), once, for the
walk, the coasting fast path and the first stop alike.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from compactlab.compaction.overflow import silent_overflow
from compactlab.contract import CheckRule
from compactlab.memo import IdentityMemo
from compactlab.replay.prompt_cache import CacheState, cache_state
from compactlab.replay.prompt_size import hybrid_tokens, measured_ratio, measured_size, own_estimate
from compactlab.sessions.model import Message, ToolResultPart
from compactlab.tokens.estimators import Hybrid
from compactlab.tokens.metering import Meter

# The per-call columns the uncompacted replay decides; `compactlab.replay.walk` adds the constant ones.
COLUMNS = (
    "message_index",
    "model",
    "recorded_prompt_tokens",
    "output_tokens",
    "full_tokens",
    "context_tokens",
    "prefix_tokens",
    "full_prefix_tokens",
    "over_window",
)


@dataclass(frozen=True, eq=False)
class Uncompacted:
    meter: Meter
    window: int
    message_tokens: list[float]  # each message's estimate
    history_tokens: list[float]  # running sum of message_tokens before each message (one more entry than messages)
    known_usage: list[tuple[int, int] | None]  # the last prompt's size before each message: (messages it covers, tokens)
    markers: list[int]  # message indexes of the recorded (production) compactions, sorted
    trigger_tokens: list[int]  # what the engine measures before each call
    columns: dict[str, list]  # the call rows (COLUMNS)
    ratios: list[float]  # each call's measured ratio (`compactlab.replay.prompt_size.measured_ratio`)
    # Whether the hybrid anchor (the last prompt's size) adds that call's output (`Harness.anchor_output`).
    anchor_output: bool = True
    # Per call: whether the trigger is asked before it (`Harness.checks`; `run_starts`). Empty: every call.
    checked: tuple[bool, ...] = ()
    # The prompt cache at each call (`compactlab.replay.prompt_cache`): every setting's prefix rule reads it.
    cache: CacheState = CacheState(0, (), False)

    def asks_trigger(self, call: int) -> bool:
        """Whether the engine's trigger is asked before recorded call `call` (`Harness.checks`)."""
        return not self.checked or self.checked[call]

    @property
    def positions(self) -> list[int]:
        return self.columns["message_index"]

    def calls_before(self, index: int) -> int:
        """How many calls come before message `index`."""
        return bisect_left(self.positions, index)

    @cached_property
    def arrays(self) -> dict[str, np.ndarray]:
        """The lists as arrays, for finding stops and rowing stretches of calls at once (`compactlab.replay.fast.coasting`)."""
        return {
            "tokens": np.array(self.message_tokens, dtype=float),
            "history": np.array(self.history_tokens, dtype=float),
            "positions": np.array(self.positions, dtype=np.int64),
            "trigger": np.array(self.trigger_tokens, dtype=float),
            "full": np.array(self.columns["full_tokens"], dtype=float),
            "over": np.array(self.columns["over_window"], dtype=bool),
            "ratios": np.array(self.ratios, dtype=float),
            "outputs": np.array(self.columns["output_tokens"], dtype=float),
            "checked": np.array(self.checked or [True] * len(self.positions), dtype=bool),
        }

    def first_stop(self, fires_from: float, expired_from: float = np.inf, expired: np.ndarray | None = None) -> int | None:
        """The first call where a trigger that fires from `fires_from` tokens fires (at a call it is
        asked before), or from `expired_from` at the `expired` calls (its cache-expiry rule), or the
        prompt overflows: where a setting's replay starts to differ from this one."""
        peaks, first_over = self._stops
        stop = min(int(np.searchsorted(peaks, fires_from, side="left")), first_over)
        if expired is not None:
            arrays = self.arrays
            at = np.flatnonzero(expired & arrays["checked"] & (arrays["trigger"] >= expired_from))
            stop = min(stop, int(at[0])) if len(at) else stop
        return stop if stop < len(peaks) else None

    @cached_property
    def _stops(self) -> tuple[np.ndarray, int]:
        """The largest trigger size up to each call among the calls the trigger is asked before, and
        the first call that overflows: every setting of a sweep asks `first_stop`, which is then a
        binary search."""
        over = np.flatnonzero(self.arrays["over"])
        asked = np.where(self.arrays["checked"], self.arrays["trigger"], -np.inf)
        return np.maximum.accumulate(asked), int(over[0]) if len(over) else len(self.arrays["over"])

    def marker_between(self, after: int, before: int) -> bool:
        """Whether a recorded compaction marker lies at an index in (after, before)."""
        at = bisect_left(self.markers, after + 1)
        return at < len(self.markers) and self.markers[at] < before


_REPLAYS: IdentityMemo[Uncompacted] = IdentityMemo(8)


def uncompacted(meter: Meter, window: int, anchor_output: bool = True, checks: CheckRule = "every-call") -> Uncompacted:
    """The uncompacted replay of `meter.session` (kept for the few last sessions asked for), its
    trigger asked before the calls `checks` says (`Harness.checks`)."""
    return _REPLAYS.get((meter,), (window, anchor_output, checks), lambda: _compute(meter, window, anchor_output, checks))


def run_starts(messages: Sequence[Message]) -> tuple[bool, ...]:
    """Per recorded call of `messages`: whether it starts a prompt run, the calls a design that
    checks only between runs asks its trigger before (`Harness.checks` "run-start"). The first
    call starts one, and so does a call with a user message (not a tool result, not an
    instruction) since the previous call: the user's next prompt. A call after tool results alone
    continues its run's tool loop."""
    starts: list[bool] = []
    prompted = True  # the first call starts the first run
    for message in messages:
        if message.call is not None:
            starts.append(prompted)
            prompted = False
        elif message.role == "user" and not message.instruction and not any(isinstance(p, ToolResultPart) for p in message.parts):
            prompted = True
    return tuple(starts)


def _compute(meter: Meter, window: int, anchor_output: bool, checks: CheckRule) -> Uncompacted:
    messages = meter.session.messages
    markers = sorted({m.at_message for m in meter.session.compactions})
    first_marker = markers[0] if markers else len(messages)
    uses_usage = isinstance(meter.estimator, Hybrid)
    prompt_overhead, offset = meter.local.prompt_overhead, meter.offset
    overhead = prompt_overhead + offset
    tokens = [meter.message_tokens(m) for m in messages]
    history = [0.0]
    known_before: list[tuple[int, int] | None] = [None]
    columns: dict[str, list] = {name: [] for name in COLUMNS}
    trigger_tokens: list[int] = []
    ratios: list[float] = []
    running = 0.0
    known: tuple[int, int] | None = None
    marker_since_call = False
    previous_full = 0
    ratio = 1.0  # the last call's ratio before the first real compaction: it sizes the history after it
    marker_set = set(markers)
    cache = cache_state([m.call for m in messages if m.call is not None])
    edited: list[bool] = []
    for index, message in enumerate(messages):
        marker_since_call = marker_since_call or index in marker_set
        call = message.call
        if call is not None:
            real_compaction_seen = first_marker <= index
            if known is None or not uses_usage:
                trigger_tokens.append(own_estimate(running, prompt_overhead, offset))
            else:  # hybrid: the last prompt's size plus the messages after it
                covered = history[known[0]] if meter.counts_newer else running  # usage alone: nothing since
                trigger_tokens.append(hybrid_tokens(known[1], running, covered))
            # After the production agent compacted, the recorded count describes its compacted
            # prompt, not this history: the history is sized with the last ratio measured before.
            full = measured_size(overhead, running, ratio) if real_compaction_seen else call.prompt_tokens
            if not real_compaction_seen:
                ratio = measured_ratio(full, overhead, running)
            number = len(columns["full_tokens"])
            columns["message_index"].append(index)
            columns["model"].append(call.model)
            columns["recorded_prompt_tokens"].append(call.prompt_tokens)
            columns["output_tokens"].append(call.output_tokens)
            columns["full_tokens"].append(full)
            columns["context_tokens"].append(full)
            # A recorded prompt that shrank with no production compaction between was edited in place.
            edited.append(bool(number) and not real_compaction_seen and not marker_since_call and full < previous_full)
            columns["prefix_tokens"].append(cache.prefix(number, previous_full, full, edited[-1]))
            # After a production compaction only the system prompt and tools stay cached.
            shared = cache.after_change(call.model, offset) if marker_since_call else previous_full
            columns["full_prefix_tokens"].append(cache.prefix(number, shared, full, edited[-1]))
            columns["over_window"].append(silent_overflow(full, window))
            ratios.append(ratio)
            previous_full = full
            marker_since_call = False
            # The anchor covers the prompt, and the reply with its output tokens unless the design
            # counts the prompt alone (then the reply is estimated as a new message).
            known = (index + 1, full + call.output_tokens) if anchor_output else (index, full)
        running += tokens[index]
        history.append(running)
        known_before.append(known)
    checked = run_starts(messages) if checks == "run-start" else ()
    cache = replace(cache, edited=tuple(edited))
    return Uncompacted(
        meter, window, tokens, history, known_before, markers, trigger_tokens, columns, ratios, anchor_output, checked, cache
    )
