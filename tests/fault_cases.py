"""Issue 32's run faults, measured through the CLI in child processes (`python -m tests.scripts.measure_faults cases`):

- worker death: a worker process SIGKILLed at its Nth write (as the OOM killer ends one), for
  every N a worker reaches (on Dask, `--executor dask`, for the first three: its workers are
  forked for this, so that they count their writes too), then `--resume`: the exit status, a
  traceback or not, whether the message names the file, and the rows after the resume against a
  clean run's;
- damaged parts: a finished run with one row part deleted and another's bytes flipped: what
  `report`, `export-rows`, `diff` and `--resume` do, and the rows after the resume;
- a refused key: the server answers the first request 401 after a second and every later one
  401 after four, with 1 and with 10 calls in flight allowed: requests sent, those the server
  received after its first 401 had gone out, and of those in flight then, how many it still
  answered and how many the client abandoned (closed their connection) before their answer;
- every LLM setting falling back (HTTP 500 on every call): the exit status and whether
  report.html was written.

Like the rest of tests/scripts/measure_faults.py it never patches the library, so it measures an older
checkout too (put that checkout's package first on PYTHONPATH).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

TRACEBACK = "Traceback (most recent call last)"


def cli(*arguments: object, env: dict | None = None) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "compactlab.cli.main", *map(str, arguments)],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )
    return done.returncode, done.stdout + done.stderr


def outcome(code: int, text: str) -> str:
    last = (text.strip().splitlines() or [""])[-1]
    return f"exit {code}{' TRACEBACK' if TRACEBACK in text else ''}: {last[:110]!r}"


def measure_worker_deaths(work: Path, data: Path, clean, executor: str = "local") -> None:
    from tests.scripts.measure_faults import child, extra_rows, run_arguments

    def arguments(out: Path, resume: bool = False) -> list[str]:
        return [*run_arguments(data, out, resume), *(["--executor", "dask"] if executor == "dask" else [])]

    fork = "DASK_DISTRIBUTED__WORKER__MULTIPROCESSING_METHOD"
    saved = os.environ.get(fork)
    os.environ[fork] = "fork"  # Dask's workers forked from the child, which counts their writes
    results = []
    try:
        for nth in range(1, 9 if executor == "local" else 4):
            out, gate = work / f"{executor}-worker-{nth}", work / f"{executor}-worker-gate-{nth}"
            code, _, stderr = child("kill-worker", nth, out, gate, arguments(out))
            if not Path(f"{gate}.killed").exists():
                shutil.rmtree(out, ignore_errors=True)
                break  # no worker writes this often
            named = [p.name for p in data.iterdir() if p.name in stderr]
            resumed, _, resume_err = child("count", 0, out, work / "unused", arguments(out, resume=True))
            results.append((code, TRACEBACK in stderr, len(named), resumed, extra_rows(out, clean)))
            print(
                f"  {executor}: worker killed at its write {nth}: exit {code}{' TRACEBACK' if TRACEBACK in stderr else ''}; "
                f"files named {len(named)}; resume hint {'--resume' in stderr}; --resume exit {resumed}; "
                f"rows after resume: extra {extra_rows(out, clean)}"
            )
            shutil.rmtree(out)
    finally:
        if saved is None:
            del os.environ[fork]
        else:
            os.environ[fork] = saved
    tracebacks = sum(1 for r in results if r[1])
    print(
        f"worker deaths ({executor}): {len(results)} kills; tracebacks {tracebacks}; exit 2 with the file named "
        f"{sum(1 for r in results if r[0] == 2 and r[2] == 1)}"
    )


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    for i in range(8, len(data) // 2):
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))


def measure_damaged_parts(work: Path, data: Path, clean_out: Path, clean, arguments) -> None:
    from tests.scripts.measure_faults import extra_rows

    done = [json.loads(line) for line in (clean_out / "done.jsonl").read_text().splitlines() if line.strip()]
    for damage in ("deleted", "corrupted"):
        out = work / f"parts-{damage}"
        shutil.copytree(clean_out, out)
        kind = "calls" if damage == "deleted" else "compactions"
        target = out / done[0]["parts"][kind]
        target.unlink() if damage == "deleted" else _flip(target)
        print(f"  a {damage} part ({target.name}, session {done[0]['session']}):")
        for name, command in (
            ("report", ["report", out]),
            ("export-rows", ["export-rows", out, "--kind", kind]),
            ("diff", ["diff", clean_out, out]),
        ):
            code, text = cli(*command)
            named = target.name in text and done[0]["session"] in text
            print(f"    {name:12} {outcome(code, text)}; part and session named: {named}")
        code, text = cli(*arguments(out, resume=True))
        print(f"    {'--resume':12} {outcome(code, text)}; rows after it: extra {extra_rows(out, clean)}")
        code, text = cli("report", out)
        print(f"    {'report after':12} {outcome(code, text)}")


def _llm_config(work: Path, name: str, base_url: str, extra: str = "") -> Path:
    path = work / f"{name}.toml"
    path.write_text(
        f'datasets = ["m-claude"]\nlenient = true\nwindow = 20000\n\n[[strategy]]\nname = "summarize"\nlabel = "summarize-llm"\n'
        f'settings = {{ summarizer = "llm" }}\n\n'
        f'[summarizer]\nprovider = "openai"\nmodel = "gpt-4o-mini"\nbase_url = "{base_url}"\n'
        f'cache_dir = "{work / name}-cache"\nmax_retries = 2\ntimeout = 10.0\n{extra}'
    )
    return path


def measure_llm_cases(work: Path) -> None:
    from tests.fake_behaviours import Behaviour, server_error
    from tests.fake_providers import serve

    delay, later = 1.0, 4.0
    for in_flight in (1, 10):
        with serve() as server:
            arrivals: list[float] = []

            def refuse(arrivals: list[float] = arrivals) -> Behaviour:
                arrivals.append(time.monotonic())
                return Behaviour("echo_credentials", status=401, delay=delay if len(arrivals) == 1 else later)

            server.otherwise = refuse
            name = f"refused-{in_flight}"
            config = _llm_config(work, name, server.openai_base_url, f"max_in_flight = {in_flight}\n")
            code, text = cli("run", "--config", config, "--out", work / name, env={"OPENAI_API_KEY": "sk-test"})
            refused_at = min((t for t, status in server.answered if status == 401), default=None)
            after = sum(1 for a in arrivals if refused_at is not None and a > refused_at)
            answered = sum(1 for t, _ in server.answered if refused_at is not None and t > refused_at)
            print(
                f"  401 after {delay:g} s (later ones after {later:g} s), max_in_flight {in_flight}: {outcome(code, text)}; "
                f"requests {len(arrivals)}, at most {server.max_in_flight} at once; received after the first 401 was "
                f"sent: {after}; in flight then: {answered} answered after it, {len(server.abandoned)} abandoned by the client"
            )
    with serve() as server:
        server.otherwise = server_error(500)
        config = _llm_config(work, "fell-back", server.openai_base_url)
        code, text = cli("run", "--config", config, "--out", work / "fell-back", env={"OPENAI_API_KEY": "sk-test"})
        print(f"  HTTP 500 on every call: exit {code}; report.html written: {(work / 'fell-back' / 'report.html').exists()}")
