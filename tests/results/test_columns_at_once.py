"""Columns made first and added to a table at once (`calls_frame`, `with_derived`) equal the same
columns added one by one, the plain way each was defined, on real replayed rows."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from compactlab.results.metrics import (
    SESSION_METRICS,
    calls_frame,
    compactions_frame,
    derived_call_columns,
    derived_plain,
    session_summary,
    with_derived,
)
from compactlab.runs.run_checks import resolve
from compactlab.runs.run_config import RunConfig, windows_of
from compactlab.runs.run_storage import part_calls, part_compaction_rows
from compactlab.runs.session_job import SessionJob
from compactlab.sessions.loading import load_inputs

DERIVED = [m.name for m in SESSION_METRICS]


def call_rows(dataset: str, count: int, out: Path):
    """The call rows (as a run stores them) and compaction rows of the first `count` sessions with
    calls of `dataset`, replayed by every default setting as a run's worker does."""
    config, instances = resolve(RunConfig())
    job = SessionJob(config.strategies, instances, frozenset(), windows_of(config), config.estimator, None, None, out)
    for session in [t for t in load_inputs([dataset], lenient=True).sessions if t.calls][:count]:
        plan = job.plan(session)
        parts = job.assemble(plan, [job.replay_setting(plan, strategy) for strategy in plan.strategies]).parts
        yield session, part_calls(out, [parts["calls"]]), part_compaction_rows(out, [parts["compactions"]])


@pytest.mark.parametrize("dataset", ["mini-swe-agent-pr816", "m-claude"])
def test_the_columns_made_at_once_equal_them_added_one_by_one(dataset: str, tmp_path: Path) -> None:
    for session, rows, compaction_rows in call_rows(dataset, 2, tmp_path):
        plain = rows.copy()
        for name, values in derived_call_columns(rows, None).items():
            plain[name] = values
        calls = calls_frame(rows)
        pd.testing.assert_frame_equal(calls, plain, check_exact=True, obj=session.id)
        assert calls["cost_context"].notna().any()  # priced: the cost columns were compared with values in them

        table = session_summary(calls, compactions_frame(compaction_rows))
        bare = table.drop(columns=DERIVED)
        pd.testing.assert_frame_equal(with_derived(bare), derived_plain(bare), check_exact=True, obj=session.id)
        # Read back with the derived columns there already: each is made again where it stands.
        pd.testing.assert_frame_equal(with_derived(table), derived_plain(table), check_exact=True, obj=session.id)
        assert with_derived(bare)["total_cost"].notna().any()  # (total_cost: an entry made from one made before it)
