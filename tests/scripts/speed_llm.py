"""Speed of a run's LLM calls against their ideal, measured in one run per workload.

    python -m tests.scripts.speed_llm [summaries|judge|probes ...]

Each workload is a `compactlab run` (compactlab.runs.runs.run) of real bundled sessions whose LLM calls go to
the local wire-format server of tests/fake_providers.py, through the real `openai` SDK, with
`max_in_flight = 16` and a fresh call cache (every call is sent):

- summaries: `summarize` with the LLM summarizer at two trigger thresholds (96 calls);
- judge: the extractive `summarize` at two thresholds, each compaction judged by the next-action
  judge (two calls: the full history and the compacted context; 109 calls);
- probes: the same judge at one threshold also asking three probes (an answer, then its grading,
  on both contexts; 98 calls).

Each is run twice: once with the server answering at once (the replay's own time, HTTP included),
once with it answering after `LATENCY` seconds. With N calls sent, the ideal extra time is
ceil(N / 16) × LATENCY (16 calls in flight at every moment); the script prints
(latency run − instant run) / ideal, which the issue asks to be at most 1.25.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path

from compactlab.contract import Trigger
from compactlab.replay.strategy_config import StrategyConfig
from compactlab.runs import runs
from compactlab.runs.llm_config import make_run_summarizer
from compactlab.runs.run_config import RunConfig
from tests.fake_providers import Behaviour, FakeProvider, serve

LATENCY = 1.0
MAX_IN_FLIGHT = 16
KEY_ENV = "COMPACTLAB_SPEED_LLM_KEY"
DATASET = "mini-swe-agent-pr816"
TARGET = 1.25


def _llm(server: FakeProvider, cache: Path) -> dict:
    return {
        "provider": "openai",
        "model": "gpt-4o-mini",
        "base_url": server.openai_base_url,
        "api_key_env": KEY_ENV,
        "cache_dir": str(cache),
        "max_in_flight": MAX_IN_FLIGHT,
        "max_retries": 0,
        "timeout": 30.0,
    }


def _settings(summarizer: str, thresholds: tuple[float, ...]) -> tuple[StrategyConfig, ...]:
    return tuple(
        StrategyConfig(
            label=f"summarize@{f}", strategy="summarize", settings=(("summarizer", summarizer),), trigger=Trigger(fraction=f)
        )
        for f in thresholds
    )


WORKLOADS = {
    "summaries": lambda llm: RunConfig(datasets=(DATASET,), strategies=_settings("llm", (0.55, 0.8)), summarizer=llm),
    "judge": lambda llm: RunConfig(datasets=(DATASET,), strategies=_settings("extractive", (0.6, 0.8)), judge=llm),
    "probes": lambda llm: RunConfig(
        datasets=(DATASET,),
        strategies=_settings("extractive", (0.9,)),
        judge={**llm, "probes": ["recall", "continuation", "decision"]},
    ),
}


def timed_run(workload: str, latency: float) -> tuple[float, int]:
    """Seconds of one run of `workload` with the server answering after `latency`, and the calls it sent."""
    with serve() as server, tempfile.TemporaryDirectory() as scratch:
        server.otherwise = Behaviour("summarize", delay=latency)
        config = WORKLOADS[workload](_llm(server, Path(scratch) / "cache"))
        summarizer = make_run_summarizer(config)
        start = time.perf_counter()
        try:
            runs.run(config, Path(scratch) / "run", summarizer=summarizer)
        finally:
            if summarizer is not None:
                summarizer.close()
        seconds = time.perf_counter() - start
        return seconds, server.count()


def measure(workload: str) -> float:
    instant, calls = timed_run(workload, 0.0)
    slow, slow_calls = timed_run(workload, LATENCY)
    if slow_calls != calls:
        raise RuntimeError(f"{workload}: {calls} calls with an instant server, {slow_calls} with latency: the runs differ")
    ideal = math.ceil(calls / MAX_IN_FLIGHT) * LATENCY
    ratio = (slow - instant) / ideal
    print(
        f"{workload}: {calls} calls, {LATENCY:g} s latency, max_in_flight {MAX_IN_FLIGHT}: run {slow:.2f} s, "
        f"instant server {instant:.2f} s, extra {slow - instant:.2f} s against the ideal {ideal:.0f} s: "
        f"ratio {ratio:.2f} (target <= {TARGET})",
        flush=True,
    )
    return ratio


def main(arguments: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.scripts.speed_llm", description=__doc__.split("\n\n")[0])
    parser.add_argument("workloads", nargs="*", metavar="WORKLOAD", help=f"of {', '.join(WORKLOADS)} (default: all)")
    arguments = parser.parse_args(arguments).workloads
    os.environ.setdefault(KEY_ENV, "sk-speed-llm")
    unknown = sorted(set(arguments) - set(WORKLOADS))
    if unknown:
        print(f"unknown workloads {unknown}; known: {', '.join(WORKLOADS)}", file=sys.stderr)
        return 2
    ratios = [measure(workload) for workload in arguments or WORKLOADS]
    return 0 if max(ratios) <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
