"""Issue 32 on real sessions: a worker that dies, damaged row parts, a full disk, a refused key,
and a run whose every LLM setting fell back. Each ends in a clear message (exit 2 or 3, never a
traceback), and a damaged run is repaired by --resume."""

from __future__ import annotations

import errno
import json
import shutil
import time
from pathlib import Path

import pytest

from compactlab.cli.main import main
from compactlab.results.run_failures import INCOMPLETE_EXIT
from compactlab.runs import run_files
from compactlab.runs.run_files import read_done
from compactlab.runs.run_storage import run_calls
from tests.fake_behaviours import Behaviour, server_error
from tests.fake_providers import FakeProvider, serve
from tests.input_cases import sessions
from tests.llm.support import KEY_ENV
from tests.scripts.measure_faults import child, run_arguments

RUN = ["--strategy", "truncate", "observation-masking", "--window", "32000"]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return sessions(tmp_path / "data")  # two real mini-swe-agent sessions


def _run(data: Path, out: Path, *more: str) -> int:
    return main(["run", "--dataset", str(data), *RUN, "--out", str(out), *more])


def test_a_worker_killed_like_the_oom_killer_does_is_named_and_resume_completes(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    code, _, stderr = child("kill-worker", 1, out, tmp_path / "gate", run_arguments(data, out))
    assert (tmp_path / "gate.killed").exists()  # a worker really died
    assert code == 2 and "Traceback" not in stderr
    named = [path.name for path in data.iterdir() if path.name in stderr]
    assert len(named) == 1 and "OOM killer" in stderr and f"--resume --out {out}" in stderr
    code, _, stderr = child("count", 0, out, tmp_path / "unused", run_arguments(data, out, resume=True))
    assert code == 0, stderr
    assert len(read_done(out / run_files.DONE).parts) == 2


def test_damaged_parts_are_named_by_every_reader_and_resume_replays_their_sessions(data: Path, tmp_path: Path, capsys) -> None:
    clean = tmp_path / "clean"
    assert _run(data, clean) == 0
    rows = len(run_calls(clean))
    out = tmp_path / "damaged"
    shutil.copytree(clean, out)
    log = read_done(out / run_files.DONE)
    (first, second) = list(log.parts)
    (out / log.parts[first][0]["calls"]).unlink()  # a deleted part
    corrupted = out / log.parts[second][0]["compactions"]
    data_bytes = bytearray(corrupted.read_bytes())
    for i in range(8, len(data_bytes) // 2):  # a damaged page and footer length, past the magic number
        data_bytes[i] ^= 0x5A
    corrupted.write_bytes(bytes(data_bytes))
    capsys.readouterr()
    for command in (["report", str(out)], ["export-rows", str(out)], ["diff", str(clean), str(out)]):
        assert main(command) == 2, command
        said = capsys.readouterr().err
        assert "rows/" in said and (first in said or second in said) and "--resume" in said, said
    assert _run(data, out, "--resume") == 0
    assert "replayed again: 2 sessions" in capsys.readouterr().err
    assert len(run_calls(out)) == rows  # every row back, none twice
    assert main(["diff", str(clean), str(out)]) == 0


def test_a_full_disk_names_the_file_it_could_not_write(data: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    def full(descriptor: int, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(run_files, "_write_all", full)
    out = tmp_path / "run"
    assert _run(data, out) == 2
    assert f"{out / run_files.DONE}: No space left on device" in capsys.readouterr().err


def _llm_config(tmp_path: Path, data: Path, base_url: str, extra: str = "") -> Path:
    path = tmp_path / "run.toml"
    path.write_text(
        f'datasets = ["{data}"]\nwindow = 8000\n\n'
        '[[strategy]]\nname = "summarize"\nlabel = "summarize-llm"\nsettings = { summarizer = "llm" }\n\n'
        f'[summarizer]\nprovider = "openai"\nmodel = "gpt-4o-mini"\nbase_url = "{base_url}"\napi_key_env = "{KEY_ENV}"\n'
        f'cache_dir = "{tmp_path / "cache"}"\nmax_retries = 2\ntimeout = 10.0\n{extra}'
    )
    return path


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> FakeProvider:
    monkeypatch.setenv(KEY_ENV, "sk-test-reliability")
    with serve() as state:
        yield state


def test_one_refused_key_stops_the_run_with_no_request_sent_after_it(
    server: FakeProvider, data: Path, tmp_path: Path, capsys
) -> None:
    arrivals: list[float] = []
    delay = 1.0  # the server takes a second to refuse: other calls start meanwhile

    def refuse() -> Behaviour:
        arrivals.append(time.monotonic())
        return Behaviour("echo_credentials", status=401, delay=delay)

    server.otherwise = refuse
    config = _llm_config(tmp_path, data, server.openai_base_url, "max_in_flight = 1\n")
    assert main(["run", "--config", str(config), "--out", str(tmp_path / "run")]) == 2
    assert "HTTP 401" in capsys.readouterr().err
    first_refusal = arrivals[0] + delay
    # (a margin for a request sent a moment before the refusal came back but read by the server after it)
    assert [a - first_refusal for a in arrivals if a > first_refusal + 0.25] == []
    # One call at a time: the other replay's call waited for the slot the refused one held, and
    # was sent as soon as the 401 freed it (2 requests) until a refusal stopped every call at once.
    assert server.max_in_flight == 1 and len(arrivals) == 1


def test_a_refused_key_cancels_the_other_replays_calls_in_flight(
    server: FakeProvider, data: Path, tmp_path: Path, capsys
) -> None:
    # The first call is refused after 3 s (time for the other replay to send its call on a loaded
    # machine); the other replay's call, sent meanwhile, would be refused after 5 s.
    def refuse() -> Behaviour:
        return Behaviour("echo_credentials", status=401, delay=3.0 if len(server.received) == 1 else 5.0)

    server.otherwise = refuse
    config = _llm_config(tmp_path, data, server.openai_base_url, "max_in_flight = 4\n")
    assert main(["run", "--config", str(config), "--out", str(tmp_path / "run")]) == 2
    assert "HTTP 401" in capsys.readouterr().err
    [(refused_at, status)] = server.ended().answered  # only the first call was answered
    assert status == 401 and server.count() == 2  # both replays' calls were in flight; none sent again
    [abandoned_at] = server.abandoned  # the other one's connection was closed at the refusal
    assert 0 <= abandoned_at - refused_at < 2.5  # (before its 5 s answer)


def test_when_every_llm_setting_falls_back_the_report_is_written_with_the_failures_first(
    server: FakeProvider, data: Path, tmp_path: Path
) -> None:
    server.otherwise = server_error(500)
    out = tmp_path / "run"
    config = _llm_config(tmp_path, data, server.openai_base_url)
    assert main(["run", "--config", str(config), "--out", str(out)]) == INCOMPLETE_EXIT
    summary = json.loads((out / "summary.json").read_text())
    assert summary["failures"] and not summary["leaderboard"]
    page = (out / "report.html").read_text()
    assert page.index("Compactions that failed or fell back") < page.index("No recommendation")
    assert "summarize-llm" in page
