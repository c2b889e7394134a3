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


def cli(*arguments: object, env: dict | None = None, timeout: float | None = None) -> tuple[int, str]:
    """The command's exit status and output; -9 and what it said when it ran past `timeout` (then it is killed)."""
    try:
        done = subprocess.run(
            [sys.executable, "-m", "compactlab.cli.main", *map(str, arguments)],
            capture_output=True,
            text=True,
            env={**os.environ, **(env or {})},
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as expired:
        said = (expired.stdout or b"") + (expired.stderr or b"")
        return -9, (said.decode(errors="replace") if isinstance(said, bytes) else said) + f"\nkilled after {timeout:g} s"
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


# Issue 45's LLM faults: (kind, behaviour maker, client settings). Each kind is measured by direct
# calls through the library (both providers) and by one `compactlab run` on bundled sessions.
BOUND_TIMEOUT = 2.0
CLI_TIMEOUT = 900.0  # seconds a `compactlab run` of these faults may take before it counts as hung


def _bound_kinds() -> list[tuple[str, object, object, dict]]:
    """(kind, what the server does in direct calls, in the run (None: no run), client settings). A
    trickle sends a byte every 0.3 s for up to 60 s in direct calls, 20 s in runs (the issue's 105 s
    was a whole answer trickled); a huge answer is 20 MB in direct calls, 5 MB in runs."""
    from tests.fake_behaviours import huge_answer, length_stop, quota_exceeded, trickle

    timeout = {"timeout": BOUND_TIMEOUT}
    return [
        ("length stop", length_stop, length_stop, {"max_retries": 2}),
        ("trickle", lambda: trickle(0.3, 60.0), lambda: trickle(0.3, 20.0), {"max_retries": 0, **timeout}),
        ("trickle, 1 retry", lambda: trickle(0.3, 60.0), None, {"max_retries": 1, **timeout}),
        ("huge answer", lambda: huge_answer(20.0), lambda: huge_answer(5.0), {"max_retries": 0}),
        ("insufficient_quota", _quota_then_answers, quota_exceeded, {"max_retries": 2}),
    ]


def _quota_then_answers():
    """Out of quota for the first 6 requests, then answers: a client that keeps retrying a quota 429
    as a rate limit gets an answer in the end, and a direct call does not hang."""
    from tests.fake_behaviours import ok, quota_exceeded

    count = [0]

    def choose():
        count[0] += 1
        return quota_exceeded() if count[0] <= 6 else ok()

    return choose


def _verdict(kind: str, outcome: str, requests: int, seconds: float, cached: int, settings: dict, trickled: list) -> str:
    """clean, or what was silently wrong: the fault passed as an answer, was recorded, outlived its
    deadline, or was sent again although it is final."""
    failed = outcome.startswith("failed")
    if kind.startswith("length") or kind.startswith("huge"):
        return "clean" if failed and not cached else "wrong: taken as an answer" + (", cached" if cached else "")
    if kind.startswith("trickle"):
        late = sum(1 for t in trickled if t > settings["timeout"] + 1.0)
        return "clean" if failed and not late else f"wrong: {late} request(s) outlived the {settings['timeout']:g} s deadline"
    return "clean" if "quota" in outcome and requests == 1 else f"wrong: {requests} requests for 1 prompt"


def _direct_bound_run(kind: str, make, settings: dict, provider: str, work: Path) -> tuple:
    from compactlab.contract import SummaryRequest
    from compactlab.llm import AnthropicClient, LLMCache, LLMError, LLMSummarizer, OpenAIChatClient
    from compactlab.llm.cache import CacheMiss
    from tests.fake_providers import serve

    cache = work / f"bounds-{kind.replace(' ', '-')}-{provider}"
    request = SummaryRequest(messages=(), prompt="Summarize the session.", system="", prompt_hash="h", max_output_tokens=1024)
    with serve() as server:
        server.otherwise = make()
        options = {"api_key_env": "COMPACTLAB_FAULTS_KEY", "timeout": 10.0, **settings}
        made = (
            OpenAIChatClient("gpt-4o-mini", base_url=server.openai_base_url, **options)
            if provider == "openai"
            else AnthropicClient("claude-haiku-4-5", base_url=server.base_url, **options)
        )
        started = time.monotonic()
        try:
            with LLMSummarizer(made, LLMCache(cache)) as summarizer:
                text = summarizer.summarize(request).text
            outcome = f"answered ({len(text):,} chars)"
        except (LLMError, CacheMiss) as exc:
            outcome = f"failed: {exc}"
        except Exception as exc:  # a CompactionFailed is a failure; anything else is a traceback
            outcome = f"failed: {exc}" if type(exc).__name__ == "CompactionFailed" else f"TRACEBACK {type(exc).__name__}: {exc}"
        seconds = time.monotonic() - started
        requests, trickled = server.count(), list(server.ended().trickled)
    cached = len(list(cache.rglob("*.json"))) if cache.exists() else 0
    return requests, seconds, outcome, cached, trickled


def _cli_bound_run(kind: str, make, settings: dict, work: Path) -> tuple:
    from compactlab.runs.run_storage import run_compaction_rows
    from tests.conftest import bundled
    from tests.fake_providers import serve

    name = f"bounds-run-{kind.split()[0]}"
    sessions = ", ".join(
        f'"{bundled(*pair)}"'
        for pair in (
            ("mini-swe-agent-pr816", "deepseek_reasoner_dev_marshmallow-code__marshmallow-1343"),
            ("claude-code-log", "-src-deep-manifest__a7da6a22"),
        )
    )
    in_flight = 1 if kind == "insufficient_quota" else 8
    with serve() as server:
        server.otherwise = make()
        config = work / f"{name}.toml"
        config.write_text(
            f"datasets = [{sessions}]\nwindow = 20000\n\n"
            '[[strategy]]\nname = "summarize"\nlabel = "summarize-llm"\nsettings = { summarizer = "llm" }\n\n'
            f'[summarizer]\nprovider = "openai"\nmodel = "gpt-4o-mini"\nbase_url = "{server.openai_base_url}"\n'
            f'cache_dir = "{work / name}-cache"\nmax_retries = {settings["max_retries"]}\n'
            f"timeout = {settings.get('timeout', 10.0)}\nmax_in_flight = {in_flight}\n"
        )
        started = time.monotonic()
        code, text = cli("run", "--config", config, "--out", work / name, env={"OPENAI_API_KEY": "sk-test"}, timeout=CLI_TIMEOUT)
        seconds = time.monotonic() - started
        requests, trickled = server.count(), list(server.ended().trickled)
    out = work / name
    rows = run_compaction_rows(out) if (out / "done.jsonl").exists() else []
    summary = json.loads((out / "summary.json").read_text()) if (out / "summary.json").exists() else {}
    counted = sum(f.get("failed", 0) + f.get("fell_back", 0) for f in summary.get("failures", []))
    used = sum(1 for r in rows if not r.get("failed") and "[fell back]" not in (r.get("note") or ""))
    cache = work / f"{name}-cache"
    cached = len(list(cache.rglob("*.json"))) if cache.exists() else 0
    if TRACEBACK in text:
        verdict = "traceback"
    elif code == -9:
        verdict = f"wrong: still running after {CLI_TIMEOUT:g} s"
    elif kind.startswith(("length", "huge")):
        wrong = used + max(len(rows) - used - counted, 0)
        verdict = (
            "clean" if code == 3 and not wrong and not cached else f"wrong: {used} of {len(rows)} compactions used the answer"
        )
    elif kind.startswith("trickle"):
        late = sum(1 for t in trickled if t > settings["timeout"] + 1.0)
        verdict = "clean" if not late else f"wrong: {late} of {requests} requests outlived the {settings['timeout']:g} s deadline"
    else:
        verdict = "clean" if code == 2 and requests == 1 else f"wrong: {requests} requests before the run stopped"
    return requests, seconds, outcome(code, text), cached, verdict


def measure_llm_bounds(work: Path) -> None:
    """Issue 45's LLM faults (length stop, trickle, huge answer, insufficient_quota): per kind, direct
    calls through the library for both providers (at once, in threads) and one `compactlab run`; the
    table "kind | runs | tracebacks | silently wrong | clean" with the requests sent and wall time."""
    from concurrent.futures import ThreadPoolExecutor

    os.environ["COMPACTLAB_FAULTS_KEY"] = "sk-test-faults"
    kinds = _bound_kinds()
    with ThreadPoolExecutor(len(kinds) * 2) as pool:
        direct = {
            (kind, provider): pool.submit(_direct_bound_run, kind, make, settings, provider, work)
            for kind, make, _, settings in kinds
            for provider in ("openai", "anthropic")
        }
        results = {key: future.result() for key, future in direct.items()}
    table = []
    for kind, _, in_run, settings in kinds:
        verdicts, requests, walls = [], 0, []
        for provider in ("openai", "anthropic"):
            sent, seconds, said, cached, trickled = results[(kind, provider)]
            verdict = (
                "traceback" if said.startswith("TRACEBACK") else _verdict(kind, said, sent, seconds, cached, settings, trickled)
            )
            verdicts.append(verdict)
            requests, walls = requests + sent, walls + [seconds]
            print(f"  {kind:22} {provider:9} requests {sent:3}  {seconds:6.1f} s  cached {cached}  {verdict}; {said[:150]!r}")
        if in_run is not None:
            sent, seconds, said, cached, verdict = _cli_bound_run(kind, in_run, settings, work)
            verdicts.append(verdict)
            requests, walls = requests + sent, walls + [seconds]
            print(f"  {kind:22} {'run':9} requests {sent:3}  {seconds:6.1f} s  cached {cached}  {verdict}; {said[-150:]!r}")
        table.append((kind, len(verdicts), verdicts, requests, walls))
    print("\nkind | runs | tracebacks | silently wrong | clean | requests sent | wall time (direct openai, anthropic; run)")
    print("--- | --- | --- | --- | --- | --- | ---")
    for kind, runs, verdicts, requests, walls in table:
        tracebacks = sum(v == "traceback" for v in verdicts)
        wrong = sum(v.startswith("wrong") for v in verdicts)
        print(
            f"{kind} | {runs} | {tracebacks} | {wrong} | {runs - tracebacks - wrong} | {requests} | "
            + ", ".join(f"{w:.1f} s" for w in walls)
        )
