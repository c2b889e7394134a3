"""How often an LLM run with its replays side by side writes other rows than the same run one replay
after another (issue 30 §5: the flaky test_concurrent_and_serial_runs_write_the_same_rows).

    python -m tests.scripts.concurrent_rows [--runs N] [--widen SECONDS]

The test's workload (tests/runs/test_concurrent_llm_replays.py: three bundled sessions, `summarize`
with the LLM summarizer at two thresholds, `truncate`, a judge with probes; the local wire-format
server of tests/fake_providers.py) is run once serially (one replay thread, one call in flight), then
`--runs` times concurrently (six in flight), each with a fresh call cache. Each concurrent run's
exported call and compaction rows are compared byte for byte with the serial run's, and the first
differing byte and the fields that differ are printed.

A race shows rarely at the pace of a real run (the test failed about once in a few full suites).
`--widen` holds every search of a session's `SessionText` (compactlab.scoring.matching) that
many seconds after it searched and before its caller records what it found: the window in which a
second thread asking about the same item raced the first before the index searched under a lock.
The sleep changes when threads run, never what a search finds, so a run that differs from the
serial one is a nondeterminism, however it was provoked.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from compactlab.runs.run_storage import export_jsonl
from compactlab.scoring import matching
from tests.fake_providers import Behaviour, serve
from tests.runs.test_concurrent_llm_replays import KEY_ENV, _config, _run


def _widened(seconds: float) -> None:
    search = matching.SessionText._search

    def held(self: matching.SessionText, item: matching.Item, first: int, end: int) -> set[int]:
        found = search(self, item, first, end)
        time.sleep(seconds)  # releases the GIL: another thread runs between the search and its record
        return found

    matching.SessionText._search = held  # type: ignore[method-assign]


def _exported(run: Path, out: Path) -> dict[str, bytes]:
    rows = {}
    for kind in ("calls", "compactions"):
        export_jsonl(run, kind, out / f"{run.name}-{kind}.jsonl")
        rows[kind] = (out / f"{run.name}-{kind}.jsonl").read_bytes()
    return rows


def _differences(serial: bytes, concurrent: bytes) -> str:
    """Where two exports first differ, and which rows' fields differ."""
    first = next((i for i, (a, b) in enumerate(zip(serial, concurrent)) if a != b), min(len(serial), len(concurrent)))
    fields = set()
    for a, b in zip(serial.splitlines(), concurrent.splitlines()):
        if a != b:
            left, right = json.loads(a), json.loads(b)
            fields |= {f"{left['setting']}:{name}" for name in left if left[name] != right.get(name)}
    return f"first differing byte {first:,}; fields {sorted(fields)}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="concurrent runs, each compared with the serial one")
    parser.add_argument("--widen", type=float, default=0.0, help="seconds each SessionText search is held (see above)")
    args = parser.parse_args(argv)
    if args.widen:
        _widened(args.widen)
    os.environ[KEY_ENV] = "sk-test-concurrent-rows"
    differing = 0
    with tempfile.TemporaryDirectory(prefix="concurrent-rows-") as folder, serve() as server:
        out = Path(folder)
        server.otherwise = Behaviour("summarize", delay=0.01)  # as the test
        serial = _exported(
            _run(_config(out, server, "serial", llm="max_in_flight = 1\n", window=40000), out / "serial", replay_threads=1).out,
            out,
        )
        for number in range(args.runs):
            name = f"concurrent-{number}"
            config = _config(out, server, name, llm="max_in_flight = 6\n", window=40000)
            rows = _exported(_run(config, out / name).out, out)
            found = [f"{kind}: {_differences(serial[kind], rows[kind])}" for kind in rows if rows[kind] != serial[kind]]
            differing += bool(found)
            print(f"run {number + 1}: " + ("; ".join(found) if found else "the same rows as the serial run"), flush=True)
    print(f"{differing} of {args.runs} concurrent runs wrote other rows than the serial run (widen {args.widen} s)")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
