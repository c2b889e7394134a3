"""The verdicts of one folder of sessions at the models' real windows and at a simulated one, side by side.

    python -m tests.scripts.window_verdicts PATH... [--window 64000] [--lenient]

Runs `compactlab run` twice on the same sessions, each into a folder of its own under a temporary
directory: with no --window (each model's real window, the default for your own sessions) and with
--window N (a stress test). Prints, for each, the window the verdict is at, the verdict in a few
words, the stress verdict a real-window run added and the next steps of its dead ends (issue 43's
closing figures). Wall and CPU time of each run are printed beside it.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from compactlab.results.recommendation import Recommendation


def _run(paths: list[str], out: Path, extra: list[str]) -> tuple[int, float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "compactlab.cli.main", "run", "--dataset", *paths, *extra, "--out", str(out)],
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 3):
        print(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}", file=sys.stderr)
    return done.returncode, wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def describe(out: Path) -> list[str]:
    summary = json.loads((out / "summary.json").read_text())
    lines = [f"  window: {summary['verdict_window']['text']}"]
    lines.append(f"  verdict: {Recommendation.from_json(summary['recommendation']).short()}")
    stress = summary.get("stress_verdict")
    if stress:
        second = Recommendation.from_json(stress.get("recommendation") or {}).short() if "recommendation" in stress else ""
        lines.append(f"  second verdict: {stress['why']}; {second or stress.get('error') or stress.get('command')}")
    lines += [f"  next: {step['cause']}: {step['command']}" for step in summary.get("next_steps", [])]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", help="session files or folders")
    parser.add_argument("--window", type=int, default=64000, help="the simulated window to compare with (default 64000)")
    parser.add_argument("--lenient", action="store_true", help="skip damaged records (counted)")
    args = parser.parse_args(argv)
    extra = ["--lenient"] if args.lenient else []
    with tempfile.TemporaryDirectory() as folder:
        for name, flags in (("real windows (the default)", []), (f"--window {args.window}", ["--window", str(args.window)])):
            out = Path(folder) / name.split()[0].strip("-")
            code, wall, cpu = _run(args.paths, out, [*extra, *flags])
            print(f"{name}: exit {code}, {wall:.1f} s wall, {cpu:.1f} s CPU")
            if (out / "summary.json").exists():
                print("\n".join(describe(out)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
