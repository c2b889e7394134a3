"""The house's figures on a tree: what an engineer who must change the package pays for (issue 46).

    python -m tests.scripts.house_figures [--rev REV ...]

For the working tree (or each commit REV, through `git archive`), over the installed package's source
(`bench/` and `strategies/`): Python files and lines, the share of lines over 100 characters,
modules over 400 lines, public names without a docstring (module-level classes and functions whose
name does not start with `_`, and the public methods of public classes) and the modules under a
`measure/` folder (measurement shipped in the wheel). One line per tree, so two revisions read side
by side.
"""

from __future__ import annotations

import argparse
import ast
import io
import subprocess
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = ("bench", "strategies")
LONG = 100
LARGE = 400


def _public_without_docstring(tree: ast.Module) -> list[str]:
    missing = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and not node.name.startswith("_"):
            if ast.get_docstring(node) is None:
                missing.append(node.name)
            if isinstance(node, ast.ClassDef):
                missing += [
                    f"{node.name}.{item.name}"
                    for item in node.body
                    if isinstance(item, ast.FunctionDef) and not item.name.startswith("_") and ast.get_docstring(item) is None
                ]
    return missing


def figures(root: Path) -> dict[str, object]:
    files = sorted(p for folder in PACKAGE for p in (root / folder).rglob("*.py"))
    lines = long = undocumented = 0
    large, measure = [], []
    for path in files:
        text = path.read_text(encoding="utf-8")
        rows = text.splitlines()
        lines += len(rows)
        long += sum(len(row) > LONG for row in rows)
        if len(rows) > LARGE:
            large.append(f"{path.relative_to(root)} ({len(rows)})")
        if "measure" in path.relative_to(root).parts:
            measure.append(path)
        undocumented += len(_public_without_docstring(ast.parse(text)))
    return {
        "files": len(files),
        "lines": lines,
        f"lines over {LONG} characters": f"{long} ({long / max(lines, 1):.1%})",
        "public names without a docstring": undocumented,
        f"modules over {LARGE} lines": ", ".join(large) or "none",
        "measurement modules in the package": len(measure),
    }


def _tree(rev: str, into: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, *PACKAGE], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", nargs="*", default=[], help="commits to read (default: the working tree)")
    args = parser.parse_args(argv)
    for rev in args.rev or [None]:
        with tempfile.TemporaryDirectory() as temporary:
            root = REPO if rev is None else _tree(rev, Path(temporary))
            shown = "; ".join(f"{k}: {v}" for k, v in figures(root).items())
            print(f"{rev or 'working tree'}: {shown}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
