"""Issue 32's input cases (tests/input_cases.py), each made from real files and run through the
CLI in a child process: non-UTF-8 names, a FIFO, a link to a parent folder, a folder of unreadable
files, --out inside the dataset, numbers out of range in the configuration, and damaged Claude
Code ids and Codex kinds. Each must end as issue 32 wants, never in a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from compactlab.runs.config_schema import KEYS, check_number
from tests.input_cases import CASES, Case


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_each_input_case_ends_as_wanted(case: Case, tmp_path: Path) -> None:
    outcome = case.run(tmp_path)
    assert not outcome.traceback, outcome.stderr[-2000:]
    assert case.expected(outcome), f"wanted: {case.wanted}; exit {outcome.code}; said {outcome.said()!r}"


def test_every_numeric_key_has_a_range_and_its_ends_are_checked() -> None:
    numbers = [key for key in KEYS if key.type in ("integer", "number")]
    assert numbers and all(key.low is not None and key.high is not None for key in numbers)
    for key in numbers:
        check_number(key, key.high, "here")  # the high end is valid
        with pytest.raises(ValueError, match=f"here: `{key.name}`"):
            check_number(key, key.high * 10 + 1, "here")
        if not key.low_open:
            check_number(key, key.low, "here")
        with pytest.raises(ValueError, match="out of range"):
            check_number(key, key.low - 1 if key.type == "integer" else key.low - 0.5, "here")
