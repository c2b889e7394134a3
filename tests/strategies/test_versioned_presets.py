"""Issue 48: a preset is named with or without its version. Without, it is the newest (the registered
one); `name@commit` (a prefix of 4 or more characters) or `name@date` names that version, and a version
the preset does not have is refused naming the ones it has; a run records each preset's version."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compactlab.cli.main import main
from compactlab.strategies.preset_versions import VERSIONS
from compactlab.strategies.registry import get_strategy
from tests.conftest import bundled


def test_a_preset_named_with_its_version_is_that_preset() -> None:
    for name in ("cline", "pi", "gemini-cli"):
        version = VERSIONS[name]
        assert version.tag and len(version.tag) == 8
        for asked in (version.tag, version.tag[:4], version.date):
            assert get_strategy(f"{name}@{asked}") == get_strategy(name), (name, asked)
    assert VERSIONS["cline"].tag == "21cb8d25" and VERSIONS["goose"].tag == ""  # goose's commit could not be read


def test_a_version_a_preset_does_not_have_is_refused_naming_its_versions() -> None:
    with pytest.raises(KeyError, match=r"cline has no version 'deadbeef'; its versions: cline@21cb8d25 \(2026-08-22\)"):
        get_strategy("cline@deadbeef")
    with pytest.raises(KeyError, match=r"cline has no version '21c'"):  # a prefix too short to name a commit
        get_strategy("cline@21c")
    with pytest.raises(KeyError, match=r"'truncate' is not a versioned preset"):
        get_strategy("truncate@2026-01-01")
    with pytest.raises(KeyError, match=r"Did you mean 'cline'"):
        get_strategy("clne@21cb8d25")


def test_a_run_records_the_version_of_each_preset_it_ran(tmp_path: Path) -> None:
    session = bundled("claude-code-log", "-src-deep-manifest__a7da6a22")
    out = tmp_path / "run"
    assert main(["run", "--dataset", str(session), "--strategy", "cline", "pi@83378aad", "truncate", "--out", str(out)]) == 0
    meta = json.loads((out / "meta.json").read_text(encoding="utf-8"))
    assert meta["presets"] == {"cline": VERSIONS["cline"].line(), "pi@83378aad": VERSIONS["pi"].line()}
