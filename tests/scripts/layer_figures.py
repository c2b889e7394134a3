"""The figures of the layer test: stage pairs allowed and used, and import cycles, on a tree.

    python -m tests.scripts.layer_figures [--rev REV]

Reads the source of the working tree (or of commit REV, through `git archive`) with
tests/package/layer_graph.py twice: import statements alone (how tests/package/test_layers.py read it before issue 30)
and everything Python runs (importlib by literal name, the strategy entry points, package `__init__`
code). Prints the number of modules and arrows, the stage pairs the order in tests/package/test_layers.py
allows against those its explicit `ALLOWED` list allows, the pairs in use, the arrows `ALLOWED`
forbids (known exceptions included), and every import cycle each reading finds.
"""

from __future__ import annotations

import argparse
import subprocess
import tarfile
import tempfile
from pathlib import Path

from tests.package.layer_graph import REPO, cycles, graph
from tests.package.test_layers import ALLOWED, KNOWN_EXCEPTIONS, ORDER, stage


def figures(tree: Path) -> list[str]:
    statements, everything = graph(tree, statements_only=True), graph(tree)
    # The order alone (the test before issue 30): any stage over any stage below it, replay.fast within replay.
    by_order = len(ORDER) * (len(ORDER) - 1) // 2
    used = {(stage(a), stage(b)) for a, targets in everything.items() for b in targets if stage(a) != stage(b)}
    merged = {(a.split(".")[0], b.split(".")[0]) for a, b in used if a.split(".")[0] != b.split(".")[0]}
    outside = sorted(f"{a} → {b}" for a, b in used if b not in ALLOWED.get(a, set()))
    exceptions = sorted(f"{a} → {b}" for a, targets in everything.items() for b in targets if (a, b) in KNOWN_EXCEPTIONS)
    lines = [
        f"modules {len(everything)}; arrows: {sum(map(len, statements.values()))} from import statements, "
        f"{sum(map(len, everything.values()))} counting importlib, entry points and package __init__ code",
        f"stage pairs allowed: {by_order} by the order, {sum(map(len, ALLOWED.values()))} by the explicit list; "
        f"in use: {len(used)} ({len(merged)} with replay.fast counted as replay)",
        f"stage pairs in use outside the explicit list: {len(outside)}" + "".join(f"\n  {pair}" for pair in outside),
        f"arrows the order allows but the design does not (known exceptions, issue 30): {len(exceptions)}"
        + "".join(f"\n  {arrow}" for arrow in exceptions),
    ]
    for label, arrows in (("import statements", statements), ("everything Python runs", everything)):
        found = cycles(arrows)
        lines.append(f"import cycles, {label}: {len(found)}" + "".join(f"\n  {' → '.join(c)}" for c in found))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.scripts.layer_figures", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rev", help="a commit to read instead of the working tree (e.g. main)")
    args = parser.parse_args(argv)
    if not args.rev:
        print("\n".join(figures(REPO)))
        return 0
    with tempfile.TemporaryDirectory(prefix="layer-figures-") as folder:
        archive = Path(folder) / "tree.tar"
        subprocess.run(
            ["git", "-C", str(REPO), "archive", "-o", str(archive), args.rev, "bench", "strategies", "pyproject.toml"], check=True
        )
        with tarfile.open(archive) as tar:
            tar.extractall(folder, filter="data")
        print(f"at {args.rev}:")
        print("\n".join(figures(Path(folder))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
