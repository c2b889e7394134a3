"""What `compactlab run --strategy truncate` costs beyond the truncation itself, measured in one run.

    python -m tests.scripts.speed_truncate [DATASET|PATH ...] [--repeats 3] [--profile]

The baseline is a plain truncation replay written here (`plain_truncation`, some 40 lines): it
reads the same sessions, counts every message with tiktoken (each distinct text once), truncates
to the newest messages within half the window whenever the context passes 0.8 of it, and writes
one row per recorded call. `compactlab run --strategy truncate` does that and more (the measured
prompt sizes, the engine's rules, next-step preservation, the run directory, the statistics and
the report); this script gives what the more costs: the CPU time of the whole command (process
start, imports, its workers) over the plain replay's, in a fresh process each, taking turns after
one untimed run of each, with wall time, the sampled peak memory of each process tree and the
machine's load beside it (`tests.scripts.timing`). Target: ≤ 2.5 in CPU time.

`--profile` runs the command in this process (one worker) under cProfile with a CPU-time timer
and prints where the time goes, stage by stage (`tests.scripts.profile_stages`), then by function.
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
from pathlib import Path

from tests.scripts.profile_stages import profiled
from tests.scripts.timing import Ratio, compactlab_command, interleaved, listed, load, timed_command

WINDOW = 64_000  # the run's default window
TRIGGER, KEEP = 0.8, 0.5  # truncate when the context passes 0.8 of the window, to the newest messages within half of it
TARGET = 2.5
PLAIN = "--plain"  # internal: the plain truncation replay, in this process


def plain_truncation(arguments: list[str], out: Path) -> int:
    """The baseline: every session's calls replayed with truncation, one CSV row per call; the rows written."""
    from compactlab.sessions.loading import load_inputs
    from compactlab.tokens.tokenizers import get_encoding

    encode = get_encoding("o200k_base").encode
    counts: dict[str, int] = {}

    def count(message) -> int:
        text = message.text()
        if text not in counts:
            counts[text] = len(encode(text, disallowed_special=())) + 4  # 4: a message's framing
        return counts[text]

    rows = 0
    with out.open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["session", "call", "recorded_prompt_tokens", "context_tokens", "compacted"])
        for session in load_inputs(arguments or None, lenient=True).sessions:
            context: list = []
            size = 0
            for message in session.messages:
                compacted = False
                if message.call is not None and size > TRIGGER * WINDOW:
                    head, tail, room = context[:2], [], KEEP * WINDOW - sum(map(count, context[:2]))
                    for kept in reversed(context[2:]):
                        if count(kept) > room:
                            break
                        tail.append(kept)
                        room -= count(kept)
                    context, compacted = head + tail[::-1], True
                    size = sum(map(count, context))
                if message.call is not None:
                    writer.writerow([session.id, rows, message.call.prompt_tokens, size, compacted])
                    rows += 1
                context.append(message)
                size += count(message)
    return rows


def _profile(arguments: list[str]) -> None:
    with tempfile.TemporaryDirectory() as out:
        profiled(["run", "--strategy", "truncate", "--workers", "1", "--out", str(Path(out) / "run"), *_datasets(arguments)])


def _datasets(arguments: list[str]) -> list[str]:
    return ["--dataset", *arguments] if arguments else []


def main(arguments: list[str]) -> None:
    if arguments[:1] == [PLAIN]:
        print(plain_truncation(arguments[2:], Path(arguments[1])))
        return
    parser = argparse.ArgumentParser(prog="python -m tests.scripts.speed_truncate", description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="*", help="dataset names or paths (default: every bundled dataset)")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats of each, taking turns (default 3)")
    parser.add_argument("--profile", action="store_true", help="profile the run command (CPU time) instead of timing it")
    args = parser.parse_args(arguments)
    if args.profile:
        _profile(args.inputs)
        return
    print(f"before: {load()}", flush=True)
    with tempfile.TemporaryDirectory() as scratch:
        runs = iter(range(10**6))

        def plain():
            timing, done = timed_command(
                [sys.executable, "-m", "tests.scripts.speed_truncate", PLAIN, f"{scratch}/plain.csv", *args.inputs]
            )
            if done.returncode != 0:
                raise RuntimeError(f"the plain truncation replay failed:\n{done.stderr}")
            return timing

        def run():
            command = [
                compactlab_command(),
                "run",
                "--strategy",
                "truncate",
                "--out",
                f"{scratch}/run-{next(runs)}",
                *_datasets(args.inputs),
            ]
            timing, done = timed_command(command)
            if done.returncode != 0:
                raise RuntimeError(f"compactlab run failed:\n{done.stderr}")
            return timing

        times = interleaved({"plain": plain, "run": run}, args.repeats)
    print(f"after: {load()}")
    print(f"{args.repeats} repeats each, taking turns, after one untimed run of each; every one a fresh process")
    for name, label in (("plain", "plain truncation replay (this script)"), ("run", "compactlab run --strategy truncate")):
        timings = times[name]
        print(
            f"{label}: wall {listed(timings, 'wall')} s; CPU {listed(timings, 'cpu')} s; peak memory {listed(timings, 'peak_mb')} MB"
        )
    ratio = Ratio("run / plain truncation", times["run"], times["plain"], TARGET)
    print(ratio.line("cpu"))
    print(ratio.line("wall", float("inf")))
    peaks = [t.peak_mb or 0.0 for t in times["run"]], [t.peak_mb or 0.0 for t in times["plain"]]
    print(
        f"peak memory run / plain: {min(peaks[0]) / min(peaks[1]):.2f} ({min(peaks[0]):.0f} MB / {min(peaks[1]):.0f} MB, least of each)"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
