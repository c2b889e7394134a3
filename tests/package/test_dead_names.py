"""No module-level function, class or constant of compactlab is left that nothing uses.

tests/scripts/dead_names.py reads the source; `python -m tests.scripts.dead_names` prints the same,
and the names only tests use.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.scripts.dead_names import REPO, dead_names


def test_no_name_is_used_nowhere():
    assert dead_names(REPO)[0] == []


def test_an_unused_function_is_found(tmp_path: Path):
    """The scan on a copy of the package with one function nobody calls, and one only a test calls."""
    for folder in ("bench", "strategies", "tests"):  # the tests but this file, which names the two
        skip = shutil.ignore_patterns("__pycache__", "data", "fixtures", Path(__file__).name)
        shutil.copytree(REPO / folder, tmp_path / folder, ignore=skip)
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    memo = tmp_path / "bench" / "memo.py"
    memo.write_text(
        memo.read_text(encoding="utf-8")
        + "\n\ndef forgotten_helper() -> None:\n    pass\n\n\ndef tested_helper() -> None:\n    pass\n"
    )
    (tmp_path / "tests" / "test_probe.py").write_text("from compactlab.memo import tested_helper\n")
    unused, tests_only = dead_names(tmp_path)
    assert unused == [f"bench/memo.py:{len(memo.read_text().splitlines()) - 5} forgotten_helper"]
    assert tests_only[0] == f"bench/memo.py:{len(memo.read_text().splitlines()) - 1} tested_helper"
    assert tests_only[1:] == dead_names(REPO)[1]


def test_a_name_only_a_docstring_mentions_is_dead(tmp_path: Path):
    """A constant whose only mention is a docstring (as `PER_COMPACTION` once was) is found unused."""
    for folder in ("bench", "strategies"):
        shutil.copytree(REPO / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__", "data", "fixtures"))
    (tmp_path / "tests").mkdir()
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    memo = tmp_path / "bench" / "memo.py"
    memo.write_text(
        memo.read_text(encoding="utf-8")
        + '\n\nDOCUMENTED_ONLY = 1\n\n\ndef documents() -> None:\n    """Reads every `DOCUMENTED_ONLY` name."""\n'
    )
    line = len(memo.read_text().splitlines()) - 4
    assert f"bench/memo.py:{line} DOCUMENTED_ONLY" in dead_names(tmp_path)[0]
