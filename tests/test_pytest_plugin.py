"""The pytest plugin, used the way a team would: from a separate project directory whose tests
replay transcripts with their own prompt template and assert on metrics."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

from compactlab.strategies.prompting import PROMPTS_DIR
from tests.conftest import bundled

# A session whose summaries need the file lists to keep the paths the next steps use.
MINI = bundled("mini-swe-agent-pr816", "deepseek_chat_dev_pvlib__pvlib-python-1707")
FILES_IMPORT = '{%- from "files.j2" import files -%}'

TEAM_TESTS = f"""
TRANSCRIPT = {str(MINI)!r}
OPTIONS = dict(settings={{"keep_recent_tokens": 4000}}, window=32000)


def test_our_prompt_keeps_file_paths(compactlab_replay):
    result = compactlab_replay(TRANSCRIPT, strategy="summarize", template="prompts/summary.j2", **OPTIONS)
    value = result.assert_metric("preservation_k5_path", ">=", 0.9)
    assert value.n == 1 and result.metric("compactions").mean >= 1
    result.assert_metric("removed_share", ">", 0.1)


def test_a_prompt_without_the_file_list(compactlab_replay):
    result = compactlab_replay(TRANSCRIPT, strategy="summarize", template="prompts/no_files.j2", **OPTIONS)
    result.assert_metric("preservation_k5_path", ">=", 0.9)
"""

# Collected and run before test_team.py (file order): the plugin is loaded, no replay has run yet.
UNRELATED_TESTS = """
import sys


def test_unrelated_tests_do_not_load_compactlab():
    assert "compactlab.runs.runs" not in sys.modules and "pandas" not in sys.modules
"""


def make_project(root: Path) -> Path:
    """A separate project: its own tests and prompt templates, no compactlab configuration."""
    prompts = root / "tests" / "prompts"
    prompts.mkdir(parents=True)
    source = (PROMPTS_DIR / "summary.j2").read_text(encoding="utf-8")
    (prompts / "summary.j2").write_text(source, encoding="utf-8")
    (prompts / "no_files.j2").write_text(source.replace(FILES_IMPORT, "", 1), encoding="utf-8")
    (root / "tests" / "test_team.py").write_text(TEAM_TESTS, encoding="utf-8")
    (root / "tests" / "test_a_unrelated.py").write_text(UNRELATED_TESTS, encoding="utf-8")
    return root


def run_pytest(project: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, "tests"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_plugin_is_registered_as_a_pytest11_entry_point() -> None:
    assert {e.name: e.value for e in entry_points(group="pytest11")}.get("compactlab") == "compactlab.pytest_plugin"


def test_the_plugin_works_from_a_separate_project(tmp_path) -> None:
    project = make_project(tmp_path / "team-project")
    result = run_pytest(project)
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    assert "1 failed, 2 passed" in out
    assert "FAILED tests/test_team.py::test_a_prompt_without_the_file_list" in out
    # The readable failure: metric, value with its interval, threshold, replay, worst transcripts, lost items.
    assert "AssertionError: compactlab: preservation_k5_path = " in out
    assert "(95% CI " in out and "1 transcript) is not >= 0.9" in out
    assert "replay: summarize" in out and "no_files.j2" in out
    assert "worst transcripts (lowest first):" in out and MINI.name.split(".")[0] in out
    assert "lost: path:" in out


def test_the_plugin_can_be_turned_off(tmp_path) -> None:
    project = make_project(tmp_path / "team-project")
    result = run_pytest(project, "-p", "no:compactlab")
    assert result.returncode == 1
    assert "fixture 'compactlab_replay' not found" in result.stdout
