"""The row columns are declared once (`compactlab.replay.row_schema`) and every stage keeps to them:
the replay makes exactly those columns, the Parquet parts store them with the declared types, and
what is read back is what the replay made."""

from __future__ import annotations

from dataclasses import fields, replace

import pyarrow as pa
import pytest

from compactlab.compaction.engine import CompactionEvent
from compactlab.replay.replay import replay
from compactlab.replay.row_schema import (
    CALL_COLUMNS,
    COMPACTION_TYPES,
    EVENT_COLUMNS,
    REPLAY_COMPACTION_COLUMNS,
)
from compactlab.replay.setting import Setting
from compactlab.runs.run_storage import CALL_SCHEMA, _part_rows, compactions_table
from compactlab.sessions.importers import load_file
from compactlab.tokens.context_windows import ContextWindows
from tests.conftest import bundled

[SESSION] = load_file(bundled("mini-swe-agent-pr816", "deepseek_reasoner_dev_marshmallow-code__marshmallow-1343"))
SMALL = ContextWindows(overrides={"": 12_000})


def test_a_compaction_row_stores_every_field_of_the_engine_event() -> None:
    # A field added to the event is stored, or this fails: the row holds the event, it does not copy it.
    assert set(EVENT_COLUMNS) == {f.name for f in fields(CompactionEvent)} - {"changed"}
    assert set(EVENT_COLUMNS) <= set(REPLAY_COMPACTION_COLUMNS)


def test_a_replay_makes_the_declared_columns_and_they_read_back_as_made() -> None:
    replayed = replay(SESSION, Setting("summarize", "summarize"), SMALL)
    assert tuple(replayed.calls) == CALL_COLUMNS
    assert len(replayed.compactions) >= 2, "the session must compact at this window for the test to mean anything"
    rows = [row.values() for row in replayed.compactions]
    assert all(tuple(row) == REPLAY_COMPACTION_COLUMNS for row in rows)
    assert all(
        row["tokens_after"] == c.event.tokens_after and row["reason"] == c.event.reason
        for row, c in zip(rows, replayed.compactions)
    )
    table = compactions_table(rows)
    assert [table.schema.field(name).type for name in table.column_names] == [
        pa.string()
        if COMPACTION_TYPES[name] in (str, dict)
        else {int: pa.int64(), bool: pa.bool_(), float: pa.float64()}[COMPACTION_TYPES[name]]
        for name in table.column_names
    ]
    assert _part_rows(table) == rows
    assert CALL_SCHEMA.names == list(CALL_COLUMNS)


def test_a_column_the_schema_does_not_declare_is_refused_by_name() -> None:
    replayed = replay(SESSION, Setting("summarize", "summarize"), SMALL)
    row = replayed.compactions[0].values() | {"my_new_score": 0.5}
    with pytest.raises(ValueError, match="does not declare: my_new_score"):
        compactions_table([row])


def test_the_note_of_an_excluded_real_compaction_says_why() -> None:
    replayed = replay(SESSION, Setting("summarize", "summarize"), SMALL)
    row = replace(replayed.compactions[0], excluded="back to back with the previous compaction")
    assert (
        row.values()["note"]
        == f"{row.event.note}; its next prompt is no test of the replay: back to back with the previous compaction"
    )
