"""The SWE-agent importer against real trajectories from SWE-agent's own test data (tests/fixtures/swe_agent).

The counts compared are taken straight from the raw JSON here, not through the importer.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compactlab.sessions.importers import detect, load_file
from compactlab.sessions.model import ToolCallPart, ToolResultPart
from compactlab.sessions.source import SessionError, Source

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "swe_agent"
FILES = sorted(FIXTURES.glob("*.traj"))


def test_the_fixtures_are_there() -> None:
    assert [path.name for path in FILES] == ["6e44b9__sweagenttestrepo-1c2844.traj", "pydicom__pydicom-1458.traj"]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_every_model_reply_is_one_assistant_message_as_the_run_counted_them(path: Path) -> None:
    raw = json.loads(path.read_text())
    [session] = load_file(path)
    assert detect(Source(path)).name == "swe-agent" and session.source_format == "swe-agent"
    replies = [m for m in session.messages if m.role == "assistant" and not m.instruction]
    # Independent counts: the run's own api_calls and its trajectory steps.
    assert len(replies) == raw["info"]["model_stats"]["api_calls"] == len(raw["trajectory"])
    # SWE-agent records no usage per call: no call is invented from the run's totals.
    assert session.calls == [] and session.compactions == ()
    demos = sum(1 for item in raw["history"] if item.get("is_demo"))
    assert sum(1 for m in session.messages if m.instruction) == demos
    assert session.messages[0].role == "system" and session.messages[0].text() == raw["history"][0]["content"]


def test_function_calls_pair_with_their_results_and_the_closing_step_is_read_from_the_trajectory() -> None:
    path = FIXTURES / "6e44b9__sweagenttestrepo-1c2844.traj"
    raw = json.loads(path.read_text())
    [session] = load_file(path)
    calls = [p for m in session.messages for p in m.parts if isinstance(p, ToolCallPart)]
    results = [p for m in session.messages for p in m.parts if isinstance(p, ToolResultPart)]
    recorded = [c["id"] for item in raw["history"] for c in item.get("tool_calls") or []]
    assert [c.id for c in calls] == recorded == [r.call_id for r in results]
    assert [c.name for c in calls] == ["find_file", "open", "edit", "bash"]
    assert session.messages[-1].text() == raw["trajectory"][-1]["response"]
    assert dict(session.ignored) == {"final_observation": 1}


def test_a_damaged_history_item_names_its_place_or_is_counted(tmp_path: Path) -> None:
    raw = json.loads((FIXTURES / "pydicom__pydicom-1458.traj").read_text())
    raw["history"][4]["role"] = "narrator"
    damaged = tmp_path / "damaged.traj"
    damaged.write_text(json.dumps(raw))
    with pytest.raises(SessionError, match=r"history\[4\]\.role: unknown role 'narrator'"):
        load_file(damaged)
    [session] = load_file(damaged, lenient=True)
    assert len(session.skipped) == 1 and len(session.messages) == len(raw["history"]) - 1
