"""The row columns are declared once (`compactlab.replay.row_schema`) and every stage keeps to them:
the replay makes exactly those columns, the Parquet parts store them with the declared types, and
what is read back is what the replay made."""

from __future__ import annotations

import sys
from dataclasses import fields, replace
from pathlib import Path
from types import ModuleType

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


def test_a_column_declared_after_the_judges_is_written_by_the_replay() -> None:
    """The module's own source with one more column declared last, after `model_next_action`, and a
    row field for it: the replay writes it (a slice at the judge's column once dropped it silently)."""
    import compactlab.replay.row_schema as schema

    source = Path(schema.__file__).read_text(encoding="utf-8")
    declared = '    "model_next_action": dict,\n'
    field_line = "    reacquisition: dict | None = None"
    assert declared in source and field_line in source, "the test edits these lines of the module"
    source = source.replace(declared, declared + '    "last_user_kept": float,\n')
    source = source.replace(field_line, field_line + "\n    last_user_kept: float | None = None")
    module = ModuleType("row_schema_with_a_new_column")
    sys.modules[module.__name__] = module  # (dataclasses look their module up while they build the class)
    try:
        exec(compile(source, schema.__file__, "exec"), module.__dict__)
        assert module.REPLAY_COMPACTION_COLUMNS[-1] == "last_user_kept"
        assert "model_next_action" not in module.REPLAY_COMPACTION_COLUMNS
        replayed = replay(SESSION, Setting("summarize", "summarize"), SMALL)
        first = replayed.compactions[0]
        row = module.CompactionRow(**{f.name: getattr(first, f.name) for f in fields(first)}, last_user_kept=1.0)
        assert row.values()["last_user_kept"] == 1.0
    finally:
        del sys.modules[module.__name__]
