"""Speed of a deterministic sweep against one tokenization pass, measured in one run.

    python -m tests.scripts.speed_sweep [DATASET|PATH ...] [--repeats 5] [--default-grid N] [--profile]

A sweep replays every session once per setting. Token counts must not be what it pays for:
each message is counted once per process and estimator, and every setting reuses that count;
settings also share the uncompacted replay up to their first compaction (compactlab.replay.uncompacted) and
each compaction of a context they reach alike (compactlab.replay.shared_compactions), and the calls between
compactions that need no engine are rowed in bulk (compactlab.replay.walk).
This script times a sweep of 4 strategies × 9 trigger thresholds (tiktoken-o200k estimator, the
extractive summarizer, next-step preservation scored at every compaction) over the bundled
datasets against one tiktoken pass over the same distinct text, and prints the ratios (targets:
≤ 3 in wall time, best of each, and ≤ 6 in CPU time). With `--default-grid N` it also times N
default `compactlab sweep` commands (72 settings, no report: the report is a run's next step), whose
CPU time must stay ≤ 12 tokenization passes.

`--profile` runs the default `compactlab sweep --no-report` in this process (one worker) under
cProfile with a CPU-time timer instead, and prints where the time goes, stage by stage
(`tests.scripts.profile_stages`), then by function.

How it avoids misleading (`tests.scripts.timing`): the sweeps and the tokenization passes take
turns after one untimed run of each; every sweep runs in a fresh process, as `compactlab sweep`
would, timed from `compactlab.runs.runs.run` on (reading, replaying, metrics, the run directory) in
wall and CPU time (its worker processes' included); the load is printed before and after; and a
ratio whose repeats spread more than the bound is UNSTABLE, not a pass.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from compactlab.runs import runs
from compactlab.runs.run_config import RunConfig
from compactlab.runs.sweep import grid
from compactlab.sessions.loading import load_inputs
from compactlab.tokens.tokenizers import get_encoding
from tests.scripts.profile_stages import profiled
from tests.scripts.speed_estimation import distinct_texts
from tests.scripts.timing import (
    Ratio,
    Timing,
    compactlab_command,
    cpu_seconds,
    interleaved,
    listed,
    load,
    timed,
    timed_command,
)

STRATEGIES = ("summarize", "observation-masking", "truncate", "prune")
THRESHOLDS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)
ESTIMATOR = "tiktoken-o200k"
REPEATS = 5
TARGET_WALL, TARGET_CPU, TARGET_DEFAULT_CPU = 3.0, 6.0, 12.0
ONE_SWEEP = "--one-sweep"  # internal: time one sweep in this process and print it as JSON


def sweep_config(datasets: list[str]) -> RunConfig:
    settings = [
        c.__class__(c.label, c.strategy, c.settings, c.trigger, ESTIMATOR) for c in grid(STRATEGIES, THRESHOLDS, (16_000,))
    ]
    # No token estimation, as `compactlab sweep` runs a grid (compactlab.runs.sweep_run): it is not a sweep's work.
    return RunConfig(datasets=tuple(datasets), strategies=tuple(settings), estimator=ESTIMATOR, estimation=False)


def one_sweep(datasets: list[str]) -> dict:
    config = sweep_config(datasets)
    get_encoding("o200k_base")  # loaded outside the timing, as for the tokenization pass
    with tempfile.TemporaryDirectory() as out:
        cpu, start = cpu_seconds(), time.perf_counter()
        result = runs.run(config, Path(out))
        seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu  # the workers are waited for when the run ends
        calls = len(result.calls)  # read from the run directory, while it exists
    return {
        "seconds": seconds,
        "cpu": cpu,
        "settings": len(config.strategies),
        "replays": len(result.sessions),
        "calls": calls,
    }


def _sweep_in_fresh_process(datasets: list[str], last: dict) -> Timing:
    done = subprocess.run(
        [sys.executable, "-m", "tests.scripts.speed_sweep", ONE_SWEEP, *datasets], capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RuntimeError(f"the timed sweep failed:\n{done.stderr}")
    last.update(json.loads(done.stdout.splitlines()[-1]))
    return Timing(last["seconds"], last["cpu"])


def _default_sweep(datasets: list[str]) -> Timing:
    """The default `compactlab sweep` as a user runs it: the whole command, process start included."""
    with tempfile.TemporaryDirectory() as out:
        command = [compactlab_command(), "sweep", "--out", str(Path(out) / "sweep"), "--no-report"]
        timing, done = timed_command([*command, *(["--dataset", *datasets] if datasets else [])])
    if done.returncode != 0:
        raise RuntimeError(f"compactlab sweep failed:\n{done.stderr}")
    return timing


def _profile(datasets: list[str]) -> None:
    with tempfile.TemporaryDirectory() as out:
        command = ["sweep", "--no-report", "--workers", "1", "--out", str(Path(out) / "sweep")]
        profiled([*command, *(["--dataset", *datasets] if datasets else [])])


def main(arguments: list[str]) -> None:
    if arguments[:1] == [ONE_SWEEP]:
        print(json.dumps(one_sweep(arguments[1:])))
        return
    parser = argparse.ArgumentParser(prog="python -m tests.scripts.speed_sweep", description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="*", help="dataset names or paths (default: every bundled dataset)")
    parser.add_argument("--repeats", type=int, default=REPEATS, help=f"timed repeats of each, taking turns (default {REPEATS})")
    parser.add_argument(
        "--default-grid", type=int, default=0, metavar="N", help="also time N default `compactlab sweep` commands"
    )
    parser.add_argument("--profile", action="store_true", help="profile the default sweep (CPU time) instead of timing")
    args = parser.parse_args(arguments)
    if args.profile:
        _profile(args.inputs)
        return
    print(f"before: {load()}", flush=True)
    encoding = get_encoding("o200k_base")
    texts = distinct_texts(t for t in load_inputs(args.inputs or None).sessions if t.calls)
    last: dict = {}
    tasks = {
        "tokenization": lambda: timed(lambda: [encoding.encode(text, disallowed_special=()) for text in texts]),
        "sweep": lambda: _sweep_in_fresh_process(args.inputs, last),
    }
    times = interleaved(tasks, args.repeats)
    tokenizations = times["tokenization"]
    if args.default_grid:
        # Its own turns with the tokenization passes, after the grid above warmed both up.
        extra = interleaved(
            {"tokenization": tasks["tokenization"], "default": lambda: _default_sweep(args.inputs)}, args.default_grid, False
        )
    print(f"after: {load()}")
    print(
        f"{last['settings']} settings ({len(STRATEGIES)} strategies × {len(THRESHOLDS)} thresholds), {last['replays']} replays, "
        f"{last['calls']} replayed calls; {args.repeats} repeats each, taking turns, after one untimed run of each"
    )
    print(
        f"one tiktoken pass over the distinct text: wall {listed(tokenizations, 'wall')} s; CPU {listed(tokenizations, 'cpu')} s"
    )
    sweeps = times["sweep"]
    print(
        f"the sweep (reading, replaying, metrics), each in a fresh process: wall {listed(sweeps, 'wall')} s; CPU {listed(sweeps, 'cpu')} s"
    )
    ratio = Ratio("sweep / tokenization", sweeps, tokenizations, TARGET_WALL)
    print(ratio.line("wall"))
    print(ratio.line("cpu", TARGET_CPU))
    if args.default_grid:
        defaults = extra["default"]
        print(
            f"default `compactlab sweep --no-report` (the whole command): wall {listed(defaults, 'wall')} s; CPU {listed(defaults, 'cpu')} s"
        )
        print(Ratio("default sweep / tokenization", defaults, extra["tokenization"], TARGET_DEFAULT_CPU).line("cpu"))


if __name__ == "__main__":
    main(sys.argv[1:])
