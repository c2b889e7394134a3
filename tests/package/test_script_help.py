"""Every script `python -m` runs answers `--help` with its usage and does nothing else.

Before they had argument parsers, four of them read `--help` as a path: `fit_calibration --help`
wrote its fit to a file named `--help`.
"""

from __future__ import annotations

import contextlib
import io
import re
import runpy
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAIN = re.compile(r'^if __name__ == "__main__":', re.MULTILINE)
# The package's scripts (bench/, installed as compactlab) and those needing tests/ (tests/scripts/).
SCRIPTS = sorted(
    [
        "compactlab." + path.relative_to(ROOT / "bench").with_suffix("").as_posix().replace("/", ".")
        for path in (ROOT / "bench").rglob("*.py")
        if MAIN.search(path.read_text(encoding="utf-8"))
    ]
    + [f"tests.scripts.{path.stem}" for path in (ROOT / "tests" / "scripts").glob("*.py") if path.stem != "__init__"]
)


def test_the_scripts_are_found() -> None:
    assert "compactlab.tokens.fit_calibration" in SCRIPTS and "tests.scripts.input_fuzz" in SCRIPTS and len(SCRIPTS) > 10


def test_runnable_scripts_live_in_their_two_homes() -> None:
    """A script elsewhere in tests/ is one nobody finds. tests/typecheck.py stays: it is the checker
    .ci/run, the pre-commit hook and the README name as `python -m tests.typecheck`."""
    stray = sorted(
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "tests").rglob("*.py")
        if MAIN.search(path.read_text(encoding="utf-8"))
        and path.parent != ROOT / "tests" / "scripts"
        and path.name != "typecheck.py"
    )
    assert stray == []


@pytest.mark.filterwarnings("ignore:.*found in sys.modules:RuntimeWarning")  # runpy on a module a test imported
@pytest.mark.parametrize("module", SCRIPTS)
def test_help_prints_the_usage_and_writes_nothing(module: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [module, "--help"])
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), pytest.raises(SystemExit) as exited:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    assert exited.value.code in (0, None)
    assert "usage:" in printed.getvalue()
    assert list(tmp_path.iterdir()) == []
