"""A run against a faulty LLM server: failures and fallbacks are counted per strategy, a strategy
with them is not ranked (unless allowed), the run exits non-zero, and a refused key or a server
that is down stops the run at its first call.

Real sessions, the real SDKs, the local wire-format server of tests/fake_providers.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compactlab.cli.main import main
from compactlab.results.run_failures import INCOMPLETE_EXIT
from compactlab.runs.run_storage import run_compaction_rows
from tests.fake_behaviours import (
    context_overflow,
    echo_credentials,
    empty_answer,
    fault_mix,
    rate_limited,
    server_error,
    truncated_body,
)
from tests.fake_providers import FakeProvider, serve
from tests.llm.support import KEY_ENV, llm_run_config


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-run-faults")


@pytest.fixture
def server() -> FakeProvider:
    with serve() as state:
        yield state


def _bad_rows(out: Path) -> tuple[int, int]:
    rows = run_compaction_rows(out)
    mine = [r for r in rows if r["setting"] == "summarize-llm"]
    return sum(1 for r in mine if r["failed"]), sum(1 for r in mine if not r["failed"] and "[fell back]" in r["note"])


def test_fallbacks_are_counted_and_the_strategy_is_not_ranked(server: FakeProvider, tmp_path: Path, capsys) -> None:
    server.otherwise = empty_answer  # every summary call fails: summarize falls back to truncate each time
    out = tmp_path / "run"
    assert main(["run", "--config", str(llm_run_config(tmp_path, server.openai_base_url)), "--out", str(out)]) == INCOMPLETE_EXIT
    captured = capsys.readouterr()
    failed, fell_back = _bad_rows(out)
    assert fell_back > 0 and failed == 0
    summary = json.loads((out / "summary.json").read_text())
    [record] = summary["failures"]
    assert (record["setting"], record["fell_back"], record["failed"], record["ranked"]) == ("summarize-llm", fell_back, 0, False)
    assert summary["complete"] is False
    assert [row["setting"] for row in summary["leaderboard"]] == ["truncate"]  # marked, and not ranked
    assert f"summarize-llm: 0 of {record['attempts']} compactions failed, {fell_back} fell back" in captured.out
    assert "NOT RANKED" in captured.out and "results incomplete: summarize-llm" in captured.err
    assert list((tmp_path / "cache").rglob("*.json")) == []  # no empty answer was recorded
    report = (out / "report.html").read_text()
    assert "summarize-llm" in report and "fell back" in report


def test_a_share_of_failures_can_be_allowed(server: FakeProvider, tmp_path: Path, capsys) -> None:
    server.otherwise = empty_answer
    out = tmp_path / "run"
    config = llm_run_config(tmp_path, server.openai_base_url, extra="max_failed_share = 1.0")
    assert main(["run", "--config", str(config), "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] is True and summary["failures"][0]["ranked"] is True
    assert {row["setting"] for row in summary["leaderboard"]} == {"summarize-llm", "truncate"}
    assert "ranked (max_failed_share = 1)" in capsys.readouterr().out


def test_a_mix_of_faults_finishes_and_every_bad_compaction_is_counted(server: FakeProvider, tmp_path: Path) -> None:
    server.otherwise = fault_mix(
        16,
        {
            lambda: rate_limited(retry_after_ms="10"): 0.15,
            lambda: server_error(500): 0.15,
            context_overflow: 0.05,
            empty_answer: 0.10,
            truncated_body: 0.05,
        },
    )
    out = tmp_path / "run"
    code = main(["run", "--config", str(llm_run_config(tmp_path, server.openai_base_url)), "--out", str(out)])
    failed, fell_back = _bad_rows(out)
    summary = json.loads((out / "summary.json").read_text())  # the run finished: no truncated body stopped it
    counted = {r["setting"]: r for r in summary["failures"]}
    if failed + fell_back:
        assert code == INCOMPLETE_EXIT
        assert (counted["summarize-llm"]["failed"], counted["summarize-llm"]["fell_back"]) == (failed, fell_back)
    else:
        assert code == 0 and not counted
    assert "truncate" not in counted
    for path in (tmp_path / "cache").rglob("*.json"):
        assert json.loads(path.read_text())["response"]["text"].strip()


def test_a_refused_key_stops_the_run_at_the_first_call(server: FakeProvider, tmp_path: Path, capsys) -> None:
    server.otherwise = echo_credentials
    out = tmp_path / "run"
    # One call at a time, so that "stops at the first call" is a count: with several in flight, calls sent
    # before the refusal came back are legitimate, and how many there are depends on the machine's load
    # (tests/llm/test_faults.py pins that case: the calls in flight are cancelled, none is sent twice).
    config = llm_run_config(tmp_path, server.openai_base_url)
    config.write_text(config.read_text() + "max_in_flight = 1\n")  # (the [summarizer] table is the file's last)
    assert main(["run", "--config", str(config), "--out", str(out)]) == 2
    assert server.count() == 1
    err = capsys.readouterr().err
    assert "HTTP 401" in err and "refused the credentials" in err and "--resume" in err
    assert not (out / "summary.json").exists()


def test_a_server_that_is_down_stops_the_run(tmp_path: Path, capsys) -> None:
    with serve() as gone:
        pass  # nothing listens on its port any more
    out = tmp_path / "run"
    assert main(["run", "--config", str(llm_run_config(tmp_path, gone.openai_base_url)), "--out", str(out)]) == 2
    assert "cannot reach" in capsys.readouterr().err
    assert not (out / "summary.json").exists()
