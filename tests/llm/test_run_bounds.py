"""Issue 45's LLM faults through `compactlab run` on real bundled sessions: summaries cut off at their
output budget are counted failures (in summary.json, the exit status, the report), and an
out-of-quota 429 stops the run at its first request.

The real SDKs against the local wire-format server of tests/fake_providers.py.
"""

from __future__ import annotations

import json
from pathlib import Path

from compactlab.cli.main import main
from compactlab.results.run_failures import INCOMPLETE_EXIT
from compactlab.runs.run_storage import run_compaction_rows
from tests.fake_behaviours import length_stop, quota_exceeded
from tests.fake_providers import FakeProvider
from tests.llm.support import llm_run_config


def _run(server: FakeProvider, tmp_path: Path, out: Path) -> int:
    """`compactlab run` of summarize on the LLM at `server`, one call in flight at a time (so the
    requests counted are the run's, in order)."""
    config = llm_run_config(tmp_path, server.openai_base_url, summarizer_extra="max_in_flight = 1")
    return main(["run", "--config", str(config), "--out", str(out)])


def test_summaries_cut_off_at_their_budget_are_counted_failures(server: FakeProvider, tmp_path: Path, capsys) -> None:
    server.otherwise = length_stop()
    out = tmp_path / "run"
    assert _run(server, tmp_path, out) == INCOMPLETE_EXIT
    mine = [r for r in run_compaction_rows(out) if r["setting"] == "summarize-llm"]
    fell_back = sum(1 for r in mine if "[fell back]" in r["note"])
    assert mine and fell_back == len(mine)  # no cut-off answer stood in for a summary
    summary = json.loads((out / "summary.json").read_text())
    [record] = summary["failures"]
    assert (record["setting"], record["fell_back"], record["ranked"]) == ("summarize-llm", fell_back, False)
    assert summary["complete"] is False
    assert "cut off at its output budget" in " ".join(r["note"] for r in mine)
    assert list((tmp_path / "cache").rglob("*.json")) == []  # nothing recorded
    assert "results incomplete: summarize-llm" in capsys.readouterr().err


def test_an_out_of_quota_429_stops_the_run_at_its_first_request(server: FakeProvider, tmp_path: Path, capsys) -> None:
    server.otherwise = quota_exceeded()
    out = tmp_path / "run"
    assert _run(server, tmp_path, out) == 2
    assert server.count() == 1  # not retried by the SDK (max_retries = 1), nor by the gate, nor by a later call
    err = capsys.readouterr().err
    assert "HTTP 429" in err and "quota is used up" in err and "--resume" in err
