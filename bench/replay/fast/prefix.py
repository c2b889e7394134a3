"""A setting's replay starts where it first differs from the uncompacted replay.

Until a setting first compacts, its replay is the recorded session itself: the rows before that
point are the uncompacted replay's (`compactlab.replay.uncompacted`), which every setting of a
transcript shares, and `start_at` hands them and the running state over to the walk. It must
equal walking those calls (`compactlab.replay.replay.replay_plain`); tests/replay/test_fast_path_equals_plain.py checks it.
"""

from __future__ import annotations

from compactlab.replay.uncompacted import COLUMNS
from compactlab.replay.walk import Walk


def start_at(walk: Walk, index: int) -> None:
    """Take over the uncompacted replay's state before message `index` and its rows before it."""
    base = walk.base
    calls = base.calls_before(index)
    for name in COLUMNS:
        walk.rows[name] = base.columns[name][:calls]
    walk.compactions_so_far = [0] * calls
    walk.compacted_before = [False] * calls
    walk.noop_before = [0] * calls
    previous = base.positions[calls - 1] if calls else -1
    walk.previous_prompt = ((), 0, max(previous, 0))
    walk.context_sum = base.history_tokens[index]
    walk.known = base.known_usage[index]
    walk.real_compaction_seen = bool(base.markers) and base.markers[0] < index
    walk.compaction_marker_since_call = base.marker_between(previous, index)
