"""The Python API goes to the end (issue 33, point 5): the README's notebook example runs as written on
a bundled dataset, and what it returns is what the command line writes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

import compactlab
from compactlab.results.recommendation import Recommendation
from tests.conftest import REPO, bundled


def _notebook_example(document: str = "README.md") -> str:
    text = (REPO / document).read_text(encoding="utf-8")
    found = re.search(r"<!-- notebook-example -->\n```python\n(.*?)```", text, re.S)
    assert found, f"the {document} notebook example is gone"
    return found.group(1)


def test_the_reference_shows_the_same_example() -> None:
    assert _notebook_example("docs/python.md") == _notebook_example()  # docs/python.md, the reference's copy


def test_the_readme_notebook_example_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    names: dict = {}
    exec(compile(_notebook_example(), "README.md", "exec"), names)  # noqa: S102 - the README's own code
    result, swept = names["result"], names["swept"]
    board, verdict = names["board"], names["verdict"]
    assert isinstance(board, pd.DataFrame) and set(board["setting"]) == {"truncate", "observation-masking", "summarize"}
    assert result.sessions["session"].nunique() == 8  # limit=8
    assert isinstance(verdict, Recommendation) and verdict.reason
    # What the API returns is what the run directory holds, as `compactlab run` writes it.
    summary = json.loads((tmp_path / "notebook-run" / "summary.json").read_text())
    assert summary["recommendation"] == verdict.as_json()
    assert list(board["setting"]) == [row["setting"] for row in summary["leaderboard"]]
    page = names["page"]
    assert page.resolve() == tmp_path / "notebook-run" / "report.html" and "Which strategy should I use" in page.read_text()
    assert (tmp_path / "notebook-sweep" / "recommended.toml").read_text() == swept.recommended_toml
    assert swept.recommendation().setting and swept.recommendation().setting in swept.recommended_toml
    printed = capsys.readouterr().out
    assert verdict.summary() in printed


def test_paths_may_be_strings(tmp_path: Path) -> None:
    file = bundled("mini-swe-agent-pr816", "deepseek_chat_dev_pylint-dev__astroid-1333_")
    config = compactlab.RunConfig(datasets=(str(file),), window=20000, strategies=(compactlab.Setting("truncate", "truncate"),))
    # Before: a str output folder raised AttributeError ('str' object has no attribute 'mkdir').
    result = compactlab.run(config, str(tmp_path / "run"))
    assert isinstance(result, compactlab.RunResult)
    assert result.write_report(str(tmp_path / "page.html")) == tmp_path / "page.html"
    assert result.recommendation().setting == "truncate"
