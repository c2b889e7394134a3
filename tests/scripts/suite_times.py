"""How long the test suite takes: the whole suite once, its time per test file, and what the local
run (the tests not marked slow) and CI (every test) each cost.

    python -m tests.scripts.suite_times [--local] [--out FILE] [PYTEST ARGUMENT ...]

Runs `pytest -m "" --durations=0` in a child process (so every test, as CI does; with --local the
default `pytest -q`, slow tests left out, as a local run), with the given arguments after it, and prints:
- the wall time and the CPU time (user + system, the child's and every process it waited for:
  pytest-xdist's workers, replay workers, the browser, pip) of the whole run;
- per test file, the seconds its tests took (setup, call and teardown as pytest reports them; a
  session fixture counts in the file whose test first asked for it, in each worker), marked slow or not;
- the sum over the tests a local run keeps and over the slow ones. The suite runs on every core
  (pytest-xdist), so these sums are work, not wall time: a local run's wall time is measured by --local.
A loaded machine stretches wall time; CPU time stays near what a quiet machine needs. --out also
writes pytest's own output to FILE.
"""

from __future__ import annotations

import argparse
import re
import resource
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# pytest's --durations lines: "12.34s call     tests/x/test_y.py::test_z[param]"
# (a parameter's id may hold spaces: "...::test_each_input_case_ends_as_wanted[FIFO in a dataset folder]")
DURATION = re.compile(r"^(\d+(?:\.\d+)?)s (setup|call|teardown)\s+(\S+?\.py)::(.+)$", re.MULTILINE)


def slow_tests(extra: list[str]) -> set[str]:
    """The ids of the tests marked slow, as pytest collects them."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "slow", *extra], cwd=REPO, capture_output=True, text=True
    )
    return {line.strip() for line in done.stdout.splitlines() if "::" in line}


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, help="also write pytest's output here")
    parser.add_argument("--read", type=Path, help="read the output --out saved instead of running the suite again")
    parser.add_argument("--local", action="store_true", help="run what a local run runs (slow tests left out), not every test")
    arguments, extra = parser.parse_known_args(argv)
    slow = slow_tests(extra)
    cpu_before, started = children_cpu(), time.monotonic()
    if arguments.read:
        done = subprocess.CompletedProcess([], 0, arguments.read.read_text(encoding="utf-8"), "")
    else:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-m",
                "not slow" if arguments.local else "",
                "--durations=0",
                "--durations-min=0",
                "-p",
                "no:cacheprovider",
                *extra,
            ],
            cwd=REPO,
            capture_output=True,
            text=True,
        )
    wall, cpu = time.monotonic() - started, children_cpu() - cpu_before
    if arguments.out:
        arguments.out.write_text(done.stdout + done.stderr, encoding="utf-8")
    per_file: dict[tuple[str, bool], float] = defaultdict(float)
    for seconds, _, path, name in DURATION.findall(done.stdout):
        per_file[(path, f"{path}::{name}" in slow)] += float(seconds)
    if not per_file:
        print(done.stdout[-3000:] + done.stderr[-3000:], file=sys.stderr)
        print("no durations in pytest's output", file=sys.stderr)
        return 2
    print(f"{'seconds':>9}  {'slow':>4}  file")
    for (path, is_slow), seconds in sorted(per_file.items(), key=lambda item: -item[1]):
        print(f"{seconds:9.1f}  {'slow' if is_slow else '':>4}  {path}")
    local = sum(s for (_, is_slow), s in per_file.items() if not is_slow)
    slow_sum = sum(s for (_, is_slow), s in per_file.items() if is_slow)
    [summary] = [line for line in done.stdout.splitlines()[-3:] if " in " in line] or ["(no summary line)"]
    print(f"\npytest: {summary.strip('= ')}")
    if not arguments.read:  # (a saved output has no times of its own but its tests')
        which = "local run (-m 'not slow')" if arguments.local else "whole suite (CI, -m '')"
        print(f"{which}: wall {wall / 60:.1f} min, CPU {cpu / 60:.1f} min")
    print(f"tests a local run keeps: {local / 60:.1f} min of test time; slow tests: {slow_sum / 60:.1f} min ({len(slow)} tests)")
    return 0 if done.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
