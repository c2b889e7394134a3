"""A run's estimation kept on disk a block at a time (`compactlab.runs.estimation_parts`) writes the
file that one frame of every session's estimation wrote, on real estimations of several formats (one
without calls, one damaged), and keeps no call rows in memory."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pandas as pd

from compactlab.runs.estimation_parts import EstimationParts
from compactlab.runs.report_inputs import estimated, run_estimators
from compactlab.sessions.importers import load_file
from compactlab.tokens.estimation import EstimationResult
from compactlab.tokens.tokenizers import TokenCache
from tests.conftest import bundled

FILES = [
    bundled("mini-swe-agent-pr816", "deepseek_chat_dev_pvlib__pvlib-python-1707"),
    bundled("condenser-pairs-gpt5mini", "astropy__astropy-12907"),  # no calls: counted, no rows
    bundled("claude-code-log", "-Users-dain-workspace-JSSoundRecorder"),
    bundled("m-claude", "3af9b1a7"),  # skipped records: a damaged session, left out
    bundled("mini-swe-agent-v1", "mini-output__django__django-12276"),
]


def test_blocks_on_disk_write_what_one_frame_of_every_session_wrote(tmp_path: Path) -> None:
    sessions = [t for path in FILES for t in load_file(path, lenient=True)]
    cache, measured = TokenCache(), run_estimators("hybrid", ["chars/4"])
    estimations = [estimated(t, measured, cache) for t in sessions]
    whole = EstimationResult.combined([e.result for e in estimations])
    assert len(whole.calls) > 100 and whole.sessions_without_calls and whole.damaged_sessions

    parts = EstimationParts()
    try:
        for start in range(0, len(estimations), 2):  # blocks of two estimations
            block = estimations[start : start + 2]
            parts.add([e.result for e in block], [row for e in block for row in e.size_rows])
        assert len(parts.parts) > 1
        parts.write_calls(tmp_path / "calls.parquet")
        result = parts.result()
        assert result.calls.empty  # the call rows are on disk only
        assert {k: v for k, v in asdict(result).items() if k != "calls"} == {
            k: v for k, v in asdict(whole).items() if k != "calls"
        }
        assert parts.size_rows == [row for e in estimations for row in e.size_rows]
        pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "calls.parquet"), whole.calls)
        kept_folder = parts.parts[0].parent
    finally:
        parts.close()
    assert not kept_folder.exists()
