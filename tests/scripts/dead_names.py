"""Dead names: module-level functions, classes and constants of compactlab that nothing uses.

    python -m tests.scripts.dead_names [--rev REV]

Reads the source of the working tree (or of commit REV, through `git archive`) without importing it.
A name defined at the top of a module in bench/ or strategies/ is used when it occurs anywhere in
those folders outside its own definition (a name read, an attribute, an import, a word of a string:
getattr and the public API's lazy table name things by string; not a word of a docstring, which
documents a name and does not use it), in a report template or in
pyproject.toml (entry points). Printed: the names used nowhere, then those used only by tests/ (the
tests check something the package never runs). Methods are not counted: what calls a method is not
known without types. Dunder names and `main` are left out.
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import tarfile
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _defined(tree: ast.Module) -> list[tuple[str, int]]:
    found = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.append((node.name, node.lineno))
        elif isinstance(node, ast.Assign):
            found += [(target.id, node.lineno) for target in node.targets if isinstance(target, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found.append((node.target.id, node.lineno))
    return found


def _uses(tree: ast.Module) -> Counter[str]:
    used: Counter[str] = Counter()
    # A string that is a statement of its own (a docstring) documents a name, it does not use it: a
    # name only docstrings mention is dead (`PER_COMPACTION` once passed on its module's docstring).
    documentation = {
        id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    for node in ast.walk(tree):
        if id(node) in documentation:
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            used[node.id] += 1
        elif isinstance(node, ast.Attribute):
            used[node.attr] += 1
        elif isinstance(node, ast.alias):
            used[node.name.split(".")[-1]] += 1
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            used.update(WORD.findall(node.value))
    return used


def dead_names(tree_root: Path) -> tuple[list[str], list[str]]:
    """(names used nowhere, names used only by tests), each as `path:line name`."""
    package = sorted((tree_root / "bench").rglob("*.py")) + sorted((tree_root / "strategies").rglob("*.py"))
    parsed = {path: ast.parse(path.read_text(encoding="utf-8")) for path in package}
    in_package: Counter[str] = Counter()
    for tree in parsed.values():
        in_package += _uses(tree)
    for text_file in [*sorted((tree_root / "bench").rglob("*.j2")), tree_root / "pyproject.toml"]:
        in_package.update(WORD.findall(text_file.read_text(encoding="utf-8")))
    in_tests: Counter[str] = Counter()
    for path in sorted((tree_root / "tests").rglob("*.py")):
        in_tests += _uses(ast.parse(path.read_text(encoding="utf-8")))
    unused: list[str] = []
    tests_only: list[str] = []
    for path, tree in parsed.items():
        for name, line in _defined(tree):
            if name.startswith("__") or name == "main" or in_package[name]:
                continue
            (tests_only if in_tests[name] else unused).append(f"{path.relative_to(tree_root)}:{line} {name}")
    return unused, tests_only


def report(tree_root: Path) -> str:
    unused, tests_only = dead_names(tree_root)
    return "\n".join(
        [f"used nowhere: {len(unused)}", *(f"  {n}" for n in unused), f"used only by tests: {len(tests_only)}"]
        + [f"  {n}" for n in tests_only]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.scripts.dead_names", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rev", help="a commit to read instead of the working tree (e.g. main)")
    args = parser.parse_args(argv)
    if not args.rev:
        print(report(REPO))
        return 0
    with tempfile.TemporaryDirectory(prefix="dead-names-") as folder:
        archive = Path(folder) / "tree.tar"
        paths = ["bench", "strategies", "tests", "pyproject.toml"]
        subprocess.run(["git", "-C", str(REPO), "archive", "-o", str(archive), args.rev, *paths], check=True)
        with tarfile.open(archive) as tar:
            tar.extractall(folder, filter="data")
        print(f"at {args.rev}:\n{report(Path(folder))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
