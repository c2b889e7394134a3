"""Scoring the compactions of a default sweep, before and after: the stage's CPU and the whole sweep's.

    python -m tests.scripts.speed_scoring --baseline OTHER_PYTHON [--repeats N]

Two measures, each taking turns between the baseline (another checkout's environment: its Python,
with its compactlab installed) and this one, after one untimed run of each (`tests.scripts.timing`):
- the scoring stage: a default `compactlab sweep --no-report` in one process with one worker, the CPU
  time spent in `compactlab.replay.replay._scored` (a timer around it, no profiler: cProfile inflates
  many small calls several times) beside the process's CPU time;
- the whole command: a default `compactlab sweep --no-report` in a fresh process (its workers
  included), CPU beside wall time.
Each sweep's sessions.csv and summary.json are compared with the baseline's, value for value: a
change of speed must not change what a run outputs. The load average is printed before and after.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

# The stage timer, run by each environment's Python (so it imports that environment's compactlab).
_STAGE = """
import json, sys, time
import compactlab.replay.replay as replay
spent = [0.0]
scored = replay._scored
def timed(*args):
    start = time.process_time()
    try:
        return scored(*args)
    finally:
        spent[0] += time.process_time() - start
replay._scored = timed
from compactlab.cli.main import main
start = time.process_time()
try:
    main(["sweep", "--no-report", "--workers", "1", "--out", sys.argv[1]])
except SystemExit:
    pass
print(json.dumps({"cpu": time.process_time() - start, "scoring": spent[0]}))
"""


def stage(python: str, out: Path) -> dict[str, float]:
    # (run from the folder above its output: no checkout on its path but the environment's own install)
    done = subprocess.run([python, "-c", _STAGE, str(out)], capture_output=True, text=True, check=True, cwd=out.parent)
    return json.loads(done.stdout.strip().splitlines()[-1])


def outputs_equal(ours: Path, theirs: Path) -> str:
    import pandas as pd

    mine, other = pd.read_csv(ours / "sessions.csv"), pd.read_csv(theirs / "sessions.csv")
    pd.testing.assert_frame_equal(mine, other)
    assert json.loads((ours / "summary.json").read_text()) == json.loads((theirs / "summary.json").read_text())
    return f"sessions.csv ({len(mine)} rows) and summary.json equal the baseline's"


def main(argv: list[str] | None = None) -> None:
    from tests.scripts.timing import Ratio, Timing, compactlab_command, interleaved, listed, load, timed_command

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", required=True, help="the Python of the environment to compare with (its compactlab)")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    pythons = {"baseline": args.baseline, "this": sys.executable}
    commands = {"baseline": str(Path(args.baseline).with_name("compactlab")), "this": compactlab_command()}
    print(load(), flush=True)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        stages: dict[str, list[dict[str, float]]] = {name: [] for name in pythons}
        runs = iter(range(1_000))  # each sweep writes a folder of its own (one holding a run would be resumed)

        def staged(name: str):
            def task() -> Timing:
                found = stage(pythons[name], root / f"stage-{name}-{next(runs)}")
                stages[name].append(found)
                return Timing(found["cpu"], found["cpu"])

            return task

        last: dict[str, Path] = {}

        def swept(name: str):
            def task() -> Timing:
                out = root / f"sweep-{name}-{next(runs)}"
                timing, done = timed_command([commands[name], "sweep", "--no-report", "--out", str(out)])
                assert done.returncode == 0, done.stderr
                last[name] = out
                return timing

            return task

        tasks = {f"stage {name}": staged(name) for name in pythons} | {f"sweep {name}": swept(name) for name in pythons}
        times = interleaved(tasks, args.repeats)
        for name in pythons:  # the warm-up's stage figures are left out
            scoring = ", ".join(f"{s['scoring']:.2f}" for s in stages[name][1:])
            cpu = ", ".join(f"{s['cpu']:.2f}" for s in stages[name][1:])
            print(f"scoring stage, {name}: {scoring} s CPU of a one-worker sweep's {cpu} s")
        for name in pythons:
            print(
                f"default sweep, {name}: CPU {listed(times[f'sweep {name}'], 'cpu')} s, wall {listed(times[f'sweep {name}'], 'wall')} s"
            )
        ratio = Ratio("default sweep, this over baseline", times["sweep this"], times["sweep baseline"], float("inf"))
        print(ratio.line("cpu"))
        print(ratio.line("wall"))
        print(outputs_equal(last["this"], last["baseline"]))
    print(load())


if __name__ == "__main__":
    main()
