"""Each recorded call keeps its record's time and its cache write's lifetime split, read from the raw
lines independently of the importers (the replay's prompt-cache lifetime reads them)."""

from __future__ import annotations

import gzip
import json
from datetime import datetime
from pathlib import Path

import pytest

from compactlab.sessions.importers.importer import timestamp_seconds
from compactlab.sessions.loading import load_inputs

DATASETS = Path(__file__).resolve().parents[2] / "datasets"


def _lines(path: Path) -> list[dict]:
    opened = gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else path.open(encoding="utf-8")
    records = []
    with opened as lines:
        for line in lines:
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a damaged line (the datasets keep a few): not a record
    return records


def _iso(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def test_claude_code_calls_carry_their_record_time_and_one_hour_writes():
    path = DATASETS / "claude-code-log" / "sessions"
    files = sorted(path.glob("*.jsonl*"))
    found = 0
    for file in files:
        # One call per API request (its blocks are written as several lines): the first line's time.
        expected: dict[str, tuple[float, int]] = {}
        for record in _lines(file):
            usage = (record.get("message") or {}).get("usage")
            if record.get("type") == "assistant" and usage and record.get("requestId") not in expected:
                one_hour = (usage.get("cache_creation") or {}).get("ephemeral_1h_input_tokens") or 0
                expected[record["requestId"]] = (_iso(record["timestamp"]), one_hour)
        for session in load_inputs([file]).sessions:
            for call in (m.call for m in session.messages if m.call is not None):
                found += 1
                assert (call.timestamp, call.cache_write_1h_tokens) == pytest.approx(expected[call.request_id])
    assert found > 500  # the dataset's calls, matched by their usage


@pytest.mark.parametrize("dataset", ["pi-sessions", "codex-rollouts"])
def test_every_call_of_pi_and_codex_has_a_time_in_its_session_span(dataset):
    for file in sorted((DATASETS / dataset / "sessions").rglob("*.jsonl*")):
        times = [_iso(t) for t in (r.get("timestamp") for r in _lines(file)) if isinstance(t, str)]
        for session in load_inputs([file]).sessions:
            calls = [m.call for m in session.messages if m.call is not None]
            assert calls and all(c.timestamp is not None for c in calls)
            stamps = [c.timestamp for c in calls]
            assert min(times) - 1 <= min(stamps) and max(stamps) <= max(times) + 1
            assert stamps == sorted(stamps) or dataset == "pi-sessions"  # pi's message times are the client's


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("2025-12-24T11:44:40.534Z", 1766576680.534),
        ("2025-12-24T11:44:40.534", 1766576680.534),  # no zone: UTC
        (1766576680534, 1766576680.534),  # milliseconds (pi)
        (1766576680, 1766576680.0),
        ("yesterday", None),
        (True, None),
        (float("nan"), None),
        (None, None),
    ],
)
def test_timestamp_seconds(value, seconds):
    assert timestamp_seconds(value) == (pytest.approx(seconds) if seconds is not None else None)
