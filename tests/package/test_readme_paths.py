"""Every file the documentation names exists, and every `python -m` module it names can be run.

Files move (issue 17 regrouped `bench/`); a README that names the old place sends a reader to
nothing. Paths under `reports/run` and `reports/sweep` are what `compactlab run` and `sweep` write,
not files of the repository.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = (ROOT / "README.md", ROOT / "reports" / "README.md", *sorted((ROOT / "docs").glob("*.md")))
PATH = re.compile(r"(?<![\w/.])((?:bench|strategies|tests|docs|datasets|reports|\.ci)/[\w./-]*[\w/])(?![{*\w])")
MODULE = re.compile(r"python3? -m ((?:compactlab|tests)(?:\.\w+)+)")
WRITTEN_BY_RUNS = ("reports/run", "reports/sweep")


def named(pattern: re.Pattern[str]) -> list[tuple[str, str]]:
    return [
        (document.relative_to(ROOT).as_posix(), m.group(1))
        for document in DOCUMENTS
        for m in pattern.finditer(document.read_text())
    ]


def test_every_path_the_documentation_names_exists() -> None:
    paths = named(PATH)
    assert len(paths) > 50  # the pattern finds the documentation's paths at all
    missing = [(doc, path) for doc, path in paths if not path.startswith(WRITTEN_BY_RUNS) and not (ROOT / path).exists()]
    assert missing == []


def test_every_module_the_documentation_runs_exists() -> None:
    modules = [(doc, name) for doc, name in named(MODULE) if not name.endswith(".NAME")]  # a placeholder in the README
    assert len(modules) > 5
    assert [(doc, name) for doc, name in modules if importlib.util.find_spec(name) is None] == []
