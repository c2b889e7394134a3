"""Speed of a deterministic sweep against one tokenization pass, measured in one run.

    python -m compactlab.measure.speed_sweep [DATASET|PATH ...]

A sweep replays every transcript once per setting. Token counts must not be what it pays for:
each message is counted once per process and estimator, and every setting reuses that count;
settings also share the uncompacted replay up to their first compaction (compactlab.replay.uncompacted) and
each compaction of a context they reach alike (compactlab.replay.fast.shared_compactions), and the calls between
compactions that need no engine are rowed in bulk (compactlab.replay.walk).
This script times a sweep of 4 strategies × 9 trigger thresholds (tiktoken-o200k estimator, the
extractive summarizer, next-step preservation scored at every compaction) over the bundled
datasets against one tiktoken pass over the same distinct text, and prints the ratio (target ≤ 3).

Other programs on the machine slow either timing down by up to a half. So both are taken five
times, taking turns, and the least disturbed of each is compared (the ratio of the medians is
printed too). Each sweep runs in a fresh process, as `compactlab sweep` would, and is timed from
`compactlab.runs.runs.run` on: reading, replaying, metrics and the run directory. Each tokenization time is
the best of three passes in a row, so the encoder's tables are warm: the fastest one pass can be.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from compactlab.measure.speed_estimation import distinct_texts, timed
from compactlab.runs import runs
from compactlab.runs.run_config import RunConfig
from compactlab.runs.sweep import grid
from compactlab.tokens.tokenizers import get_encoding
from compactlab.transcripts.loading import load_inputs

STRATEGIES = ("summarize", "observation-masking", "truncate", "prune")
THRESHOLDS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)
ESTIMATOR = "tiktoken-o200k"
REPEATS = 5
ONE_SWEEP = "--one-sweep"  # internal: time one sweep in this process and print it as JSON


def sweep_config(datasets: list[str]) -> RunConfig:
    configs = [
        c.__class__(c.label, c.strategy, c.settings, c.trigger, ESTIMATOR) for c in grid(STRATEGIES, THRESHOLDS, (16_000,))
    ]
    return RunConfig(datasets=tuple(datasets), strategies=tuple(configs), estimator=ESTIMATOR)


def one_sweep(datasets: list[str]) -> dict:
    config = sweep_config(datasets)
    get_encoding("o200k_base")  # loaded outside the timing, as for the tokenization pass
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        result = runs.run(config, Path(out))
        seconds = time.perf_counter() - start
        calls = len(result.calls)  # read from the run directory, while it exists
    return {"seconds": seconds, "settings": len(config.strategies), "replays": len(result.transcripts), "calls": calls}


def _sweep_in_fresh_process(datasets: list[str]) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "compactlab.measure.speed_sweep", ONE_SWEEP, *datasets], capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RuntimeError(f"the timed sweep failed:\n{done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])


def main(arguments: list[str]) -> None:
    if arguments[:1] == [ONE_SWEEP]:
        print(json.dumps(one_sweep(arguments[1:])))
        return
    encoding = get_encoding("o200k_base")
    texts = distinct_texts(t for t in load_inputs(arguments or None).transcripts if t.calls)
    tokenizations, sweeps = [], []
    for _ in range(REPEATS):  # taking turns, so that both meet the same disturbances
        tokenizations.append(timed(lambda: [encoding.encode(text, disallowed_special=()) for text in texts]))
        sweeps.append(_sweep_in_fresh_process(arguments))
    seconds = [s["seconds"] for s in sweeps]
    last = sweeps[-1]
    print(
        f"{last['settings']} settings ({len(STRATEGIES)} strategies × {len(THRESHOLDS)} thresholds), {last['replays']} replays, {last['calls']} replayed calls"
    )
    print(
        f"one tiktoken pass over the distinct text (each the best of 3 in a row): best {min(tokenizations):.2f} s of {_listed(tokenizations)}"
    )
    print(
        f"the whole sweep (reading, replaying, metrics), each in a fresh process: best {min(seconds):.2f} s of {_listed(seconds)}"
    )
    print(f"ratio of the medians: {statistics.median(seconds) / statistics.median(tokenizations):.2f}")
    print(f"ratio sweep / tokenization (best of each): {min(seconds) / min(tokenizations):.2f}  (target <= 3)")


def _listed(values: list[float]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


if __name__ == "__main__":
    if sys.argv[1:2] == [ONE_SWEEP]:
        main(sys.argv[1:])
    else:
        parser = argparse.ArgumentParser(prog="python -m compactlab.measure.speed_sweep", description=__doc__.split("\n\n")[0])
        parser.add_argument("inputs", nargs="*", help="dataset names or paths (default: every bundled dataset)")
        main(parser.parse_args().inputs)
