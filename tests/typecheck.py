"""Type-check compactlab with mypy, as .ci/run and the pre-commit hook do.

    python -m tests.typecheck [MYPY OPTION ...]

mypy finds a package by its folders, and compactlab's are two: bench/ is the package and
strategies/ its `strategies` subpackage (pyproject.toml maps them, which mypy cannot read). So this
builds the package as an installed copy would lay it out, a tree of links under build/mypy-tree/,
checks it with the settings in pyproject.toml, and prints every error at its file in the repository.
It checks tests/scripts/ too (`tests.scripts`: the measurement scripts, in no wheel, run from a
checkout). Exits with mypy's code.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TREE = REPO / "build" / "mypy-tree"


def link_tree() -> Path:
    """build/mypy-tree/compactlab: links to each entry of bench/, and `strategies` to strategies/."""
    package = TREE / "compactlab"
    package.mkdir(parents=True, exist_ok=True)
    wanted = {entry.name: entry for entry in (REPO / "bench").iterdir() if entry.name != "__pycache__"}
    wanted["strategies"] = REPO / "strategies"
    for link in package.iterdir():
        if link.name not in wanted or not link.is_symlink() or link.resolve() != wanted[link.name]:
            link.unlink()
    for name, target in wanted.items():
        if not (package / name).is_symlink():
            (package / name).symlink_to(target)
    return package


def in_repository(line: str, package: Path) -> str:
    """A mypy line with its path in the link tree replaced by the file's path in the repository."""
    for prefix, real in ((f"{package}/strategies/", "strategies/"), (f"{package}/", "bench/")):
        for shown in (prefix, os.path.relpath(prefix, REPO) + "/"):
            if line.startswith(shown):
                return real + line[len(shown) :]
    return line


def main(argv: list[str]) -> int:
    package = link_tree()
    command = [
        sys.executable,
        "-m",
        "mypy",
        "--config-file",
        str(REPO / "pyproject.toml"),
        "-p",
        "compactlab",
        "-p",
        "tests.scripts",
        *argv,
    ]
    environment = {**os.environ, "MYPYPATH": str(TREE)}
    done = subprocess.run(command, cwd=REPO, env=environment, capture_output=True, text=True)
    for line in done.stdout.splitlines():
        print(in_repository(line, package))
    sys.stderr.write(done.stderr)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
