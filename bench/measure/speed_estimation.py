"""Speed of the estimation replay against raw tiktoken, measured in one run.

    python -m compactlab.measure.speed_estimation [DATASET|PATH ...]

Replaying a session estimates every call's prompt, and each prompt repeats all earlier messages.
Counting each distinct message once per encoding makes the replay cost one encoding pass over the
distinct text. This script checks that: it times the replay with the tiktoken-based estimators
over the bundled datasets, then times tiktoken encoding the same distinct texts once per
encoding, each best of three runs, and prints the throughput ratio (replay / raw tiktoken; target ≥ 0.8). It also prints
the ratio for all default estimators, whose character and word heuristics add their own passes.
"""

from __future__ import annotations

import argparse
import time

from compactlab.tokens.estimation import DEFAULT_ESTIMATORS, run_estimation
from compactlab.tokens.framing import framing_for
from compactlab.tokens.tokenizers import TokenCache, get_encoding
from compactlab.transcripts.loading import load_inputs

TIKTOKEN_ESTIMATORS = ("tiktoken-cl100k", "tiktoken-o200k", "hybrid", "calibrated")
ENCODINGS = ("cl100k_base", "o200k_base")


def distinct_texts(transcripts) -> list[str]:
    seen: dict[str, None] = {}
    for transcript in transcripts:
        framing = framing_for(transcript.source_format)
        for message in transcript.messages:
            for text in framing.texts(message):
                seen.setdefault(text, None)
        for marker in transcript.compactions:
            seen.setdefault(marker.summary, None)
    return list(seen)


def timed(function, repeats: int = 3) -> float:
    """Best of `repeats` runs: the least disturbed by whatever else the machine is doing."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def main(arguments: list[str]) -> None:
    transcripts = [t for t in load_inputs(arguments or None).transcripts if not t.skipped]
    for encoding in ENCODINGS:
        get_encoding(encoding)  # load outside the timings
    texts = distinct_texts(transcripts)
    megabytes = sum(len(t.encode("utf-8")) for t in texts) / 1e6

    def raw() -> None:
        for encoding in ENCODINGS:
            encode = get_encoding(encoding).encode
            for text in texts:
                encode(text, disallowed_special=())

    raw_seconds = timed(raw)
    replay_seconds = timed(lambda: run_estimation(transcripts, TIKTOKEN_ESTIMATORS, cache=TokenCache()))
    all_seconds = timed(lambda: run_estimation(transcripts, DEFAULT_ESTIMATORS, cache=TokenCache()))
    calls = sum(len(t.calls) for t in transcripts)
    print(f"{len(transcripts)} transcripts, {calls} calls, {len(texts)} distinct texts, {megabytes:.1f} MB")
    print(f"raw tiktoken, each distinct text once per encoding: {raw_seconds:.2f} s ({megabytes * 2 / raw_seconds:.1f} MB/s)")
    print(f"replay, tiktoken estimators {', '.join(TIKTOKEN_ESTIMATORS)}: {replay_seconds:.2f} s")
    print(f"replay, all default estimators: {all_seconds:.2f} s")
    print(f"throughput ratio replay/raw (tiktoken estimators): {raw_seconds / replay_seconds:.2f}  (target >= 0.8)")
    print(f"throughput ratio replay/raw (all estimators):      {raw_seconds / all_seconds:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m compactlab.measure.speed_estimation", description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="*", help="dataset names or paths (default: every bundled dataset)")
    main(parser.parse_args().inputs)
