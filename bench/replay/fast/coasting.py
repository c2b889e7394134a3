"""Coasting: the calls between two compactions rowed in bulk, on arrays, instead of one by one.

Most of a replay is stretches where nothing can happen: the trigger does not fire and the prompt
fits. `Coasting.coast` finds the next call that needs the engine, sizes every call before it with
the kernel `Walk.measure` and `Walk.trigger_tokens` call (`compactlab.replay.prompt_size`), over
arrays, with the running sum as a cumulative sum (which adds one term at a time, as the running
sum does), and hands the rows to the walk (`Walk.coasted`), which alone writes its state. It must equal the plain replay
(`compactlab.replay.replay.replay_plain`); tests/replay/test_fast_path_equals_plain.py checks it on every bundled dataset.
"""

from __future__ import annotations

import numpy as np

from compactlab.replay.prompt_size import hybrid_tokens, measured_size, own_estimate
from compactlab.replay.walk import Walk


class Coasting:
    """How far a replay looks ahead for its next stop, and when it tries again after a stop."""

    def __init__(self) -> None:
        self.look_ahead = 16  # calls `coast` looks at
        self.coast_from = 0  # message index before which `coast` is not tried again
        self.backoff = 0  # calls to walk one by one after a `coast` that rowed none

    def can_coast(self, walk: Walk, index: int) -> bool:
        """Whether the calls from message `index` on can be rowed in bulk (`coast`): nothing is
        pending from a compaction and the provider's counts no longer describe the context."""
        return (
            index >= self.coast_from
            and bool(walk.rows["full_tokens"])
            and not walk.compacted_since_call
            and walk.pending_fidelity is None
            and (walk.known is not None or not walk.uses_usage)
            and bool(walk.head.compactions or walk.real_compaction_seen)
        )

    def coast(
        self,
        walk: Walk,
        index: int,
        fires_from: float,
        overflow_stops: bool = True,
        expired_from: float = np.inf,
        expired: np.ndarray | None = None,
    ) -> int:
        """Row the calls from message `index` on that need no engine, append the messages before
        the first one that does, and return its index (or, when none does within the look-ahead,
        the index after the last call rowed; the session's length at its end).

        A call needs the engine when the trigger fires there (the context reaches `fires_from`
        tokens, at a call the trigger is asked before, or `expired_from` at the `expired` calls: the
        trigger's cache-expiry rule) or the prompt overflows the window (unless `overflow_stops` is false: the engine
        would not try an emergency compaction). Most of a replay is such stretches between
        compactions (docs/performance.md). The sizes are the kernel's (`compactlab.replay.prompt_size`)
        that `Walk.measure` and `Walk.trigger_tokens` call, over arrays; the walk takes the rows."""
        base, arrays = walk.base, walk.base.arrays
        first = base.calls_before(index)
        # A look-ahead that grows while no call stops: right after a compaction the next stop is
        # often near, and summing the whole rest of a long session each time would be quadratic.
        positions = arrays["positions"][first : first + self.look_ahead]
        more = first + len(positions) < len(arrays["positions"])
        end = int(positions[-1]) + 1 if more else len(walk.session.messages)
        sums = np.cumsum(np.concatenate(([walk.context_sum], arrays["tokens"][index:end])))
        before = sums[positions - index]  # the context's estimate before each call
        calls = slice(first, first + len(positions))
        written = walk.written  # the context's summaries, sized apart as in `measured_size`
        context = measured_size(walk.overhead, before, arrays["ratios"][calls], written)
        if walk.uses_usage and walk.known is not None:  # anchored on the previous call's row
            history = arrays["history"]
            reply = int(base.anchor_output)  # the anchor covers the reply and its output, or neither
            anchor = np.concatenate(([walk.known[1]], context[:-1] + arrays["outputs"][calls][:-1] * reply))
            covered = np.concatenate(([walk.known[0]], positions[:-1] + reply))
            since = history[covered] if walk.meter.counts_newer else history[positions]  # usage alone: nothing since
            trigger = hybrid_tokens(anchor, history[positions], since)
        else:
            trigger = own_estimate(before, walk.meter.local.prompt_overhead, walk.meter.offset)
        over = walk.over_window(context)
        fires = trigger >= fires_from
        if expired is not None:
            fires |= expired[calls] & (trigger >= expired_from)
        fires &= arrays["checked"][calls]  # only where the trigger is asked (`Harness.checks`)
        stops = np.flatnonzero(fires | over) if overflow_stops else np.flatnonzero(fires)
        count = int(stops[0]) if len(stops) else len(positions)
        stop = int(positions[count]) if len(stops) else end
        self.look_ahead = 16 if len(stops) else min(2 * self.look_ahead, 4096)
        # Where every call stops (a prompt over the window at each call), rowing in bulk gains
        # nothing and costs its set-up at every message: try again after 1, 2, 4, ... calls.
        self.backoff = 0 if count else min(2 * self.backoff or 1, 64)
        if self.backoff:
            later = first + self.backoff
            self.coast_from = int(arrays["positions"][later]) if later < len(arrays["positions"]) else end
        if stop == index:
            return index
        walk.coasted(
            index, stop, count, context[:count].astype(np.int64).tolist(), over[:count].tolist(), float(sums[stop - index])
        )
        return stop
