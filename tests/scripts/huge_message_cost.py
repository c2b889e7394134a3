"""What one huge message costs a run: wall time and peak memory of `compactlab run`.

    .venv/bin/python -m tests.scripts.huge_message_cost [--mb 50] [--strategy NAME ...]

Takes a small real Claude Code session from datasets/, puts one tool result of --mb megabytes
of text (real lines of the session repeated) into it, and runs `compactlab run` on it in a child
process, printing the exit status, the wall time, the child's peak RSS and the last lines it
wrote. Runs the same on the session as it was, for comparison. Only the standard library is used,
so it measures an older checkout too (run it from that checkout's folder).
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SESSION = REPO / "datasets/claude-code-log/sessions/-src-experiments-claude_p__2b4ed4c0-b905-41de-9238-273db3ec737a.jsonl.gz"


def with_huge_result(megabytes: float) -> bytes:
    lines = [json.loads(line) for line in gzip.decompress(SESSION.read_bytes()).splitlines() if line.strip()]
    filler_source = "\n".join(json.dumps(r) for r in lines)
    target = int(megabytes * (1 << 20))
    filler = (filler_source * (target // len(filler_source) + 1))[:target]
    for record in lines:
        content = record.get("message", {}).get("content") if record.get("type") == "user" else None
        if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            block = next(b for b in content if isinstance(b, dict) and b.get("type") == "tool_result")
            block["content"] = filler
            break
    else:
        raise SystemExit(f"{SESSION.name} has no tool result to enlarge")
    return b"".join(json.dumps(r).encode() + b"\n" for r in lines)


def measure(path: Path, out: Path, strategies: list[str]) -> dict:
    command = [sys.executable, "-m", "compactlab.cli.main", "run", "--dataset", str(path), "--out", str(out)]
    if strategies:
        command += ["--strategy", *strategies]
    # A fresh wrapper process per measurement: ru_maxrss of its children is then this run's peak.
    wrapper = (
        "import json, resource, subprocess, sys, time; start = time.perf_counter(); "
        "done = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
        "print(json.dumps([done.returncode, time.perf_counter() - start, "
        "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, (done.stderr.strip() or done.stdout.strip())[-300:]]))"
    )
    measured = subprocess.run([sys.executable, "-c", wrapper, *command], capture_output=True, text=True, cwd=Path.cwd())
    status, seconds, peak_kib, said = json.loads(measured.stdout)
    return {
        "file": path.name,
        "bytes": path.stat().st_size,
        "exit": status,
        "seconds": round(seconds, 1),
        "peak_rss_mb": round(peak_kib / 1024),
        "said": said,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=50)
    parser.add_argument("--strategy", nargs="*", default=[])
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="compactlab-huge-") as tmp:
        huge = Path(tmp) / "huge-message.jsonl"
        huge.write_bytes(with_huge_result(args.mb))
        small = Path(tmp) / "as-recorded.jsonl"
        small.write_bytes(gzip.decompress(SESSION.read_bytes()))
        for path in (huge, small):
            print(json.dumps(measure(path, Path(tmp) / f"run-{path.stem}", args.strategy)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
