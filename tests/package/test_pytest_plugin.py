"""The pytest plugin, used the way a team would: from a separate project directory whose tests
replay sessions with their own prompt template and assert on metrics."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

from compactlab.strategies.prompting import PROMPTS_DIR
from tests.conftest import bundled
from tests.fake_behaviours import summarizing
from tests.fake_providers import serve

# A session whose summaries need the file lists to keep the paths the next steps use.
MINI = bundled("mini-swe-agent-pr816", "deepseek_chat_dev_pvlib__pvlib-python-1707")

NEAR_EMPTY = "{{ conversation }} Summarize briefly.\n"  # the edit: a template that asks for nothing


def team_tests(base_url: str) -> str:
    """The team's tests: its prompt and a near-empty one, on a model (the local wire-format server)."""
    return f"""
SESSION = {str(MINI)!r}
MODEL = dict(provider="openai", model="gpt-4o-mini", base_url={base_url!r}, cache_dir="answers", max_retries=0)
OPTIONS = dict(settings={{"keep_recent_tokens": 4000, "summarizer": "llm"}}, window=32000, summarizer=MODEL)


def test_our_prompt_keeps_file_paths(compactlab_replay):
    result = compactlab_replay(SESSION, strategy="summarize", template="prompts/summary.j2", **OPTIONS)
    value = result.assert_metric("preservation_k5_path", ">=", 0.9)
    assert value.n == 1 and result.metric("compactions").mean >= 1
    result.assert_metric("removed_share", ">", 0.1)


def test_a_near_empty_prompt(compactlab_replay):
    result = compactlab_replay(SESSION, strategy="summarize", template="prompts/brief.j2", **OPTIONS)
    result.assert_metric("preservation_k5_path", ">=", 0.9)
"""


# Without a model the templates are never read: the session stops with exit 2 instead of passing.
OFFLINE_TESTS = f"""
def test_our_prompt_without_a_model(compactlab_replay):
    result = compactlab_replay({str(MINI)!r}, strategy="summarize", template="prompts/brief.j2", window=32000)
    result.assert_metric("preservation_k5_path", ">=", 0.0)
"""

# Collected and run before test_team.py (file order): the plugin is loaded, no replay has run yet.
UNRELATED_TESTS = """
import sys


def test_unrelated_tests_do_not_load_compactlab():
    assert "compactlab.runs.runs" not in sys.modules and "pandas" not in sys.modules
"""


def make_project(root: Path, tests: str) -> Path:
    """A separate project: its own tests and prompt templates, no compactlab configuration."""
    prompts = root / "tests" / "prompts"
    prompts.mkdir(parents=True)
    (prompts / "summary.j2").write_text((PROMPTS_DIR / "summary.j2").read_text(encoding="utf-8"), encoding="utf-8")
    (prompts / "brief.j2").write_text(NEAR_EMPTY, encoding="utf-8")
    (root / "tests" / "test_team.py").write_text(tests, encoding="utf-8")
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
    with serve() as server:
        server.otherwise = summarizing()
        project = make_project(tmp_path / "team-project", team_tests(server.openai_base_url))
        result = run_pytest(project)
        asked = server.count()
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    assert "1 failed, 2 passed" in out and asked > 0
    assert "FAILED tests/test_team.py::test_a_near_empty_prompt" in out
    # The readable failure: metric, value with its interval, threshold, replay, worst sessions, lost items.
    assert "AssertionError: compactlab: preservation_k5_path = " in out
    assert "(95% CI " in out and "1 session) is not >= 0.9" in out
    assert "replay: summarize" in out and "brief.j2" in out
    assert "worst sessions (lowest first):" in out and MINI.name.split(".")[0] in out
    assert "lost: path:" in out
    # Again with no server and no key: every answer is recorded beside the tests, so the same verdicts.
    again = run_pytest(project)
    assert again.returncode == 1 and "1 failed, 2 passed" in again.stdout, again.stdout + again.stderr


def test_a_template_no_model_reads_stops_the_session_with_exit_2(tmp_path) -> None:
    project = make_project(tmp_path / "team-project", OFFLINE_TESTS)
    result = run_pytest(project)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "prompt template brief.j2 named, but no model reads it" in result.stdout + result.stderr


def test_the_plugin_can_be_turned_off(tmp_path) -> None:
    project = make_project(tmp_path / "team-project", OFFLINE_TESTS)
    result = run_pytest(project, "-p", "no:compactlab")
    assert result.returncode == 1
    assert "fixture 'compactlab_replay' not found" in result.stdout
