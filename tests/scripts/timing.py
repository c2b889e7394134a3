"""What every speed script measures with, so that none of them can mislead.

A shared machine moves absolute times by a half and more, and one disturbed repeat can pass a
ratio that is not met. So the scripts:
- time what they compare taking turns (`interleaved`): repeat i of each is run back to back, so
  both meet the same disturbances, and a ratio is taken per repeat as well as of the best;
- run each once before timing (a warm-up): imports, encodings and caches are loaded outside the
  timing, so the first repeat is no slower for having been first;
- give CPU time beside wall time (of this process and of the processes it waited for: a fresh
  process timed, its workers), since CPU time moves less with the machine's load;
- print the machine's load (`os.getloadavg`) before and after;
- call a result UNSTABLE rather than PASS or FAIL when its repeats' ratios spread more than
  `SPREAD` (the largest over the smallest, minus one): such a ratio says nothing about the target.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

SPREAD = 0.25  # repeats whose ratios differ by more than this share disagree: the result is UNSTABLE


@dataclass(frozen=True)
class Timing:
    wall: float  # seconds
    cpu: float  # CPU seconds of this process and of the child processes it waited for
    peak_mb: float | None = None  # the sampled peak of a process tree (`timed_command`), when measured


def cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def timed(function: Callable[[], object]) -> Timing:
    """One call of `function`: its wall and CPU time (its child processes' too, once waited for)."""
    cpu, start = cpu_seconds(), time.perf_counter()
    function()
    return Timing(time.perf_counter() - start, cpu_seconds() - cpu)


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def interleaved(tasks: dict[str, Callable[[], Timing]], repeats: int, warm_up: bool = True) -> dict[str, list[Timing]]:
    """Each task `repeats` times, taking turns (repeat i of every task, then repeat i + 1), after
    one untimed run of each when `warm_up`. A task returns its own `Timing` (a fresh process times
    itself; `timed` times a call here)."""
    if warm_up:
        for task in tasks.values():
            task()
    times: dict[str, list[Timing]] = {name: [] for name in tasks}
    for _ in range(repeats):
        for name, task in tasks.items():
            times[name].append(task())
    return times


@dataclass(frozen=True)
class Ratio:
    """`measured` against `baseline`, repeat by repeat (both from `interleaved`)."""

    name: str
    measured: Sequence[Timing]
    baseline: Sequence[Timing]
    target: float  # the ratio must be at most this
    bound: float = SPREAD
    # A ratio below this cannot be true (the measured work includes the baseline's): a disturbed
    # baseline, UNSTABLE like a spread beyond the bound.
    floor: float = 0.0

    def per_repeat(self, kind: str) -> list[float]:
        return [getattr(m, kind) / getattr(b, kind) for m, b in zip(self.measured, self.baseline)]

    def best(self, kind: str) -> float:
        """Of the least disturbed repeat of each: the best of `measured` over the best of `baseline`."""
        return min(getattr(m, kind) for m in self.measured) / min(getattr(b, kind) for b in self.baseline)

    def spread(self, kind: str) -> float:
        return spread(self.per_repeat(kind))

    def verdict(self, kind: str) -> str:
        return verdict(self.per_repeat(kind), self.best(kind), self.target, self.bound, self.floor)

    def line(self, kind: str, target: float | None = None) -> str:
        """One line: the ratio of the bests, the median of the per-repeat ratios, every repeat, the verdict."""
        checked = replace(self, target=target if target is not None else self.target)
        values = checked.per_repeat(kind)
        # Without a target (an infinite one) the line gives the figures alone, no verdict.
        judged = f": target <= {checked.target:g}: {checked.verdict(kind)}" if checked.target != float("inf") else ""
        return (
            f"{self.name} ({'wall' if kind == 'wall' else 'CPU'}): {checked.best(kind):.2f} (best of each), median "
            f"{statistics.median(values):.2f}, repeats {', '.join(f'{v:.2f}' for v in values)}, spread "
            f"{100 * checked.spread(kind):.0f}% (bound {100 * self.bound:.0f}%){judged}"
        )


def spread(values: Sequence[float]) -> float:
    """How far repeats disagree: the largest over the smallest, minus one (0 for one repeat)."""
    return max(values) / min(values) - 1 if min(values) > 0 else float("inf")


def verdict(values: Sequence[float], best: float, target: float, bound: float = SPREAD, floor: float = 0.0) -> str:
    """PASS or FAIL of `best` against `target` (at most), or UNSTABLE: the repeats' `values` spread
    beyond `bound`, or one lies below `floor`, where no true ratio can lie."""
    if len(values) > 1 and spread(values) > bound:
        return "UNSTABLE"
    if min(values) < floor:
        return f"UNSTABLE (below {floor:g}, which cannot be)"
    return "PASS" if best <= target else "FAIL"


def listed(timings: Sequence[Timing], kind: str) -> str:
    return ", ".join(f"{getattr(t, kind):.2f}" for t in timings)


def compactlab_command() -> str:
    """The `compactlab` command installed beside this Python (the one a user of this environment runs)."""
    path = Path(sys.executable).with_name("compactlab")
    if not path.exists():
        raise RuntimeError(f"no compactlab command beside {sys.executable}: install compactlab (pip install -e .)")
    return str(path)


def _tree_memory_kb(root: int) -> int:
    """The proportional set size of `root` and every process under it (PSS: pages a forked worker
    shares with its parent are counted once, split between them), or RSS where PSS is not readable."""
    total, pending = 0, [root]
    while pending:
        pid = pending.pop()
        try:
            rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
            field = next((line for line in rollup.splitlines() if line.startswith("Pss:")), None)
            if field is None:
                field = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("VmRSS:"))
            total += int(field.split()[1])
            for task in Path(f"/proc/{pid}/task").iterdir():
                pending += [int(child) for child in (task / "children").read_text().split()]
        except (OSError, StopIteration, ValueError):
            continue  # the process ended while it was read
    return total


def children_cpu_seconds() -> float:
    times = os.times()
    return times.children_user + times.children_system


def timed_command(command: Sequence[str], every: float = 0.05, **options) -> tuple[Timing, subprocess.CompletedProcess]:
    """`command` in a fresh process: its wall time, the CPU time of it and its workers (of the children
    waited for: not this process's, whose sampling thread reads /proc meanwhile), and the peak of its
    whole process tree's memory, sampled every `every` seconds."""
    cpu, start = children_cpu_seconds(), time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **options)
    peak = [0]
    finished = threading.Event()

    def sample() -> None:
        while not finished.is_set():
            peak[0] = max(peak[0], _tree_memory_kb(process.pid))
            finished.wait(every)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stdout, stderr = process.communicate()
    wall = time.perf_counter() - start
    finished.set()
    sampler.join()
    done = subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
    return Timing(wall, children_cpu_seconds() - cpu, peak[0] / 1024), done
