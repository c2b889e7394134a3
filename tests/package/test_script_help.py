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
SCRIPTS_DIR = ROOT / "tests" / "scripts"
# The package's command (bench/, installed as compactlab) and every script of a checkout (tests/scripts/).
SCRIPTS = sorted(
    [
        "compactlab." + path.relative_to(ROOT / "bench").with_suffix("").as_posix().replace("/", ".")
        for path in (ROOT / "bench").rglob("*.py")
        if MAIN.search(path.read_text(encoding="utf-8"))
    ]
    + [
        "tests.scripts." + path.relative_to(SCRIPTS_DIR).with_suffix("").as_posix().replace("/", ".")
        for path in SCRIPTS_DIR.rglob("*.py")
        if MAIN.search(path.read_text(encoding="utf-8"))
    ]
)


def test_the_scripts_are_found() -> None:
    assert "tests.scripts.fit_calibration" in SCRIPTS and "tests.scripts.input_fuzz" in SCRIPTS and len(SCRIPTS) > 10
    assert "tests.scripts.oracles.pi_figures" in SCRIPTS


def test_the_installed_package_holds_no_script_but_its_command() -> None:
    """Measurement scripts ship in no wheel (issue 46): bench/ and strategies/ run only `compactlab`."""
    scripts = sorted(
        path.relative_to(ROOT).as_posix()
        for folder in ("bench", "strategies")
        for path in (ROOT / folder).rglob("*.py")
        if MAIN.search(path.read_text(encoding="utf-8"))
    )
    assert scripts == ["bench/cli/main.py"]


def test_runnable_scripts_live_in_their_two_homes() -> None:
    """A script elsewhere in tests/ is one nobody finds. tests/typecheck.py stays: it is the checker
    .ci/run, the pre-commit hook and the README name as `python -m tests.typecheck`."""
    stray = sorted(
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "tests").rglob("*.py")
        if MAIN.search(path.read_text(encoding="utf-8")) and SCRIPTS_DIR not in path.parents and path.name != "typecheck.py"
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
