"""What a refused `compactlab run` costs and leaves behind, on a folder of sessions.

    python -m tests.scripts.refused_runs FOLDER [--lenient]

Runs `compactlab run --dataset FOLDER` with one mistake at a time (a --context-window key no session's
model has, a --window no session fits in, --out inside the dataset, an unknown strategy, an unknown
estimator) and prints, for each, the exit code, the wall time to the error, the files left in --out
and in the dataset folder, and the error's first words (issue 43: check first, then work; a refused
run writes nothing). A machine's load is printed first: read the times beside it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")} if folder.exists() else set()


def mistakes(folder: Path, out: Path) -> dict[str, list[str]]:
    """Each mistake's extra arguments (after `run --dataset FOLDER`)."""
    return {
        "--context-window key no model has": ["--context-window", "claude-sonet-4=100000", "--out", str(out)],
        "--window 100": ["--window", "100", "--out", str(out)],
        "--out inside the dataset": ["--out", str(folder / "out")],
        "unknown strategy": ["--strategy", "sumarize", "--out", str(out)],
        "unknown estimator": ["--estimator", "tiktokn", "--out", str(out)],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="a folder of session files")
    parser.add_argument("--lenient", action="store_true", help="skip damaged records (counted)")
    args = parser.parse_args(argv)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    dataset_before = _files(args.folder)
    with tempfile.TemporaryDirectory() as temporary:
        for number, name in enumerate(mistakes(args.folder, Path(temporary))):
            extra = mistakes(args.folder, Path(temporary) / f"out-{number}")[name]  # a folder of its own each
            out = Path(extra[extra.index("--out") + 1])
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "compactlab.cli.main", "run", "--dataset", str(args.folder), *extra]
                + (["--lenient"] if args.lenient else []),
                capture_output=True,
                text=True,
            )
            wall = time.perf_counter() - start
            left = sorted(_files(out)) if out.parent != args.folder else []
            added = sorted(_files(args.folder) - dataset_before)
            error = (done.stderr.strip().splitlines() or [""])[-1][:140]
            print(f"{name}: exit {done.returncode} after {wall:.1f} s wall; left in --out: {len(left)} files {left[:4]}")
            print(f"  added to the dataset folder: {added or 'nothing'}; error: {error}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
