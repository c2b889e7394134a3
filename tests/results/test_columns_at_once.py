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
from compactlab.runs.session_results import session_results
from compactlab.sessions.loading import load_inputs

DERIVED = [m.name for m in SESSION_METRICS]


def call_rows(dataset: str, count: int, out: Path):
    """The call rows (as a run stores them) and compaction rows of the first `count` sessions with
    calls of `dataset`, replayed by every default setting as a run's worker does."""
    config, instances = resolve(RunConfig())
    job = SessionJob(config.strategies, instances, frozenset(), windows_of(config), config.estimator, None, None, out)
    for session in [t for t in load_inputs([dataset], lenient=True).sessions if t.calls][:count]:
        plan = job.plan(session)
        replays = job.assemble(plan, [job.replay_setting(plan, strategy) for strategy in plan.strategies])
        parts = replays.parts
        yield session, part_calls(out, [parts["calls"]]), part_compaction_rows(out, [parts["compactions"]]), replays.results


@pytest.mark.parametrize("dataset", ["mini-swe-agent-pr816", "m-claude"])
def test_the_columns_made_at_once_equal_them_added_one_by_one(dataset: str, tmp_path: Path) -> None:
    for session, rows, compaction_rows, _ in call_rows(dataset, 2, tmp_path):
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


@pytest.mark.parametrize(("dataset", "count"), [("m-claude", 20), ("mini-swe-agent-pr816", 3), ("claude-code-log", 3)])
def test_the_workers_results_from_arrays_equal_those_of_the_rows_as_a_frame(dataset: str, count: int, tmp_path: Path) -> None:
    """A worker makes a session's results from its rows' arrays, without a frame unless a real
    compaction needs one (`session_results` on arrays: `cost_model_check_arrays`, the models found
    on codes); the same rows read back as a frame give the same tables by the plain functions."""
    compared = {"cost_model_check": 0, "real_costs": 0}
    for session, rows, compaction_rows, worker in call_rows(dataset, count, tmp_path):
        plain = session_results(rows, compaction_rows, [session], None)
        for name in ("summary", "recorded_fidelity", "cost_model_check", "call_models", "real_costs"):
            mine, theirs = getattr(worker, name), getattr(plain, name)
            if theirs.empty:
                assert mine.empty, (session.id, name)
                continue
            pd.testing.assert_frame_equal(mine.reset_index(drop=True), theirs.reset_index(drop=True), check_exact=True, obj=name)
            compared[name] = compared.get(name, 0) + 1
    assert compared["cost_model_check"]  # sessions with recorded cache splits were checked
    assert compared["real_costs"] or dataset != "m-claude"  # (m-claude holds real compactions: their frame was made)
