"""Speed of the estimation replay against raw tiktoken, measured in one run.

    python -m tests.scripts.speed_estimation [DATASET|PATH ...]

Replaying a session estimates every call's prompt, and each prompt repeats all earlier messages.
Counting each distinct message once per encoding makes the replay cost one encoding pass over the
distinct text. This script checks that: it times the replay with the tiktoken-based estimators
over the bundled datasets, then times tiktoken encoding the same distinct texts once per
encoding, taking turns with the replays after one untimed run of each (`tests.scripts.timing`), and prints the
throughput ratio (raw tiktoken time / replay time; target ≥ 0.8) with CPU time beside wall time and the load. A
ratio above 1 cannot be (the replay encodes the same text): it is UNSTABLE, as are repeats that disagree. It also
prints the ratio for all default estimators, whose character and word heuristics add their own passes.
"""

from __future__ import annotations

import argparse
import sys

from compactlab.sessions.loading import load_inputs
from compactlab.tokens.estimation import DEFAULT_ESTIMATORS, run_estimation
from compactlab.tokens.framing import framing_for
from compactlab.tokens.tokenizers import TokenCache, get_encoding
from tests.scripts.timing import Ratio, interleaved, listed, load, timed

TIKTOKEN_ESTIMATORS = ("tiktoken-cl100k", "tiktoken-o200k", "hybrid", "calibrated")
ENCODINGS = ("cl100k_base", "o200k_base")
REPEATS = 3
TARGET = 0.8  # throughput of the replay against raw tiktoken: at least this


def distinct_texts(sessions) -> list[str]:
    seen: dict[str, None] = {}
    for session in sessions:
        framing = framing_for(session.source_format)
        for message in session.messages:
            for text in framing.texts(message):
                seen.setdefault(text, None)
        for marker in session.compactions:
            seen.setdefault(marker.summary, None)
    return list(seen)


def main(arguments: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.scripts.speed_estimation", description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="*", help="dataset names or paths (default: every bundled dataset)")
    parser.add_argument("--repeats", type=int, default=REPEATS, help=f"timed repeats of each, taking turns (default {REPEATS})")
    args = parser.parse_args(arguments)
    print(f"before: {load()}", flush=True)
    sessions = [t for t in load_inputs(args.inputs or None).sessions if not t.skipped]
    for encoding in ENCODINGS:
        get_encoding(encoding)  # load outside the timings
    texts = distinct_texts(sessions)
    megabytes = sum(len(t.encode("utf-8")) for t in texts) / 1e6

    def raw() -> None:
        for encoding in ENCODINGS:
            encode = get_encoding(encoding).encode
            for text in texts:
                encode(text, disallowed_special=())

    times = interleaved(
        {
            "raw": lambda: timed(raw),
            "tiktoken": lambda: timed(lambda: run_estimation(sessions, TIKTOKEN_ESTIMATORS, cache=TokenCache())),
            "all": lambda: timed(lambda: run_estimation(sessions, DEFAULT_ESTIMATORS, cache=TokenCache())),
        },
        args.repeats,
    )
    print(f"after: {load()}")
    calls = sum(len(t.calls) for t in sessions)
    print(
        f"{len(sessions)} sessions, {calls} calls, {len(texts)} distinct texts, {megabytes:.1f} MB; {args.repeats} repeats each, taking turns, after one untimed run of each"
    )
    best_raw = min(t.wall for t in times["raw"])
    print(
        f"raw tiktoken, each distinct text once per encoding: wall {listed(times['raw'], 'wall')} s ({megabytes * 2 / best_raw:.1f} MB/s at best)"
    )
    print(f"replay, tiktoken estimators {', '.join(TIKTOKEN_ESTIMATORS)}: wall {listed(times['tiktoken'], 'wall')} s")
    print(f"replay, all default estimators: wall {listed(times['all'], 'wall')} s")
    # The replay encodes every distinct text at least once: it cannot take less time than the raw pass
    # (a ratio under 1 is a disturbed raw timing), and the throughput target >= 0.8 is a time ratio <= 1.25.
    tiktoken = Ratio("replay / raw time (tiktoken estimators)", times["tiktoken"], times["raw"], 1 / TARGET, floor=1.0)
    print(f"throughput ratio replay/raw (tiktoken estimators): {1 / tiktoken.best('wall'):.2f} (target >= {TARGET})")
    print(tiktoken.line("wall"))
    print(tiktoken.line("cpu"))
    every = Ratio("replay / raw time (all estimators)", times["all"], times["raw"], float("inf"), floor=1.0)
    print(f"throughput ratio replay/raw (all estimators): {1 / every.best('wall'):.2f}; {every.line('wall')}")


if __name__ == "__main__":
    main(sys.argv[1:])
