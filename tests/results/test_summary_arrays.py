"""sessions.csv's rows as the worker computes them (`summary_from_arrays`, on arrays) equal the
plain definition (`session_summary`, a pandas groupby and joins) to the bit, on real replays:
sessions with and without compactions, costs with and without NaN, rows grouped and not."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from compactlab.results.metrics import calls_frame, compactions_frame, session_summary
from compactlab.results.summary_arrays import summary_from_arrays
from compactlab.runs.run_checks import resolve
from compactlab.runs.run_config import RunConfig, windows_of
from compactlab.runs.run_storage import part_calls, part_compaction_rows
from compactlab.runs.session_job import SessionJob
from compactlab.sessions.loading import load_inputs


def replayed(dataset: str, count: int, out: Path):
    """The first `count` sessions with calls of `dataset`, replayed by every default setting as a run's worker does."""
    config, instances = resolve(RunConfig())
    job = SessionJob(config.strategies, instances, frozenset(), windows_of(config), config.estimator, None, None, out)
    for session in [t for t in load_inputs([dataset], lenient=True).sessions if t.calls][:count]:
        plan = job.plan(session)
        replays = job.assemble(plan, [job.replay_setting(plan, strategy) for strategy in plan.strategies])
        calls = calls_frame(part_calls(out, [replays.parts["calls"]]))
        compactions = compactions_frame(part_compaction_rows(out, [replays.parts["compactions"]]))
        yield session, replays.results.summary, calls, compactions


@pytest.mark.parametrize(("dataset", "count"), [("mini-swe-agent-pr816", 4), ("m-claude", 2), ("codex-rollouts", 1)])
def test_the_workers_rows_equal_the_definition(dataset: str, count: int, tmp_path: Path) -> None:
    compacted = 0
    for session, worker, calls, compactions in replayed(dataset, count, tmp_path):
        plain = session_summary(calls, compactions)
        # As the worker made it (grouped by numbers, from arrays), and from the frames read back.
        pd.testing.assert_frame_equal(worker, plain, check_exact=True, obj=session.id)
        pd.testing.assert_frame_equal(summary_from_arrays(calls, compactions), plain, check_exact=True, obj=session.id)
        compacted += not compactions.empty
        assert len(plain) == len(resolve(RunConfig())[0].strategies)
    assert compacted or dataset == "m-claude"  # the compaction columns were compared where a dataset compacts


def test_rows_out_of_group_order_and_nan_costs_sum_as_pandas_does(tmp_path: Path) -> None:
    """The two ways pandas sums a group (reduceat on grouped rows without NaN, compensated otherwise)
    both met: the same real rows shuffled, and with a cost made unknown."""
    _, _, calls, compactions = next(replayed("mini-swe-agent-pr816", 1, tmp_path))
    shuffled = calls.sample(frac=1, random_state=3).reset_index(drop=True)
    assert not np.all(np.diff(pd.factorize(shuffled["setting"], sort=True)[0]) >= 0)
    unknown = calls.assign(cost_full=calls["cost_full"].where(calls.index % 7 != 3))
    for frame in (shuffled, unknown):
        pd.testing.assert_frame_equal(
            summary_from_arrays(frame, compactions), session_summary(frame, compactions), check_exact=True
        )
    assert summary_from_arrays(unknown, compactions)["cost_full"].isna().all()  # one unknown call: the session's cost unknown
