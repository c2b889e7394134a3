"""The fast path equals the plain replay, on every bundled dataset.

`compactlab.replay.replay.replay_plain` is the definition: every message in order, the engine
asked before every call. A run gets its rows another way (`compactlab.replay.fast`): the prefix
before a setting's first compaction copied from the uncompacted replay, the calls between
compactions rowed in bulk, one compaction shared by the settings that reach the same context, rows
moved as arrays and text codes and stored as Parquet. Here a real run's call and compaction rows,
read back from its run directory, must equal the plain replay's, row for row and value for value.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from compactlab.contract import Trigger
from compactlab.replay.replay import replay_plain
from compactlab.replay.setting import Setting
from compactlab.results.metrics import calls_frame, compactions_frame
from compactlab.runs.run_config import RunConfig, windows_of
from compactlab.runs.runs import run
from compactlab.sessions.datasets import list_datasets
from compactlab.sessions.importers import load_file

WINDOW = 32_000  # small enough that every dataset's sessions compact, several times in the long ones
# A sweep of one strategy's thresholds (shared compactions), a summarizer, pruners, a preset with
# its own trigger and estimator, and the production agent's own compactions.
SETTINGS = (
    Setting("truncate@0.5", "truncate", trigger=Trigger(fraction=0.5)),
    Setting("truncate@0.6", "truncate", trigger=Trigger(fraction=0.6)),
    Setting("truncate@0.8", "truncate", trigger=Trigger(fraction=0.8)),
    Setting("summarize", "summarize"),
    Setting("prune", "prune"),
    Setting("observation-masking", "observation-masking"),
    Setting("evict", "evict"),  # sizes the context it is given in a tuple of its own (`Walk.engine_meter`)
    Setting("pi", "pi"),
    Setting("claude-code", "claude-code"),
    Setting("recorded", "recorded"),
)
KEYS = ["session", "setting", "call"]


def _files(dataset, every_file: bool) -> list:
    """Every file of the dataset, or its smallest and largest files and one between: short and long sessions both."""
    files = sorted(dataset.files, key=lambda path: path.stat().st_size)
    picked = files if every_file else [files[0], files[len(files) // 2], files[-1]]
    return list(dict.fromkeys(picked))


# A local run checks three files of each dataset; CI checks every file (minutes: marked slow).
@pytest.mark.parametrize("every_file", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["three-files", "every-file"])
@pytest.mark.parametrize("dataset", list_datasets(), ids=lambda d: d.name)
def test_a_runs_rows_equal_the_plain_replays(dataset, every_file: bool, tmp_path) -> None:
    files = _files(dataset, every_file)
    config = RunConfig(datasets=tuple(map(str, files)), strategies=SETTINGS, lenient=dataset.lenient, window=WINDOW)
    result = run(config, tmp_path / "run", workers=1)

    calls, compactions = [], []
    for path in files:
        for session in load_file(path, lenient=dataset.lenient):
            for setting in SETTINGS:
                replayed = replay_plain(session, setting, windows_of(config))
                calls.append(calls_frame(replayed.calls))
                compactions.append(compactions_frame([row.values() for row in replayed.compactions]))
    if all(c.empty for c in calls):  # a dataset without recorded LLM calls (condenser pairs): nothing to replay
        assert result.calls.empty and result.compactions.empty
        return
    plain_calls = pd.concat([c for c in calls if not c.empty], ignore_index=True)
    assert len(result.calls) == len(plain_calls)
    assert result.compactions["setting"].nunique() >= 2, "the settings must compact for the test to mean anything"

    fast = result.calls.sort_values(KEYS).reset_index(drop=True)
    plain = plain_calls.sort_values(KEYS).reset_index(drop=True)[list(fast.columns)]
    pd.testing.assert_frame_equal(fast, plain, check_dtype=False, check_categorical=False)

    plain_compactions = pd.concat([c for c in compactions if not c.empty], ignore_index=True)
    order = ["session", "setting", "call", "message_index"]
    fast_c = result.compactions.sort_values(order).reset_index(drop=True)
    plain_c = plain_compactions.sort_values(order).reset_index(drop=True)[list(fast_c.columns)]
    assert _records(fast_c) == _records(plain_c)


def _records(frame: pd.DataFrame) -> list[dict]:
    """Rows as dicts, a missing value as None however the frame stores it (Parquet reads back NaN)."""
    return [
        {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in row.items()} for row in frame.to_dict("records")
    ]
