"""One registry type (`compactlab.registry`) finds strategies and importers by name (issue 46): a typo
gets "did you mean", a name registered twice is an error, and a strategy this checkout's pyproject.toml
declares but the installed metadata does not list says to reinstall."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from compactlab.registry import Registry, Unknown
from compactlab.sessions.importers import get_importer, importers
from compactlab.strategies import registry as strategies
from compactlab.strategies.registry import get_strategy, registered
from tests.conftest import REPO


def test_strategies_and_importers_are_registries_of_one_type() -> None:
    assert isinstance(registered(), Registry) and isinstance(importers(), Registry)
    assert registered().kind == "strategy" and importers().kind == "format"
    assert "truncate" in registered() and "claude-code" in importers()


def test_a_typo_gets_did_you_mean_from_either_registry() -> None:
    with pytest.raises(Unknown, match=r"unknown strategy 'sumarize'\. Did you mean 'summarize'") as raised:
        get_strategy("sumarize")
    assert isinstance(raised.value, KeyError) and raised.value.close[0] == "summarize"
    assert "reinstall" not in str(raised.value)  # no pyproject.toml declares it
    with pytest.raises(KeyError, match=r"unknown format 'claude_code'\. Did you mean 'claude-code'"):
        get_importer("claude_code")


def test_a_name_registered_twice_is_an_error_not_a_replacement() -> None:
    found: Registry[int] = Registry("metric", lambda registry: [registry.register("recall", 1)][0])
    with pytest.raises(ValueError, match="metric 'recall' is registered twice: 1 and 2"):
        found.register("recall", 2)
    assert dict(found) == {"recall": 1}


def test_loading_happens_once_and_a_failed_load_is_tried_again() -> None:
    calls: list[int] = []

    def load(registry: Registry[str]) -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("no entry points yet")
        registry.register("one", "x")

    found: Registry[str] = Registry("strategy", load)
    with pytest.raises(RuntimeError):
        list(found)
    assert list(found) == ["one"] and found["one"] == "x" and len(found) == 1 and calls == [1, 1]


@pytest.fixture
def declared_not_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """This checkout's pyproject.toml with one strategy more than the installed metadata lists."""
    pyproject = tmp_path / "pyproject.toml"
    shutil.copy(REPO / "pyproject.toml", pyproject)
    text = pyproject.read_text(encoding="utf-8")
    group = '[project.entry-points."compactlab.strategies"]\n'
    assert group in text
    pyproject.write_text(text.replace(group, group + 'keep-first = "compactlab.strategies.truncate:Truncate"\n'))
    monkeypatch.setattr(strategies, "PYPROJECT", pyproject)
    return "keep-first"


def test_a_strategy_declared_but_not_installed_says_to_reinstall(declared_not_installed: str) -> None:
    with pytest.raises(KeyError) as raised:
        get_strategy(declared_not_installed)
    message = str(raised.value)
    assert message.startswith("unknown strategy 'keep-first'.") and "reinstall (`pip install -e .`)" in message
    assert "declares it, but the installed metadata does not list it" in message
    assert "See `compactlab strategies`" in message


def test_an_installed_wheel_has_no_pyproject_to_compare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(strategies, "PYPROJECT", tmp_path / "pyproject.toml")  # site-packages: none there
    assert strategies.declared() == {}
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "another"\n[project.entry-points."compactlab.strategies"]\nx = "a:b"\n'
    )
    assert strategies.declared() == {}  # another project's file is not compactlab's declaration
