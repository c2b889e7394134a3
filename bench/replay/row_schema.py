"""The columns of a run's rows, declared once: names and types of the call rows and the compaction rows.

The replay makes the rows (`compactlab.replay.walk`), the run stores them as Parquet
(`compactlab.runs.run_storage`, whose file schema is built from the types here), `compactlab
export-rows` writes them as JSON lines and the report reads them back; all of them take the
columns from here, so a column is added in one place.

A compaction row holds the engine's `CompactionEvent` as it came (`CompactionRow.event`) and adds
only what the replay knows about it: where it happened, its summary, its scores and, for a real
compaction, how well the replay predicted the next prompt. `CompactionRow.values` flattens it into
the stored columns (the event's fields, but `changed`: a row is only made for a compaction that
changed the context).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from compactlab.compaction.engine import CompactionEvent

# A column's type: the Python type of its values (`dict` columns hold nested values, stored as JSON
# text). Every column but the call rows' may be None.
ColumnType = type

# The per-call rows of a replay (one list per name; a replay has thousands of calls):
#   session, setting, call (number), message_index, model, window,
#   recorded_prompt_tokens, output_tokens: what the source recorded for this call;
#   full_tokens, context_tokens, prefix_tokens, full_prefix_tokens: see `compactlab.replay.replay`'s docstring;
#   compactions_so_far; compacted_before: a compaction happened right before this call;
#   noop_before: attempts right before this call whose strategy changed nothing (no compaction);
#   over_window: the replayed prompt would still not fit;
#   cache_expired: the prompt cache held nothing of the previous prompt at this call (a pause past its
#   lifetime, or another model: `compactlab.replay.prompt_cache`), the same for every setting.
CALL_TYPES: dict[str, ColumnType] = {
    "session": str,
    "setting": str,
    "call": int,
    "message_index": int,
    "model": str,
    "window": int,
    "recorded_prompt_tokens": int,
    "output_tokens": int,
    "full_tokens": int,
    "context_tokens": int,
    "prefix_tokens": int,
    "full_prefix_tokens": int,
    "compactions_so_far": int,
    "compacted_before": bool,
    "noop_before": int,
    "over_window": bool,
    "cache_expired": bool,
}
CALL_COLUMNS = tuple(CALL_TYPES)
CallColumns = dict[str, list]

# The event's fields a compaction row stores: all but `changed` (rows are made for changes only).
EVENT_COLUMNS = tuple(f.name for f in fields(CompactionEvent) if f.name != "changed")

# The compaction rows, in the order they are stored:
#   session, setting, call (the number of the call it came before), message_index;
#   the engine event's fields (`compactlab.compaction.engine.CompactionEvent`), its note extended
#   by why a real compaction's next prompt is no test of the replay, when it is not;
#   summary: the compacted context's summary; preservation: {"k1": {...}, "k5": {...}}
#   (`compactlab.scoring.compaction_scores`); fidelity_predicted / fidelity_recorded: for real
#   compactions, the replay's predicted prompt of the next call vs the recorded one; reacquisition:
#   for real compactions, what the agent re-acquired after it; model_next_action: the model
#   judge's verdict (`compactlab.scoring.judge`, only in runs with a judge).
COMPACTION_TYPES: dict[str, ColumnType] = {
    "session": str,
    "setting": str,
    "call": int,
    "message_index": int,
    "reason": str,
    "strategy": str,
    "tokens_before": int,
    "tokens_after": int,
    "messages_before": int,
    "messages_after": int,
    "messages_removed": int,
    "summarizer_input_tokens": int,
    "summarizer_output_tokens": int,
    "summarizer_cost_usd": float,
    "prompt_hash": str,
    "note": str,
    "failed": str,
    "stalled": bool,
    "summary": str,
    "preservation": dict,
    "fidelity_predicted": int,
    "fidelity_recorded": int,
    "reacquisition": dict,
    "model_next_action": dict,
}
COMPACTION_COLUMNS = tuple(COMPACTION_TYPES)
# The columns the model judge adds to a row after the replay (`compactlab.scoring.judge`).
JUDGE_COLUMNS = ("model_next_action",)
# What a replay writes: every column but the judge's, wherever a column is declared (not a slice at
# the judge's column: one declared after it would silently not be written).
REPLAY_COMPACTION_COLUMNS = tuple(name for name in COMPACTION_COLUMNS if name not in JUDGE_COLUMNS)


@dataclass(frozen=True)
class CompactionRow:
    """One compaction of a replay: the engine's event and what the replay adds to it."""

    session: str
    setting: str
    call: int  # the number of the call it came before
    message_index: int
    event: CompactionEvent
    summary: str | None  # the compacted context's summary
    excluded: str | None = None  # why a real compaction's next prompt is no test of the replay
    preservation: dict = field(default_factory=dict)  # {"k1": {...}, "k5": {...}}, scored after the replay
    fidelity_predicted: int | None = None
    fidelity_recorded: int | None = None
    reacquisition: dict | None = None  # for real compactions (`compactlab.scoring.reacquisition`)

    @property
    def note(self) -> str:
        return self.event.note + (f"; its next prompt is no test of the replay: {self.excluded}" if self.excluded else "")

    def values(self) -> dict[str, Any]:
        """The row as its stored columns (`REPLAY_COMPACTION_COLUMNS`), in order."""
        return {name: getattr(self, name) if name in _OWN else getattr(self.event, name) for name in REPLAY_COMPACTION_COLUMNS}


_OWN = frozenset({f.name for f in fields(CompactionRow)} | {"note"})
