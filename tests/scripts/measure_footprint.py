"""Installed size of compactlab's dependencies, from the environment's own package metadata.

For each requirement of compactlab (its main dependencies, and each extra) the closure of the
distributions it pulls in, and what the environment would weigh without a given set of them.

    python -m tests.scripts.measure_footprint [PACKAGE ...]   (default: openai anthropic matplotlib)
"""

from __future__ import annotations

import argparse
import re
from importlib.metadata import PackageNotFoundError, distribution, distributions


def _name(text: str) -> str:
    return re.split(r"[ ;<>=!~\[(]", text.strip(), maxsplit=1)[0].lower().replace("_", "-")


def size_of(name: str) -> int:
    dist = distribution(name)
    return sum(f.size or 0 for f in dist.files or ())


def requires(name: str) -> list[str]:
    try:
        dist = distribution(name)
    except PackageNotFoundError:
        return []
    return [_name(r) for r in dist.requires or () if "extra ==" not in r]


def closure(roots: list[str]) -> set[str]:
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        try:
            distribution(name)
        except PackageNotFoundError:
            continue
        seen.add(name)
        todo += requires(name)
    return seen


def main(dropped: list[str]) -> None:
    mb = 1024 * 1024
    everything = sum(size_of(d.metadata["Name"]) for d in distributions())
    main_deps = requires("compactlab")
    kept = closure([d for d in main_deps if d not in dropped])
    full = closure(main_deps)
    print(f"all installed distributions: {everything / mb:.0f} MB")
    print(f"compactlab's main dependencies and theirs: {sum(map(size_of, full)) / mb:.0f} MB ({len(full)} distributions)")
    for name in dropped:
        only = closure([name]) - closure([d for d in main_deps if d != name])
        print(f"  only {name} needs: {sum(map(size_of, only)) / mb:.0f} MB ({', '.join(sorted(only))})")
    print(f"without {', '.join(dropped)}: {sum(map(size_of, kept)) / mb:.0f} MB ({len(kept)} distributions)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m tests.scripts.measure_footprint", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "packages", nargs="*", default=["openai", "anthropic", "matplotlib"], help="the dependencies to weigh without"
    )
    main(parser.parse_args().packages)
