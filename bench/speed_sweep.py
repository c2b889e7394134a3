"""Speed of a deterministic sweep against one tokenization pass, measured in one run.

    python -m bench.speed_sweep [DATASET|PATH ...]

A sweep replays every transcript once per setting. Token counts must not be what it pays for:
each message is counted once per transcript and estimator, and every setting reuses that count;
settings also share the uncompacted replay up to their first compaction (bench.uncompacted), and
the calls between compactions that need no engine are rowed in bulk (bench.walk).
This script times a sweep of 4 strategies × 9 trigger thresholds (tiktoken-o200k estimator, the
extractive summarizer, next-step preservation scored at every compaction) over the bundled
datasets, then one tiktoken pass over the same distinct text, and prints the ratio (target ≤ 3).
"""

from __future__ import annotations

import gc
import sys
import tempfile
import time
from pathlib import Path

from bench import runs
from bench.loading import load_inputs
from bench.run_config import RunConfig
from bench.speed_estimation import distinct_texts, timed
from bench.sweep import grid
from bench.tokenizers import get_encoding

STRATEGIES = ("summarize", "observation-masking", "truncate", "prune")
THRESHOLDS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)
ESTIMATOR = "tiktoken-o200k"


def main(arguments: list[str]) -> None:
    configs = [c.__class__(c.label, c.strategy, c.settings, c.trigger, ESTIMATOR) for c in grid(STRATEGIES, THRESHOLDS, (16_000,))]
    config = RunConfig(datasets=tuple(arguments), strategies=tuple(configs), estimator=ESTIMATOR)
    encoding = get_encoding("o200k_base")
    texts = distinct_texts(t for t in load_inputs(list(config.datasets) or None).transcripts if t.calls)
    tokenize_seconds = timed(lambda: [encoding.encode(text, disallowed_special=()) for text in texts])
    # The sweep starts as `compactlab sweep` does, without the texts of every session in memory.
    del texts
    gc.collect()
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        result = runs.run(config, Path(out))
        sweep_seconds = time.perf_counter() - start
    replays = len(result.transcripts)
    print(f"{len(configs)} settings ({len(STRATEGIES)} strategies × {len(THRESHOLDS)} thresholds), {replays} replays, {len(result.calls)} replayed calls")
    print(f"one tiktoken pass over the distinct text (best of 3): {tokenize_seconds:.2f} s")
    print(f"the whole sweep (reading, replaying, metrics): {sweep_seconds:.2f} s")
    print(f"ratio sweep / tokenization: {sweep_seconds / tokenize_seconds:.1f}  (target <= 3)")


if __name__ == "__main__":
    main(sys.argv[1:])
