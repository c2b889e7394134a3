"""Measure issue 16's rows on interrupted runs and LLM faults, on real bundled sessions.

    python -m tests.scripts.measure_faults            # both parts
    python -m tests.scripts.measure_faults runs      # kills, full disk, concurrent resume
    python -m tests.scripts.measure_faults llm       # a faulty LLM server, a server that is down, a 401
    python -m tests.scripts.measure_faults cases     # issue 32: worker deaths (local, Dask), damaged parts, a refused key, all fallen back
    python -m tests.scripts.measure_faults bounds    # issue 45: a length stop, a trickle, a huge answer, an out-of-quota 429

Interrupted runs: `compactlab run` in a child process whose writes into the run directory
(`os.write`, `os.copy_file_range`, `os.replace`; the row files, done.jsonl, and what is written
atomically) are counted; the child is killed (SIGKILL, after writing half the bytes) or gets ENOSPC
(from then on, at every write) at the Nth write, for every N, then `--resume`d without faults. The
rows the run reports (sessions.csv's calls and compactions per session × strategy) are
compared with a clean run's: a duplicated row counts once per extra copy. A concurrent resume is a
`--resume` started while a run waits at a write, the first run then let go.

LLM faults: `compactlab run` with `summarize` on the LLM summarizer against the local wire-format
server (tests/fake_providers.py) answering 15% 429, 15% 500, 5% timeouts, 5% context overflows, 10%
empty answers and 5% truncated JSON bodies; then with the server down and with a 401 on every call.
A compaction that failed or fell back is "passed off as a result" unless summary.json counts it.
The script never patches the library: it works on any version of it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from compactlab.runs.run_storage import run_compaction_rows

ROOT = Path(__file__).resolve().parents[2]
FILES = (
    ("m-claude", "3af9b1a7"),
    ("m-claude", "97b0ffde"),
    ("claude-code-log", "-Users-dain-workspace-claude-code-log-sample__37f83ec9"),
    ("mini-swe-agent-pr816", "deepseek_chat_dev_pvlib__pvlib-python-1707"),
)
RUN_ARGS = ("--strategy", "truncate", "observation-masking", "--window", "32000", "--lenient")

# Run in the child before the command: counts the writes into the run directory and acts at the Nth.
CHILD = r"""
import errno, os, signal, sys, time
mode, nth, out, gate = sys.argv[1], int(sys.argv[2]), os.path.realpath(sys.argv[3]), sys.argv[4]
real_write, real_copy, real_replace = os.write, getattr(os, "copy_file_range", None), os.replace
state = {"count": 0, "full": False, "main": os.getpid()}

def _target(fd):
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""

def _hit(path):
    if mode == "kill-worker" and os.getpid() != state["main"] and str(path).startswith(out):
        # A worker process dies at its Nth write, as the OOM killer would end it (the first worker to get there).
        state[os.getpid()] = state.get(os.getpid(), 0) + 1  # (the count inherited from the run's process is not its own)
        if state[os.getpid()] == nth and _first(gate + ".killed"):
            os.kill(os.getpid(), signal.SIGKILL)
        return False
    if os.getpid() != state["main"] or not str(path).startswith(out):
        return False
    state["count"] += 1
    return state["full"] or state["count"] == nth

def _first(marker):
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
        return True
    except FileExistsError:
        return False

def _act(partial):
    if mode == "kill":
        partial()
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "enospc":
        partial()
        state["full"] = True
        raise OSError(errno.ENOSPC, "No space left on device")
    if mode == "pause":
        open(gate + ".paused", "w").close()
        while not os.path.exists(gate + ".go"):
            time.sleep(0.05)

def write(fd, data):
    if _hit(_target(fd)):
        _act(lambda: real_write(fd, bytes(data)[: len(data) // 2]))
    return real_write(fd, data)

def copy(src, dst, count, *rest):
    if _hit(_target(dst)):
        _act(lambda: real_copy(src, dst, count // 2, *rest))
    return real_copy(src, dst, count, *rest)

def replace(src, dst, *rest, **named):
    if _hit(os.path.realpath(dst)):
        _act(lambda: None)
    return real_replace(src, dst, *rest, **named)

os.write, os.replace = write, replace
if real_copy is not None:
    os.copy_file_range = copy
if mode == "count":
    import atexit
    atexit.register(lambda: open(gate + ".count", "w").write(str(state["count"])))
from compactlab.runs.run_storage import run_compaction_rows
from compactlab.cli.main import main
sys.argv = ["compactlab", *sys.argv[5:]]
sys.exit(main(sys.argv[1:]))
"""


ORPHANS = {"kill": 0}  # worker processes found still running after their run was killed


def child(mode: str, nth: int, out: Path, gate: Path, arguments: list[str], wait: bool = True):
    """Run the command in a child (its own process group, output to files: a worker outliving a
    killed child must not hold a pipe open); with `wait`, its exit code, stdout and stderr."""
    logs = out.parent / f"{out.name}.{mode}.{nth}"
    command = [sys.executable, "-c", CHILD, mode, str(nth), str(out), str(gate), *arguments]
    with open(f"{logs}.out", "w") as stdout, open(f"{logs}.err", "w") as stderr:
        process = subprocess.Popen(command, cwd=ROOT, stdout=stdout, stderr=stderr, text=True, start_new_session=True)
    if not wait:
        return process
    process.wait()
    deadline = time.monotonic() + 10  # the kernel's signal to a dead run's workers takes a moment to land
    while _group_members(process.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = _group_members(process.pid)
    if mode == "kill":
        ORPHANS["kill"] += len(left)
    for pid in left:  # processes this script started: ended so that the next run starts clean
        os.kill(pid, 9)
    return process.returncode, Path(f"{logs}.out").read_text(), Path(f"{logs}.err").read_text()


def _group_members(group: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[2]) == group and fields[0] not in ("Z", "X"):
                members.append(int(entry.name))
    return members


def run_arguments(data: Path, out: Path, resume: bool = False) -> list[str]:
    return ["run", "--dataset", str(data), *RUN_ARGS, "--out", str(out), *(["--resume"] if resume else [])]


def reported_rows(out: Path) -> pd.Series | None:
    """Rows per session × strategy as the run reports them (calls, compactions, failed ones)."""
    path = out / "sessions.csv"
    if not path.exists():
        return None
    frame = pd.read_csv(path)
    counts = frame[["calls", "compactions"]].sum(axis=1) + frame.get("failed_compactions", 0)
    return pd.Series(counts.to_numpy(), index=pd.MultiIndex.from_frame(frame[["session", "setting"]])).sort_index()


def extra_rows(out: Path, clean: pd.Series) -> int | str:
    found = reported_rows(out)
    if found is None:
        return "no sessions.csv"
    joined = pd.concat([found.rename("found"), clean.rename("clean")], axis=1).fillna(0)
    missing = int((joined["clean"] - joined["found"]).clip(lower=0).sum())
    extra = int((joined["found"] - joined["clean"]).clip(lower=0).sum())
    return extra if not missing else f"{extra} extra, {missing} missing"


def measure_runs(work: Path) -> None:
    from tests.conftest import bundled

    data = work / "sessions"
    data.mkdir()
    for dataset, stem in FILES:
        shutil.copy(bundled(dataset, stem), data)
    clean_out, gate = work / "clean", work / "gate"
    code, _, stderr = child("count", 0, clean_out, gate, run_arguments(data, clean_out))
    assert code == 0, stderr
    clean = reported_rows(clean_out)
    assert clean is not None, f"{clean_out}: the clean run wrote no sessions.csv"
    points = int(Path(f"{gate}.count").read_text())
    print(f"clean run: {int(clean.sum())} rows reported; {points} writes into the run directory")
    for mode in ("kill", "enospc"):
        results, failed_resumes = [], []
        for nth in range(1, points + 1):
            out = work / f"{mode}-{nth}"
            code, _, _ = child(mode, nth, out, gate, run_arguments(data, out))
            resumed, _, stderr = child("count", 0, out, work / "unused", run_arguments(data, out, resume=True))
            results.append(extra_rows(out, clean))
            if resumed != 0:
                failed_resumes.append(stderr.strip().splitlines()[-1][:100])
            shutil.rmtree(out)
        duplicated = [r for r in results if isinstance(r, int)]
        failures = [r for r in results if not isinstance(r, int)]
        print(
            f"{mode} at each of {points} writes, then --resume: duplicated rows per point "
            f"min {min(duplicated, default=0)} max {max(duplicated, default=0)} total {sum(duplicated)}; "
            f"points with a duplicate: {sum(1 for r in duplicated if r)}; other outcomes: {failures}; "
            f"resumes that failed: {len(failed_resumes)} {sorted(set(failed_resumes))[:2]}"
        )
        if mode == "kill":
            print(f"worker processes still running after their run was killed: {ORPHANS['kill']}")
    out = work / "concurrent"
    nth = max(1, points // 3)
    first = child("pause", nth, out, gate, run_arguments(data, out), wait=False)
    while not Path(f"{gate}.paused").exists():
        if first.poll() is not None:
            raise SystemExit("the first run ended before its pause")
        time.sleep(0.05)
    second_code, _, second_err = child("count", 0, out, work / "unused", run_arguments(data, out, resume=True))
    Path(f"{gate}.go").touch()
    first.wait()
    print(
        f"concurrent --resume while a run waits at write {nth}: the resume exited {second_code} "
        f"({(second_err.strip().splitlines() or [''])[-1][:140]}); the first run exited {first.returncode}; "
        f"duplicated rows: {extra_rows(out, clean)}"
    )


def measure_llm(work: Path) -> None:
    from tests.fake_behaviours import context_overflow, empty_answer, fault_mix, rate_limited, server_error, stall, truncated_body
    from tests.fake_providers import serve

    def config(base_url: str, name: str) -> Path:
        path = work / f"{name}.toml"
        path.write_text(
            f'datasets = ["m-claude"]\nlenient = true\nwindow = 20000\n\n[[strategy]]\nname = "summarize"\nlabel = "summarize-llm"\n'
            f'settings = {{ summarizer = "llm" }}\n\n[[strategy]]\nname = "truncate"\n\n'
            f'[summarizer]\nprovider = "openai"\nmodel = "gpt-4o-mini"\nbase_url = "{base_url}"\n'
            f'cache_dir = "{work / name}-cache"\nmax_retries = 2\ntimeout = 1.0\n'
        )
        return path

    def run(name: str, base_url: str) -> tuple[int, str, Path]:
        out = work / name
        result = subprocess.run(
            [sys.executable, "-m", "compactlab.cli.main", "run", "--config", str(config(base_url, name)), "--out", str(out)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env={**os.environ, "OPENAI_API_KEY": ""},
        )
        return result.returncode, result.stdout + result.stderr, out

    def passed_off(out: Path) -> str:
        rows = run_compaction_rows(out) if (out / "done.jsonl").exists() else []
        bad = [r for r in rows if r.get("failed") or "summarizer failed" in (r.get("note") or "")]
        summary = json.loads((out / "summary.json").read_text()) if (out / "summary.json").exists() else {}
        counted = sum(f.get("failed", 0) + f.get("fell_back", 0) for f in summary.get("failures", []))
        return (
            f"{len(bad)} of {len(rows)} compactions failed or fell back; {max(len(bad) - counted, 0)} not counted in summary.json"
        )

    mix = {
        lambda: rate_limited(retry_after_ms="10"): 0.15,
        lambda: server_error(500): 0.15,
        lambda: stall(2.0): 0.05,
        context_overflow: 0.05,
        empty_answer: 0.10,
        truncated_body: 0.05,
    }
    with serve() as server:
        server.otherwise = fault_mix(16, mix)
        code, text, out = run("faulty", server.openai_base_url)
        print(f"faulty server: exit {code}; {passed_off(out)}; requests {server.count()}")
        print("   " + "\n   ".join(line for line in text.splitlines() if line.strip())[-1500:])
        cached = [json.loads(p.read_text())["response"]["text"] for p in (work / "faulty-cache").rglob("*.json")]
        print(f"   empty answers in the cache: {sum(1 for t in cached if not t.strip())} of {len(cached)}")
        server.otherwise = lambda: __import__("tests.fake_providers", fromlist=["x"]).echo_credentials()
        code, text, out = run("unauthorized", server.openai_base_url)
        print(f"401 on every call: exit {code}; requests {server.count()}; {passed_off(out)}; {board_line(text)}")
    code, text, out = run("down", "http://127.0.0.1:9/v1")
    print(f"server down: exit {code}; {passed_off(out)}; {board_line(text)}")


def board_line(text: str) -> str:
    """What the printed leaderboard says of the LLM setting, else the command's last line."""
    lines = [line for line in text.splitlines() if line.startswith("summarize-llm")]
    return f"leaderboard: {lines[0].split()[:3]}" if lines else f"said: {text.strip().splitlines()[-1][:160]!r}"


def measure_cases(work: Path) -> None:
    """Issue 32's run faults (tests/fault_cases.py) on the same real sessions."""
    from tests.conftest import bundled
    from tests.fault_cases import measure_damaged_parts, measure_llm_cases, measure_worker_deaths

    data = work / "case-sessions"
    data.mkdir()
    for dataset, stem in FILES:
        shutil.copy(bundled(dataset, stem), data)
    clean_out = work / "case-clean"
    code, _, stderr = child("count", 0, clean_out, work / "case-gate", run_arguments(data, clean_out))
    assert code == 0, stderr
    clean = reported_rows(clean_out)
    measure_worker_deaths(work, data, clean)
    measure_worker_deaths(work, data, clean, "dask")
    measure_damaged_parts(work, data, clean_out, clean, lambda out, resume: run_arguments(data, out, resume))
    measure_llm_cases(work)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.scripts.measure_faults", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "parts",
        nargs="*",
        choices=["runs", "llm", "cases", "bounds"],
        metavar="PART",
        help="runs, llm, cases or bounds (default: all)",
    )
    parts = parser.parse_args(argv).parts or ["runs", "llm", "cases", "bounds"]
    with tempfile.TemporaryDirectory(prefix="compactlab-faults-") as directory:
        work = Path(directory)
        if "runs" in parts:
            measure_runs(work)
        if "llm" in parts:
            measure_llm(work)
        if "cases" in parts:
            measure_cases(work)
        if "bounds" in parts:
            from tests.fault_cases import measure_llm_bounds

            measure_llm_bounds(work)


if __name__ == "__main__":
    main(sys.argv[1:])
