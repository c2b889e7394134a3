"""Coasting: the calls between two compactions rowed in bulk, on arrays, instead of one by one.

Most of a replay is stretches where nothing can happen: the trigger does not fire and the prompt
fits. `Coasting.coast` finds the next call that needs the engine and rows every call before it with
`Walk.measure`'s and `Walk.append`'s arithmetic, the same additions in the same order (a cumulative
sum adds one term at a time, as the running sum does). It must equal the plain replay
(`compactlab.replay.replay.replay_plain`); tests/replay/test_fast_path_equals_plain.py checks it on every bundled dataset.
"""

from __future__ import annotations

import numpy as np

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

    def coast(self, walk: Walk, index: int, fires_from: float, overflow_stops: bool = True) -> int:
        """Row the calls from message `index` on that need no engine, append the messages before
        the first one that does, and return its index (or, when none does within the look-ahead,
        the index after the last call rowed; the transcript's length at its end).

        A call needs the engine when the trigger fires there (the context reaches `fires_from`
        tokens) or the prompt overflows the window (unless `overflow_stops` is false: the engine
        would not try an emergency compaction). Most of a replay is such stretches between
        compactions (docs/performance.md). The numbers are `measure`'s and `append`'s: the same additions in the same order, on arrays
        (a cumulative sum adds one term at a time, as the running sum does)."""
        base, arrays = walk.base, walk.base.arrays
        first = base.calls_before(index)
        # A look-ahead that grows while no call stops: right after a compaction the next stop is
        # often near, and summing the whole rest of a long session each time would be quadratic.
        positions = arrays["positions"][first : first + self.look_ahead]
        more = first + len(positions) < len(arrays["positions"])
        end = int(positions[-1]) + 1 if more else len(walk.transcript.messages)
        sums = np.cumsum(np.concatenate(([walk.context_sum], arrays["tokens"][index:end])))
        before = sums[positions - index]  # the context's estimate before each call
        calls = slice(first, first + len(positions))
        written = walk.written  # the context's summaries, sized apart as in `measured_size`
        context = np.rint(walk.overhead + written.tokens + (before - written.estimate) * arrays["ratios"][calls])
        if walk.uses_usage and walk.known is not None:  # as `hybrid_tokens`, anchored on the previous call's row
            history = arrays["history"]
            reply = int(base.anchor_output)  # the anchor covers the reply and its output, or neither
            anchor = np.concatenate(([walk.known[1]], context[:-1] + arrays["outputs"][calls][:-1] * reply))
            covered = np.concatenate(([walk.known[0]], positions[:-1] + reply))
            trigger = np.rint(anchor + history[positions] - history[covered])
        else:
            trigger = np.rint(before + walk.meter.local.prompt_overhead + walk.meter.offset)  # as `_own_estimate`
        over = context > walk.window
        stops = np.flatnonzero((trigger >= fires_from) | over) if overflow_stops else np.flatnonzero(trigger >= fires_from)
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
        if count:
            self._row_coasted(walk, first, count, context[:count].astype(np.int64).tolist(), over[:count].tolist())
        # The production agent's compactions passed on the way, as the loop notes them.
        last_call = int(positions[count - 1]) if count else index - 1
        since_last_call = base.marker_between(last_call, stop)
        walk.compaction_marker_since_call = since_last_call or (walk.compaction_marker_since_call and not count)
        walk.real_compaction_seen = walk.real_compaction_seen or base.marker_between(index - 1, stop)
        walk.context_sum = float(sums[stop - index])
        if count:  # as `append` after the last call rowed
            reply = int(base.anchor_output)
            output = base.columns["output_tokens"][first + count - 1] * reply
            walk.known = (last_call + reply, walk.rows["context_tokens"][-1] + output)
        return stop

    @staticmethod
    def _row_coasted(walk: Walk, first: int, count: int, context_tokens: list[int], over_window: list[bool]) -> None:
        """The rows of `count` calls from call `first` on, with no compaction among them."""
        rows, columns, end = walk.rows, walk.base.columns, first + count
        for name in ("message_index", "model", "recorded_prompt_tokens", "output_tokens", "full_tokens", "full_prefix_tokens"):
            rows[name] += columns[name][first:end]  # as the uncompacted replay's: they do not depend on the context
        # Append-only between calls: the previous prompt is cached, as far as it reaches.
        rows["prefix_tokens"] += map(min, [rows["context_tokens"][-1], *context_tokens[:-1]], context_tokens)
        rows["context_tokens"] += context_tokens
        rows["over_window"] += over_window
        walk.compactions_so_far += [walk.head.compactions] * count
        walk.compacted_before += [False] * count
        walk.noop_before += [0] * count
        walk.previous_prompt = (walk.head.messages, walk.tail_start, columns["message_index"][end - 1])
