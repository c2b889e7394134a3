"""The speed scripts cannot pass a ratio their repeats do not support (tests.scripts.timing)."""

from __future__ import annotations

import sys

from tests.scripts.timing import Ratio, Timing, interleaved, load, timed, timed_command, verdict


def test_repeats_that_disagree_are_unstable_not_a_pass() -> None:
    steady = [Timing(2.0, 2.0), Timing(2.1, 2.0)]
    baseline = [Timing(1.0, 1.0), Timing(1.0, 1.0)]
    assert Ratio("r", steady, baseline, 2.5).verdict("wall") == "PASS"
    assert Ratio("r", steady, baseline, 1.5).verdict("wall") == "FAIL"
    # One repeat disturbed: the best of each (2.0 / 1.0) would pass, but the repeats say 2.0 and 4.0.
    disturbed = [Timing(2.0, 2.0), Timing(4.0, 2.0)]
    assert Ratio("r", disturbed, baseline, 2.5).verdict("wall") == "UNSTABLE"
    assert Ratio("r", disturbed, baseline, 2.5).verdict("cpu") == "PASS"  # CPU time moved less
    assert "UNSTABLE" in Ratio("r", disturbed, baseline, 2.5).line("wall")
    assert "target" not in Ratio("r", steady, baseline, float("inf")).line("wall")  # figures alone, never a pass
    # A ratio that cannot be (the measured work contains the baseline's) is never a pass.
    assert verdict([0.9, 0.92], 0.9, 1.25, floor=1.0).startswith("UNSTABLE")


def test_interleaved_runs_a_warm_up_and_takes_turns() -> None:
    order: list[str] = []

    def task(name: str):
        return lambda: (order.append(name), Timing(1.0, 1.0))[1]

    times = interleaved({"a": task("a"), "b": task("b")}, repeats=2)
    assert order == ["a", "b", "a", "b", "a", "b"]  # the first pair is the untimed warm-up
    assert [len(v) for v in times.values()] == [2, 2]
    assert "load average" in load()


def test_cpu_time_and_the_peak_of_a_process_tree_are_measured() -> None:
    # A child that spins for a while and holds some 80 MB: its CPU time is counted, and its memory sampled.
    spin = "import time; b = bytearray(80 * 2**20); b[::4096] = b'x' * len(b[::4096]); t = time.process_time()\nwhile time.process_time() - t < 0.4: pass"
    timing, done = timed_command([sys.executable, "-c", spin])
    assert done.returncode == 0
    assert timing.cpu >= 0.4 and timing.wall >= timing.cpu * 0.5
    assert timing.peak_mb is not None and timing.peak_mb > 70
    here = timed(lambda: sum(range(3_000_000)))
    assert here.cpu > 0 and here.wall > 0
