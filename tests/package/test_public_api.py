"""The public API: the names `compactlab` exports, served lazily, and what they do on real data."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest

import compactlab
from compactlab.sessions.datasets import get_dataset


def test_the_public_names_are_few_and_all_resolve():
    names = [name for name in compactlab.__all__ if name != "__version__"]
    assert 8 <= len(names) <= 14
    for name in names:
        assert getattr(compactlab, name) is not None
    assert set(names) <= set(dir(compactlab))


def test_an_unknown_name_says_which_names_exist():
    with pytest.raises(AttributeError, match="public names are"):
        _ = compactlab.Engine


def test_import_compactlab_loads_no_heavy_library():
    # The pytest plugin and `import compactlab` in a user's project must stay cheap: names load on first use.
    code = "import sys, compactlab; print(sorted(m for m in ('pandas', 'tiktoken', 'pyarrow', 'matplotlib') if m in sys.modules))"
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert shown == "[]"


def test_version_is_the_installed_one_and_the_command_says_it():
    shown = subprocess.run([sys.executable, "-m", "compactlab.cli.main", "--version"], capture_output=True, text=True)
    assert compactlab.__version__ != "0+unknown"
    assert shown.stdout.strip() == f"compactlab {compactlab.__version__}"


def test_load_compact_and_run_on_a_bundled_dataset(tmp_path):
    loaded = compactlab.load_inputs(["mini-swe-agent-pr816"])
    assert loaded.sessions and not loaded.failed
    session = max(loaded.sessions, key=lambda t: len(t.calls))
    shown = compactlab.compact(session, "summarize")
    assert shown.event.changed and shown.after.summary and len(shown.after.messages) < len(shown.before.messages)

    file = next(f for f in get_dataset("mini-swe-agent-pr816").files if session.id in f.name)
    config = compactlab.RunConfig(
        datasets=(str(file),),
        strategies=(compactlab.Setting("truncate@0.5", "truncate", trigger=compactlab.Trigger(fraction=0.5)),),
    )
    result = compactlab.run(config, tmp_path / "run")
    assert isinstance(result.sessions, pd.DataFrame) and list(result.sessions["setting"]) == ["truncate@0.5"]
    assert isinstance(result.calls, pd.DataFrame) and len(result.calls) == len(session.calls)
    assert isinstance(result.compactions, pd.DataFrame) and len(result.compactions) >= 1


def test_a_strategy_written_with_the_authoring_module_alone_runs(tmp_path):
    """The example in `compactlab.authoring`'s docstring, as a file of its own, replayed on a bundled
    session through `--strategy FILE:CLASS`: a strategy author needs no internal module."""
    import ast
    import textwrap

    import compactlab.authoring as authoring
    from compactlab.cli.main import main

    example = textwrap.dedent(authoring.__doc__.split(":\n\n", 1)[1].split("\n\nUse it")[0])
    imported = {node.module for node in ast.walk(ast.parse(example)) if isinstance(node, ast.ImportFrom)}
    assert imported == {"dataclasses", "compactlab.authoring"}
    (tmp_path / "keep_last.py").write_text(example)
    for name in authoring.__all__:
        assert getattr(authoring, name) is not None
    file = get_dataset("mini-swe-agent-pr816").files[0]
    out = tmp_path / "run"
    assert (
        main(
            [
                "run",
                "--dataset",
                str(file),
                "--strategy",
                f"{tmp_path / 'keep_last.py'}:KeepLastTurns",
                "--window",
                "12000",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    sessions = pd.read_csv(out / "sessions.csv")
    assert (sessions["compactions"] > 0).any()
