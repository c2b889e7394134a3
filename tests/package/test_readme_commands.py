"""The README's commands still run (issue 43, point 5): every line of its fenced bash blocks.

The README is where a newcomer starts: two commands, then one screen per job. A command that no
longer runs as printed sends the reader to an error on their first minute. Here:
- the two top lines (install + the main job; install + the tests) are checked for their exact shape:
  running them means a new virtual environment and the whole bundled run, which the wheel test
  (`tests/package/test_wheel.py`) and the main-command test (`tests/runs/test_run_and_sweep.py`) do;
- each job's lines run as written, in a fresh folder, with `my-sessions/` (the README's stand-in for
  the reader's folder) holding three bundled Claude Code sessions long enough to compact;
- the CI-gate job's lines run against the local wire-format server as the reader's model (slow: a
  baseline records its summaries), then `check` replays from the recorded answers with no server.
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

from compactlab.cli.main import main
from tests.conftest import REPO, bundled
from tests.fake_behaviours import summarizing
from tests.fake_providers import serve

README = (REPO / "README.md").read_text(encoding="utf-8")
TOP = (
    "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/compactlab run",
    'python3 -m venv .venv && .venv/bin/pip install -e ".[test]" && .venv/bin/python -m pytest -q',
)
JOBS = ("## 1. Compare strategies on my sessions", "## 2. Tune thresholds (sweep)", "## 3. Gate my summary prompt in CI")
KEY = "COMPACTLAB_TEST_README_KEY"  # never set: the gate job's CI has no key


def _bash_blocks(text: str) -> list[list[str]]:
    """Each fenced bash block's command lines, comments after `#` removed."""
    blocks = re.findall(r"^```bash\n(.*?)^```", text, re.S | re.M)
    return [[re.sub(r"\s+#.*$", "", line).strip() for line in block.splitlines() if line.strip()] for block in blocks]


def _section(heading: str) -> str:
    assert heading in README, f"the README has no {heading!r}"
    return README.split(heading, 1)[1].split("\n## ", 1)[0]


def _job_commands(heading: str) -> list[str]:
    lines = [line for block in _bash_blocks(_section(heading)) for line in block]
    assert lines, f"{heading}: no commands"
    assert all(line.startswith("compactlab ") for line in lines), lines  # what this test knows how to run
    return lines


def _run(line: str) -> int:
    print("$", line)
    return main(shlex.split(line)[1:])


@pytest.fixture
def my_sessions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh folder holding `my-sessions/`: three bundled sessions with prompts past 100,000 tokens."""
    folder = tmp_path / "my-sessions"
    folder.mkdir()
    for dataset, stem in (
        ("claude-code-log", "-src-deep-manifest__a7da6a22"),
        ("claude-code-log", "-Users-dain-workspace-claude-code-log-sample__37f83ec9"),
        ("m-claude", "abc757d1"),
    ):
        shutil.copy(bundled(dataset, stem), folder)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_readme_starts_with_the_two_commands() -> None:
    first = _bash_blocks(README)[0]
    assert README.startswith("# compactlab\n\n```bash\n") and tuple(first) == TOP
    assert README.index("## What it is") < README.index(JOBS[0]) < README.index(JOBS[1]) < README.index(JOBS[2])
    assert README.index(JOBS[2]) < README.index("## 4. Use it from Python") < README.index("## The reference")


def test_the_readme_stays_short() -> None:
    assert len(README.splitlines()) < 300 and len(README.encode()) < 20_000  # five minutes, not ninety-five kilobytes


def test_job_1_compare_strategies_runs_as_written(my_sessions: Path) -> None:
    for line in _job_commands(JOBS[0]):
        assert _run(line) == 0, line
    for run in ("my-run", "my-run-64k"):
        assert (my_sessions / run / "report.html").is_file() and (my_sessions / run / "summary.json").is_file()


def test_job_2_the_sweep_runs_as_written_and_its_pick_replays(my_sessions: Path) -> None:
    lines = _job_commands(JOBS[1])
    assert any(line.startswith("compactlab sweep ") for line in lines)
    for line in lines:
        assert _run(line) == 0, line
    assert (my_sessions / "my-sweep" / "recommended.toml").is_file() or (
        my_sessions / "my-sweep" / "no-recommendation.txt"
    ).is_file()


@pytest.mark.slow
def test_job_3_the_gate_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("COMPACTLAB_PROVIDER", "COMPACTLAB_BASE_URL", "OPENAI_API_KEY", KEY):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COMPACTLAB_MODEL", "gpt-4o-mini")
    monkeypatch.setenv("COMPACTLAB_KEY_ENV", KEY)
    lines = _job_commands(JOBS[2])
    assert [shlex.split(line)[1] for line in lines] == ["init", "baseline", "check"]
    with serve() as server:
        server.otherwise = summarizing()
        monkeypatch.setenv("COMPACTLAB_BASE_URL", server.openai_base_url)  # the reader's model, for the baseline
        assert _run(lines[0]) == 0 and _run(lines[1]) == 0
        assert server.count() > 0
    monkeypatch.delenv("COMPACTLAB_BASE_URL")  # CI: no server, no key; the answers were recorded
    capsys.readouterr()
    assert _run(lines[2]) == 0
    assert "no regression" in (tmp_path / "check.md").read_text(encoding="utf-8")


def test_the_reference_block_names_the_docs_extra_and_mkdocs() -> None:
    [block] = _bash_blocks(_section("## The reference"))
    assert block == ['.venv/bin/pip install -e ".[docs]" && .venv/bin/python -m mkdocs serve']
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^docs = \[.*"mkdocs==', pyproject, re.M)
