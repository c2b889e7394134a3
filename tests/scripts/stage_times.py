"""Where a command's CPU time goes, stage by stage, without a profiler's inflation.

    python -m tests.scripts.stage_times [--compare OTHER_PYTHON] [--repeats N] -- COMPACTLAB_ARGUMENTS...

COMPACTLAB_ARGUMENTS: a `compactlab` command's own arguments (a default sweep without its report,
a truncate run), after `--`.

cProfile (`tests.scripts.profile_stages`) times every call, which makes code of many small calls
(pandas, the replay's walk) look several times dearer than it is. Here only the stages are timed:
each stage's function is wrapped with a CPU-time counter (time.process_time: this process; the
command runs with one worker, `--workers 1`, added unless given), counted once where it nests
into itself, and the command runs in this process. The stages nest as indented, so a stage's share
includes those under it. `--compare OTHER_PYTHON` runs the same in another environment's Python
(another checkout's) and prints both, taking turns after a warm-up of each, so their shares and
seconds come from one run on one machine (its load printed).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tests.scripts.timing import load

# One stage a line: its module, the function (Class.method for a method), and the label, indented as the stages nest.
_TABLE = """\
compactlab.runs.run_checks check_run | checks before the run (a pass over the files)
compactlab.sessions.importers load_file | reading (importers, both passes)
compactlab.runs.session_job SessionJob.replay_session | replaying every setting of every session
compactlab.replay.replay replay |   the replays (engine, strategies, scoring)
compactlab.compaction.engine Engine._compact |     compactions (engine and strategy)
compactlab.compaction.engine Engine.piece_size |       pieces the strategies count
compactlab.replay.replay _scored |     scoring the compactions
compactlab.runs.session_job SessionJob.assemble |   rows and per-session results
compactlab.runs.run_storage write_part |     row parts written (Parquet)
compactlab.runs.session_job SessionJob._row_results |     per-session results (sessions.csv rows)
compactlab.runs.report_inputs estimated |     token estimation (the report's)
compactlab.results.leaderboard summary_document | statistics (summary.json: bootstrap, Holm, figures)
compactlab.report.run_report write_run_report | the report
"""
STAGES = [(*line.split(" | ")[0].split(), line.split(" | ")[1]) for line in _TABLE.splitlines()]
REPO = Path(__file__).resolve().parents[2]  # tests/scripts/stage_times.py: the checkout
ONE = "--one"  # internal: time the stages of one command in this process and print them as JSON


def _wrapped(function: Callable, key: str, seconds: dict[str, float], depth: dict[str, int]) -> Callable:
    @functools.wraps(function)
    def timed(*args, **kwargs):
        if depth[key]:  # nested in itself: counted by the outer call
            return function(*args, **kwargs)
        depth[key] += 1
        start = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            seconds[key] += time.process_time() - start
            depth[key] -= 1

    return timed


def stage_seconds(cli_arguments: list[str]) -> dict[str, float]:
    """CPU seconds of each stage of `compactlab CLI_ARGUMENTS` in this process, and the total."""
    seconds = {label: 0.0 for _, _, label in STAGES}
    depth = dict.fromkeys(seconds, 0)
    originals: dict[int, Callable] = {}
    for module_name, name, label in STAGES:
        owner: object = importlib.import_module(module_name)
        *path, attribute = name.split(".")
        for part in path:
            owner = getattr(owner, part)
        function = getattr(owner, attribute)
        wrapper = _wrapped(function, label, seconds, depth)
        originals[id(function)] = wrapper
        setattr(owner, attribute, wrapper)
    # Modules that imported a stage's function by name call it through their own binding: rebind those too.
    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("compactlab"):
            for attribute, value in list(vars(module).items()):
                if callable(value) and id(value) in originals:
                    setattr(module, attribute, originals[id(value)])
    from compactlab.cli.main import main as cli

    start = time.process_time()
    try:
        cli(cli_arguments)
    except SystemExit:
        pass
    seconds["total"] = time.process_time() - start
    return seconds


def _one(arguments: list[str]) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        command = [*arguments, "--out", str(Path(scratch) / "run")]
        command += [] if "--workers" in arguments else ["--workers", "1"]
        seconds = stage_seconds(command)
    print(json.dumps(seconds))


def _measured(python: str, arguments: list[str]) -> dict[str, float]:
    """The stages of one command run by `python` (this script, run with that environment's compactlab)."""
    environment = {**os.environ, "PYTHONPATH": str(REPO)}  # (compactlab itself: the environment's own)
    done = subprocess.run([python, __file__, ONE, *arguments], capture_output=True, text=True, env=environment)
    if done.returncode != 0:
        raise RuntimeError(f"{python}: the command failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(arguments: list[str]) -> None:
    if arguments[:1] == [ONE]:
        _one(arguments[1:])
        return
    parser = argparse.ArgumentParser(prog="python -m tests.scripts.stage_times", description=__doc__.split("\n\n")[0])
    parser.add_argument("--compare", metavar="OTHER_PYTHON", help="another environment's Python: both measured, taking turns")
    parser.add_argument("--repeats", type=int, default=1, help="timed runs of each after the warm-up (the least of each kept)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the compactlab command's arguments")
    args = parser.parse_args(arguments)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the compactlab command's arguments after --")
    pythons = {"this": str(Path(sys.executable).absolute())} | ({"other": args.compare} if args.compare else {})
    print(f"before: {load()}", flush=True)
    best: dict[str, dict[str, float]] = {}
    for repeat in range(args.repeats + 1):  # the first of each: a warm-up, not kept
        for name, python in pythons.items():
            seconds = _measured(python, command)
            if repeat:
                kept = best.setdefault(name, seconds)
                best[name] = {k: min(kept[k], v) for k, v in seconds.items()}
    print(f"after: {load()}")
    names = list(pythons)
    print(f"compactlab {' '.join(command)} (one worker); CPU seconds, least of {args.repeats}, share of the total:")
    print("stage | " + " | ".join(f"{n}: {pythons[n]}" for n in names))
    for label in [*(label for _, _, label in STAGES), "total"]:
        cells = [f"{best[n][label]:.2f} s ({100 * best[n][label] / best[n]['total']:.1f}%)" for n in names]
        print(f"{label} | " + " | ".join(cells))


if __name__ == "__main__":
    main(sys.argv[1:])
