"""The Python API's leaderboard speaks the leaderboard's words (issue 43): `result.leaderboard()` has the
columns the report and the CLI show ("tokens removed", "tokens removed, 95% CI low"), not summary.json's
keys (`removed_share_mean`), which `leaderboard(raw=True)` still gives."""

from __future__ import annotations

import json
from pathlib import Path

import compactlab
from compactlab.api import readable_columns
from compactlab.results.catalogue import REPORTED, metric
from tests.conftest import bundled


def test_the_leaderboard_has_readable_columns_and_the_raw_ones_on_request(tmp_path: Path) -> None:
    file = bundled("mini-swe-agent-pr816", "deepseek_chat_dev_pylint-dev__astroid-1333_")
    strategies = tuple(compactlab.Setting(name, name) for name in ("truncate", "observation-masking"))
    config = compactlab.RunConfig(datasets=(str(file),), window=20000, strategies=strategies)
    result = compactlab.run(config, tmp_path / "run")
    board, raw = result.leaderboard(), result.leaderboard(raw=True)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert list(raw.columns) == list(summary["leaderboard"][0]) and "removed_share_mean" in raw
    assert not [c for c in board.columns if "_mean" in c or "_low" in c or "_high" in c]
    assert list(board["setting"]) == list(raw["setting"]) and "sessions" in board
    for name in REPORTED:
        label = metric(name).label
        assert label in board.columns, label
        if f"{name}_mean" in raw:
            assert board[label].equals(raw[f"{name}_mean"]) and f"{label}, 95% CI low" in board
    assert board["tokens removed, 95% CI high"].equals(raw["removed_share_high"])
    assert len(set(readable_columns(raw.columns).values())) == len(raw.columns)  # no two columns under one name
