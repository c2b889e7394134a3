"""Every third-party package compactlab imports is declared in pyproject.toml.

An undeclared import works in a development environment, where something else pulled the package
in, and fails on a user's clean install. Scanned: every import in bench/ and strategies/, at any
depth (function-level ones too), mapped to its distribution by the environment's own metadata.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# Imported only where the optional feature is asked for, and declared in that extra.
OPTIONAL = {"dask": "dask", "distributed": "dask"}
# Imported by the pytest plugin, which only pytest itself loads.
PROVIDED_BY_THE_CALLER = {"pytest"}


def _imported_top_levels() -> dict[str, str]:
    found: dict[str, str] = {}
    for path in sorted((REPO / "bench").rglob("*.py")) + sorted((REPO / "strategies").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in ("compactlab", "__future__"):
                    found.setdefault(top, f"{path.relative_to(REPO)}:{node.lineno}")
    return found


def _declared() -> tuple[set[str], dict[str, set[str]]]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]

    def names(requirements: list[str]) -> set[str]:
        return {re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower().replace("_", "-") for requirement in requirements}

    extras = {extra: names(requirements) for extra, requirements in project["optional-dependencies"].items()}
    return names(project["dependencies"]), extras


def test_every_imported_package_is_declared():
    main, extras = _declared()
    distributions = packages_distributions()
    undeclared = []
    for module, where in _imported_top_levels().items():
        if module in PROVIDED_BY_THE_CALLER:
            continue
        owners = {name.lower().replace("_", "-") for name in distributions.get(module, [module])}
        if module in OPTIONAL:
            if not owners & extras[OPTIONAL[module]]:
                undeclared.append(f"{module} ({where}) in the [{OPTIONAL[module]}] extra")
        elif not owners & main:
            undeclared.append(f"{module} ({where}): owned by {sorted(owners)}")
    assert undeclared == []


def test_the_scan_sees_the_imports_it_must():
    # numpy and markupsafe were once imported but not declared; the scan must see them to catch that.
    assert {"numpy", "markupsafe", "pandas", "pyarrow", "dask"} <= set(_imported_top_levels())


def test_every_package_folder_is_installed():
    # pyproject.toml lists the packages (bench/ and strategies/ are mapped into compactlab): a new
    # subpackage left out of the list would be missing from the wheel, not from a checkout.
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    folders = {
        "compactlab." + ".".join(p.parent.relative_to(REPO / "bench").parts) for p in (REPO / "bench").rglob("*/__init__.py")
    }
    assert folders | {"compactlab", "compactlab.strategies", "compactlab.bundled_datasets"} == listed
