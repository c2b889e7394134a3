"""The report's CPU as a share of the default run's: `compactlab report RUN` against `compactlab run`.

    python -m tests.scripts.report_share [--repeats 3] [--dataset NAME ...] [--keep DIR]

The README's default run (`compactlab run`: every bundled dataset, every built-in strategy, its
report included) and then `compactlab report` of the run it wrote, each in a fresh process, CPU
time (user + system of the process and every worker it waited for) beside wall time. One run and
report on one dataset first, untimed, so that the file cache holds the datasets and the encodings
(a cold first run would inflate whichever came first). The repeats alternate run and report, so
a change of load hits both; the load average is printed before and after each. The share is the
report's CPU over the run's (the run includes writing its own report, as `compactlab run` does);
the issue's goal is at most 15%.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOAL = 0.15  # the report's CPU over the default run's, at most (issue 31)


def compactlab() -> list[str]:
    """The `compactlab` command of this interpreter's installation."""
    script = Path(sys.executable).with_name("compactlab")
    return [str(script)] if script.exists() else [sys.executable, "-c", "from compactlab.cli.main import main; main()"]


def timed(command: list[str]) -> tuple[float, float]:
    """CPU seconds (the process and the children it waited for) and wall seconds of `command`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 3):  # 3: done, a strategy not ranked (still a whole run)
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def load() -> str:
    return "/".join(f"{value:.2f}" for value in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="timed run + report pairs (default 3)")
    parser.add_argument("--dataset", nargs="+", default=[], help="datasets of the run (default: every bundled one)")
    parser.add_argument("--keep", type=Path, help="keep the last run directory here (default: a temporary folder)")
    args = parser.parse_args(argv)
    datasets = ["--dataset", *args.dataset] if args.dataset else []
    with tempfile.TemporaryDirectory(prefix="report-share-") as scratch:
        out = Path(scratch) / "run"
        print(f"cores {os.cpu_count()}, load {load()} (1/5/15 min)")
        # Warm-up, untimed: the smallest bundled dataset, run and report.
        warm = Path(scratch) / "warm"
        timed([*compactlab(), "run", "--dataset", "claude-code-log", "--limit", "2", "--out", str(warm)])
        timed([*compactlab(), "report", str(warm)])
        runs, reports = [], []
        for repeat in range(1, args.repeats + 1):
            shutil.rmtree(out, ignore_errors=True)
            before = load()
            run_cpu, run_wall = timed([*compactlab(), "run", *datasets, "--out", str(out)])
            report_cpu, report_wall = timed([*compactlab(), "report", str(out)])
            runs.append((run_cpu, run_wall))
            reports.append((report_cpu, report_wall))
            print(
                f"repeat {repeat}: run {run_cpu:.1f} s CPU, {run_wall:.1f} s wall; report {report_cpu:.1f} s CPU, "
                f"{report_wall:.1f} s wall; share {report_cpu / run_cpu:.1%} (load {before} -> {load()})"
            )
        shares = [report[0] / run[0] for run, report in zip(runs, reports)]
        run_cpu = statistics.median(r[0] for r in runs)
        report_cpu = statistics.median(r[0] for r in reports)
        verdict = "meets" if max(shares) <= GOAL else "misses"
        print(
            f"median: run {run_cpu:.1f} s CPU ({statistics.median(r[1] for r in runs):.1f} s wall), report "
            f"{report_cpu:.1f} s CPU ({statistics.median(r[1] for r in reports):.1f} s wall); report share "
            f"{statistics.median(shares):.1%} (repeats {', '.join(f'{s:.1%}' for s in shares)}); {verdict} the goal of "
            f"at most {GOAL:.0%}"
        )
        if args.keep is not None:
            shutil.rmtree(args.keep, ignore_errors=True)
            shutil.copytree(out, args.keep)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
