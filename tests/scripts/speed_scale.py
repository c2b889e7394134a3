"""Time and peak memory of `compactlab run` as the number of sessions grows.

    python -m tests.scripts.speed_scale [--sizes 300 3000] [--settings 4 20] [--source PATH ...]
                                [--max-calls CALLS] [--corpus DIR] [--workers N]

N sessions are built from real ones (the shared sessions, else the bundled datasets; with
`--max-calls`, only the real sessions that recorded at most that many calls: a size class that lets
10,000 sessions run in an afternoon on two cores, each copy still a whole real session): session
i is real session i mod R (in a fixed shuffled order, so that every N mixes every source alike)
with every message text changed for its copy number (a suffix), so no count cached for one copy
serves another: each copy costs what a new session of that size would. The copies are written as
canonical JSONL (gzipped, one session per file, as SWE-bench publishes a trajectory per task) to
`--corpus` (default: a temporary folder), once per N and reused.

Each N runs in a fresh process, as `compactlab run` would, replaying the first `--settings` of the
default strategies (each count given); it reports the wall and CPU time from `compactlab.runs.runs.run` on
(reading, replaying, metrics, the run directory; the workers' CPU included) and the peak of the
whole process tree's memory (the run's process and its workers, their proportional set sizes
summed, sampled every 50 ms: `tests.scripts.timing.timed_command`), beside each process's own
peak. The ratios are against the smallest N: time should grow as N, memory not at all (target: the
whole tree's peak at the largest N at most 1.3 times that at the smallest). The load is printed
after each run: the time is the machine's as much as the run's.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import resource
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from compactlab.sessions.importers.canonical import session_lines
from compactlab.sessions.loading import load_inputs
from compactlab.sessions.model import Session, TextPart, ThinkingPart, ToolResultPart
from tests.scripts.timing import cpu_seconds, load, timed_command

REPO = Path(__file__).resolve().parents[2]  # tests/scripts/speed_scale.py: the repository holds bench/
TARGET = 1.3  # the whole tree's peak at the largest N over that at the smallest
ONE_RUN = "--one-run"  # internal: time one run in this process and print it as JSON


def sources() -> list[str]:
    """The real sessions the copies are made of: the shared sessions where they are, else the bundled datasets."""
    # Beside the repository, or one folder further up for a worktree (as tests/conftest.py looks).
    for candidate in (REPO.parent / "shared" / "transcripts", REPO.parents[1] / "shared" / "transcripts"):
        if candidate.is_dir():
            return [str(p) for p in sorted(candidate.iterdir()) if p.is_dir()]
    return []  # load_inputs(None): every bundled dataset


def real_sessions(arguments: list[str], max_calls: int | None = None) -> list[Session]:
    """The real sessions with calls (at most `max_calls` of them, when given), in a fixed shuffled order."""
    sessions = [
        t
        for t in load_inputs(arguments or None, lenient=True).sessions
        if t.calls and len(t.calls) <= (max_calls or len(t.calls))
    ]
    if not sessions:
        raise ValueError(f"no real session in {arguments or 'the bundled datasets'} recorded between 1 and {max_calls} calls")
    random.Random(19).shuffle(sessions)
    return sessions


def copy_of(session: Session, number: int, path: Path) -> Session:
    """The session with every text part and tool output changed for copy `number` (and its own id and path)."""
    mark = f" ~{number}"

    def changed(part):
        if isinstance(part, (TextPart, ThinkingPart)):
            return replace(part, text=part.text + mark)
        if isinstance(part, ToolResultPart):
            return replace(part, content=part.content + mark)
        return part

    messages = tuple(replace(m, parts=tuple(map(changed, m.parts))) for m in session.messages)
    return replace(session, id=f"{session.id}~{number}", source_path=str(path), messages=messages)


def build_corpus(real: list[Session], size: int, folder: Path) -> Path:
    """`size` sessions in `folder` (kept: a folder already holding them is used as it is)."""
    folder.mkdir(parents=True, exist_ok=True)
    done = folder / ".complete"
    if done.exists():
        return folder
    for index in range(size):
        path = folder / f"session-{index:06d}.jsonl.gz"
        lines = session_lines(copy_of(real[index % len(real)], index // len(real), path))
        text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
        path.write_bytes(gzip.compress(text.encode("utf-8"), compresslevel=1, mtime=0))
    done.write_text(f"{size}\n")
    return folder


def one_run(corpus: str, settings: int, workers: int | None) -> dict:
    """One run over `corpus` in this process: its time (from `compactlab.runs.runs.run` on)."""
    from compactlab.runs import runs
    from compactlab.runs.run_config import RunConfig, default_strategies

    config = RunConfig(datasets=(corpus,), strategies=default_strategies()[:settings])
    with tempfile.TemporaryDirectory() as out:
        cpu, start = cpu_seconds(), time.perf_counter()
        result = runs.run(config, Path(out), workers=workers)
        seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    return {
        "seconds": seconds,
        "cpu": cpu,
        "sessions": int(result.sessions["session"].nunique()),
        "settings": settings,
        "parent_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "worker_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
    }


def _run_in_fresh_process(corpus: Path, settings: int, workers: int | None) -> dict:
    command = [sys.executable, "-m", "tests.scripts.speed_scale", ONE_RUN, str(corpus), str(settings), str(workers or 0)]
    timing, done = timed_command(command)
    if done.returncode != 0:
        raise RuntimeError(f"the measured run over {corpus} failed:\n{done.stderr}")
    return {**json.loads(done.stdout.splitlines()[-1]), "tree_mb": timing.peak_mb, "process_seconds": timing.wall}


def main(arguments: list[str]) -> None:
    if arguments[:1] == [ONE_RUN]:
        corpus, settings, workers = arguments[1], int(arguments[2]), int(arguments[3]) or None
        print(json.dumps(one_run(corpus, settings, workers)))
        return
    parser = argparse.ArgumentParser(prog="python -m tests.scripts.speed_scale", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=[300, 3_000], metavar="N", help="numbers of sessions")
    parser.add_argument(
        "--settings",
        nargs="+",
        type=int,
        default=[4, 20],
        help="how many of the default strategies each run replays (default: 4 and 20)",
    )
    parser.add_argument("--source", nargs="+", metavar="PATH", help="real sessions to copy (default: the shared sessions)")
    parser.add_argument(
        "--max-calls",
        type=int,
        metavar="CALLS",
        help="copy only the real sessions with at most CALLS recorded calls (a size class)",
    )
    parser.add_argument("--corpus", type=Path, help="folder for the built sessions, kept for the next call (default: temporary)")
    parser.add_argument("--workers", type=int, help="worker processes (default: one per core)")
    args = parser.parse_args(arguments)
    bad = [n for n in [*args.sizes, *args.settings, args.max_calls or 1] if n < 1]
    if bad:
        parser.error(f"--sizes, --settings and --max-calls are counts >= 1 (got sizes {args.sizes}, settings {args.settings})")
    real = real_sessions(args.source or sources(), args.max_calls)
    workers = args.workers or os.cpu_count() or 1
    calls = sorted(len(t.calls) for t in real)
    size_class = f"at most {args.max_calls} calls each" if args.max_calls else "every size"
    print(
        f"{len(real)} real sessions copied ({size_class}: {calls[0]}-{calls[-1]} calls, median {calls[len(calls) // 2]}); "
        f"{workers} workers; before: {load()}",
        flush=True,
    )
    with tempfile.TemporaryDirectory() as temporary:
        base = args.corpus or Path(temporary)
        for settings in args.settings:
            rows = []
            for size in sorted(set(args.sizes)):
                folder = build_corpus(real, size, base / f"sessions-{size}{f'-max{args.max_calls}' if args.max_calls else ''}")
                measured = _run_in_fresh_process(folder, settings, args.workers)
                rows.append(measured)
                print(_line(measured, rows[0]), flush=True)
                print(f"  {load()}", flush=True)
            if len(rows) > 1:
                growth = rows[-1]["tree_mb"] / rows[0]["tree_mb"]
                print(
                    f"{settings} settings: whole-tree peak at {rows[-1]['sessions']:,} sessions / at {rows[0]['sessions']:,}: "
                    f"{growth:.2f} (target <= {TARGET}): {'PASS' if growth <= TARGET else 'FAIL'}",
                    flush=True,
                )


def _line(row: dict, first: dict) -> str:
    return (
        f"N={row['sessions']:>6,} × {row['settings']} settings: {row['seconds']:8.1f} s wall, {row['cpu']:8.1f} s CPU "
        f"({1000 * row['cpu'] / row['sessions']:.0f} ms CPU/session), whole-tree peak {row['tree_mb']:6.0f} MB "
        f"(largest process alone: parent {row['parent_mb']:.0f} MB, worker {row['worker_mb']:.0f} MB); "
        f"× smallest N: sessions {row['sessions'] / first['sessions']:.0f}, CPU {row['cpu'] / first['cpu']:.2f}, "
        f"whole-tree peak {row['tree_mb'] / first['tree_mb']:.2f}"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
