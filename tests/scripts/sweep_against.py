"""A default `compactlab sweep --no-report` of another installation against this one's, side by side.

    python -m tests.scripts.sweep_against [--repeats N] OTHER_COMPACTLAB [-- EXTRA SWEEP ARGUMENTS]

OTHER_COMPACTLAB is another checkout's `compactlab` command (main's, to measure a change against
it). Both sweep the bundled data in fresh processes, taking turns after an untimed run of each
(`tests.scripts.timing.interleaved`), each into a folder of its own; CPU time (the workers' too)
is given beside wall time, with the load average before and after, and the ratio of this one's
over the other's (a ratio whose repeats spread beyond the bound is UNSTABLE, not a figure).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from tests.scripts.timing import Ratio, Timing, compactlab_command, interleaved, listed, load, timed_command


def sweep_task(command: str, folder: Path, extra: list[str]):
    """A default sweep by `command` into a fresh folder under `folder`, timed (it must succeed)."""
    runs = iter(range(1_000))

    def task() -> Timing:
        timing, done = timed_command([command, "sweep", "--no-report", "--out", str(folder / f"run{next(runs)}"), *extra])
        if done.returncode != 0:
            raise SystemExit(f"{command} sweep failed ({done.returncode}):\n{done.stderr[-2000:]}")
        return timing

    return task


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("other", help="the other installation's compactlab command")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("extra", nargs="*", help="more sweep arguments (after --)")
    args = parser.parse_args()
    print(load())
    with tempfile.TemporaryDirectory() as folder:
        tasks = {
            "other": sweep_task(args.other, Path(folder) / "other", args.extra),
            "this": sweep_task(compactlab_command(), Path(folder) / "this", args.extra),
        }
        times = interleaved(tasks, args.repeats)
    print(load())
    for name, timings in times.items():
        print(f"{name}: CPU {listed(timings, 'cpu')} s, wall {listed(timings, 'wall')} s")
    ratio = Ratio("this / other", times["this"], times["other"], target=float("inf"))
    print(ratio.line("cpu"))
    print(ratio.line("wall"))


if __name__ == "__main__":
    main()
