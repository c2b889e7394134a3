"""The mini-swe-agent importer against real trajectories (v2.x) and a modelled real v1.x trajectory.

Every number checked here is also computed independently, straight from the raw JSON, and compared with
MANIFEST.md, which was written by whoever collected the files. Damaged trajectories (wrong types, bad
usage, a lost tool call) are test_mini_swe_agent_bad_input.py's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compactlab.sessions.importers.mini_swe_agent import MiniSweAgentImporter
from compactlab.sessions.model import TextPart, ThinkingPart, ToolCallPart, ToolResultPart
from compactlab.sessions.source import RecordIssues, Source
from tests.conftest import SHARED

V2_DIR = SHARED / "mini-swe-agent-pr816"
V1_FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "mini_swe_agent" / "v1_modelled_django__django-11099.traj.json"
ALL_V2 = sorted(V2_DIR.glob("*.traj.json"))
needs_shared = pytest.mark.skipif(not ALL_V2, reason=f"shared sessions not found at {V2_DIR}")

# A spread of real files: deepseek-chat, a deepseek-reasoner run that ended in an API error, one with a
# rejected (FormatError) tool call, the largest prompt in the set, and the "lite" config.
SAMPLES = [
    "deepseek_chat_dev_pvlib__pvlib-python-1707_pvlib__pvlib-python-1707.traj.json",
    "deepseek_reasoner_dev_sqlfluff__sqlfluff-1517_sqlfluff__sqlfluff-1517.traj.json",
    "deepseek_reasoner_dev_marshmallow-code__marshmallow-1343_marshmallow-code__marshmallow-1343.traj.json",
    "deepseek_chat_test_1-100_django__django-13964_django__django-13964.traj.json",
    "deepseek_chat_dev_rerun_pylint-dev__astroid-1333_pylint-dev__astroid-1333.traj.json",
    "deepseek_lite_dev_noparallel_pvlib__pvlib-python-1606_pvlib__pvlib-python-1606.traj.json",
]


def load(path: Path, lenient: bool = False):
    source = Source(path)
    [session] = MiniSweAgentImporter().load(source, RecordIssues(source.path, lenient))
    return session


def manifest() -> dict[str, tuple[int, int]]:
    """file name -> (LLM calls, max prompt tokens) as MANIFEST.md states them."""
    rows = {}
    for line in (SHARED / "MANIFEST.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0].startswith("mini-swe-agent-pr816/"):
            rows[cells[0].split("/", 1)[1]] = (int(cells[7]), int(cells[8]))
    return rows


def raw_usages(doc: dict) -> list[dict]:
    """Independent count: the usage of every assistant message that recorded a provider response."""
    return [
        m["extra"]["response"]["usage"]
        for m in doc["messages"]
        if m.get("role") == "assistant" and (m.get("extra") or {}).get("response", {}).get("usage")
    ]


@needs_shared
@pytest.mark.parametrize("name", SAMPLES)
def test_calls_and_max_prompt_match_manifest_and_raw_json(name):
    doc = json.loads((V2_DIR / name).read_text())
    session = load(V2_DIR / name)
    usages = raw_usages(doc)
    expected_calls, expected_max = manifest()[name]
    assert len(session.calls) == len(usages) == expected_calls
    assert session.max_prompt_tokens == max(u["prompt_tokens"] for u in usages) == expected_max
    # Per call: the canonical prompt is the provider's prompt_tokens; the cache split is DeepSeek's.
    for call, usage in zip(session.calls, usages):
        assert call.prompt_tokens == usage["prompt_tokens"]
        assert call.cache_read_tokens == usage["prompt_cache_hit_tokens"] == usage["prompt_tokens_details"]["cached_tokens"]
        assert call.input_tokens == usage["prompt_cache_miss_tokens"]
        assert call.output_tokens == usage["completion_tokens"]
    assert session.skipped == ()
    assert session.ignored == (("exit", 1),)


@needs_shared
def test_every_file_matches_manifest():
    rows = manifest()
    assert len(rows) == len(ALL_V2) == 98
    without_response = 0
    for path in ALL_V2:
        session = load(path)
        assert (len(session.calls), session.max_prompt_tokens) == rows[path.name], path.name
        assistants = [m for m in session.messages if m.role == "assistant"]
        without_response += sum(1 for m in assistants if m.call is None)
    # All 9208 assistant messages in this set recorded their response: none is left without a call.
    assert without_response == 0


@needs_shared
def test_api_calls_counts_failed_and_rejected_queries_too():
    """info.model_stats.api_calls vs our count.

    v2's DefaultAgent.query() does `self.n_calls += 1` before `model.query()`, so a query that raised (the
    two deepseek-reasoner runs that ended in InternalServerError) or whose response was rejected because its
    tool call did not parse (FormatError: a `user` message is added, the response is not) is counted in
    api_calls but leaves no assistant message and no usage. Their cost is not in instance_cost either.
    94 files agree exactly; 4 differ by one for exactly these reasons.
    """
    differing = 0
    for path in ALL_V2:
        doc = json.loads(path.read_text())
        calls = len(load(path).calls)
        format_errors = sum(1 for m in doc["messages"] if (m.get("extra") or {}).get("interrupt_type") == "FormatError")
        crashed = int("exception_str" in doc["info"])
        assert doc["info"]["model_stats"]["api_calls"] == calls + format_errors + crashed, path.name
        differing += doc["info"]["model_stats"]["api_calls"] != calls
    assert differing == 4


@needs_shared
def test_cost_sums_to_instance_cost():
    for path in ALL_V2:
        doc = json.loads(path.read_text())
        session = load(path)
        assert all(c.cost_usd is not None for c in session.calls)
        assert sum(c.cost_usd for c in session.calls) == pytest.approx(doc["info"]["model_stats"]["instance_cost"], abs=1e-12)


@needs_shared
def test_messages_list_is_what_each_call_saw():
    """v2 sends `messages` (minus `extra`) as is, so every prompt holds the previous prompt, the previous
    output (reasoning included: DeepSeek's reasoning_content stays on the message) and the new results."""
    for path in ALL_V2:
        calls = load(path).calls
        for before, after in zip(calls, calls[1:]):
            assert after.prompt_tokens >= before.prompt_tokens + before.output_tokens + 30, path.name


@needs_shared
def test_structure_of_a_v2_trajectory():
    name = SAMPLES[2]  # deepseek-reasoner, Submitted
    doc = json.loads((V2_DIR / name).read_text())
    session = load(V2_DIR / name)
    assert session.id == name.removesuffix(".traj.json")  # the file name: reruns share an instance id
    assert session.source_format == "mini-swe-agent"
    assert session.models == ("deepseek-reasoner",)
    assert session.context_window is None
    raw = [m for m in doc["messages"] if m["role"] != "exit"]
    assert [m.role for m in session.messages] == [m["role"] for m in raw]
    # Every assistant message recorded its response here, so every one carries a call (none without).
    assert sum(1 for m in raw if m["role"] == "assistant" and "response" not in m.get("extra", {})) == 0
    assert all(m.call is not None for m in session.messages if m.role == "assistant")
    first = session.messages[2]
    raw_first = doc["messages"][2]
    assert isinstance(first.parts[0], ThinkingPart) and first.parts[0].text == raw_first["reasoning_content"]
    [tool_call] = [p for p in first.parts if isinstance(p, ToolCallPart)]
    assert (tool_call.id, tool_call.name) == (raw_first["tool_calls"][0]["id"], "bash")
    assert json.loads(tool_call.arguments) == json.loads(raw_first["tool_calls"][0]["function"]["arguments"])
    assert first.call.request_id == raw_first["extra"]["response"]["id"]
    assert first.call.cost_usd == raw_first["extra"]["cost"]
    result = session.messages[3]
    assert result.role == "tool" and result.parts == (
        ToolResultPart(call_id=tool_call.id, content=doc["messages"][3]["content"]),
    )
    thinking = sum(1 for m in raw if m["role"] == "assistant" and m.get("reasoning_content"))
    assert sum(isinstance(p, ThinkingPart) for m in session.messages for p in m.parts) == thinking


@needs_shared
def test_rejected_tool_call_leaves_a_user_message():
    session = load(V2_DIR / SAMPLES[3])
    notes = [m for m in session.messages if m.role == "user" and "Tool call error" in m.text()]
    assert len(notes) == 1
    # The DeepSeek sample predates keeping the rejected response, so nothing is counted for it.
    assert session.ignored == (("exit", 1),)


def test_v1_modelled_trajectory():
    """Real v1.15.0 layout and numbers (see fixtures/mini_swe_agent/README.md); counted by hand: 21 calls,
    largest prompt 14936, OpenRouter's usage.cost summing to instance_cost; api_calls is 21 (v1 counts a
    call only after its response arrived)."""
    doc = json.loads(V1_FIXTURE.read_text())
    assert MiniSweAgentImporter().match(Source(V1_FIXTURE)) is None
    session = load(V1_FIXTURE)
    calls = session.calls
    assert len(calls) == len(raw_usages(doc)) == doc["info"]["model_stats"]["api_calls"] == 21
    assert session.max_prompt_tokens == max(u["prompt_tokens"] for u in raw_usages(doc)) == 14936
    assert sum(c.cost_usd for c in calls) == pytest.approx(doc["info"]["model_stats"]["instance_cost"], abs=1e-12)
    assert (calls[5].input_tokens, calls[5].cache_read_tokens, calls[5].output_tokens) == (2366 - 1985, 1985, 145)
    assert calls[0].request_id == "gen-1763509284-fm9zzurYMD6naM0jtJbD"
    assert session.models == ("google/gemini-3-pro-preview",)
    assert session.id == "v1_modelled_django__django-11099"
    # system, task, then 21 x (assistant, output) minus the last output slot; the closing message that holds
    # the submission was never sent to a model.
    # The outputs reached the model as user messages; to strategies they are the results of the actions.
    assert [m.role for m in session.messages] == ["system", "user"] + ["assistant", "tool"] * 20 + ["assistant"]
    assert [m.sent_as for m in session.messages] == [None, None] + [None, "user"] * 20 + [None]
    assert session.ignored == (("exit", 1),)
    # v1 actions are bash blocks in the text: each reply's is read from it, never sent as a call.
    calls = [[p for p in m.parts if isinstance(p, ToolCallPart)] for m in session.messages if m.role == "assistant"]
    assert all(len(c) == 1 and c[0].from_text and c[0].name == "bash" for c in calls)
    assert json.loads(calls[0][0].arguments)["command"] in session.messages[2].text()
    # OpenRouter's `reasoning` becomes thinking.
    thinking = [m for m in session.messages if isinstance(m.parts[0], ThinkingPart)]
    assert len(thinking) == 2 and isinstance(thinking[0].parts[1], TextPart)


def test_v1_run_cut_off_keeps_its_last_message(tmp_path):
    doc = json.loads(V1_FIXTURE.read_text())
    doc["info"]["exit_status"] = None  # v1 saves after every step; only the end sets exit_status
    path = tmp_path / "running.traj.json"
    path.write_text(json.dumps(doc))
    session = load(path)
    # Its last message is the output of the last action, as every other output.
    assert session.ignored == () and session.messages[-1].sent_as == "user"
    assert session.messages[-1].role == "tool" and session.messages[-2].role == "assistant"


def minimal_v2() -> dict:
    usage = {"prompt_tokens": 120, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 100}}
    return {
        "trajectory_format": "mini-swe-agent-1.1",
        "info": {"mini_version": "2.2.7", "config": {"model": {"model_name": "openai/gpt-x"}}},
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": [{"type": "text", "text": "task"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}],
                "extra": {"response": {"id": "r1", "usage": usage}, "cost": 0.5},
            },
            {"role": "tool", "tool_call_id": "c1", "content": "out", "extra": {"exception_info": "timed out"}},
            {"role": "exit", "content": "", "extra": {"exit_status": "Submitted", "submission": ""}},
        ],
    }


def write(tmp_path: Path, doc: object, name: str = "run-7.traj.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def test_minimal_v2_details(tmp_path):
    session = load(write(tmp_path, minimal_v2()))
    assert session.id == "run-7"  # no instance_id: the file stem
    assistant = session.messages[2]
    assert assistant.parts == (ToolCallPart(id="c1", name="bash", arguments='{"command": "ls"}'),)
    # No model in the response: the configured model name stands in.
    assert (assistant.call.model, assistant.call.input_tokens, assistant.call.cache_read_tokens) == ("openai/gpt-x", 20, 100)
    assert session.messages[3].parts[0].is_error  # exception_info (a timeout), not a nonzero exit code
    assert session.messages[1].parts == (TextPart("task"),)


def responses_api_v2() -> dict:
    """v2 Responses-API classes store the raw response object; results are function_call_output items
    (layout from models/litellm_response_model.py and utils/actions_toolcall_response.py)."""
    doc = minimal_v2()
    doc["messages"][2:4] = [
        {
            "object": "response",
            "id": "resp_1",
            "model": "gpt-5-mini",
            "output": [
                {"type": "reasoning", "summary": [{"type": "summary_text", "text": "look first"}]},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Listing."}]},
                {"type": "function_call", "call_id": "call_1", "name": "bash", "arguments": '{"command": "pwd"}'},
            ],
            "usage": {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 25}, "output_tokens": 40},
            "extra": {"cost": 0.03},
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "/app\n", "extra": {"returncode": 0}},
    ]
    return doc


def test_responses_api_layout(tmp_path):
    session = load(write(tmp_path, responses_api_v2()))
    assistant, result = session.messages[2], session.messages[3]
    assert [type(p) for p in assistant.parts] == [ThinkingPart, TextPart, ToolCallPart]
    assert (assistant.call.prompt_tokens, assistant.call.cache_read_tokens, assistant.call.cost_usd) == (100, 25, 0.03)
    assert result.parts == (ToolResultPart(call_id="call_1", content="/app\n"),)


def test_rejected_response_is_counted_not_replayed(tmp_path):
    """Newer v2 keeps a rejected response on its FormatError message: billed, but never in the history."""
    doc = minimal_v2()
    usage = {"prompt_tokens": 130, "completion_tokens": 9}
    note = {
        "role": "user",
        "content": "No tool calls found",
        "extra": {"interrupt_type": "FormatError", "response": {"usage": usage}},
    }
    doc["messages"].insert(4, note)
    session = load(write(tmp_path, doc))
    assert session.ignored == (("exit", 1), ("rejected_response_call", 1))
    assert len(session.calls) == 1 and session.messages[-1].text() == "No tool calls found"


def test_match_is_specific(tmp_path):
    importer = MiniSweAgentImporter()
    assert importer.match(Source(write(tmp_path, minimal_v2()))) is None
    no_marker = {"messages": [{"role": "user", "content": "hi"}], "info": {}}
    assert "no trajectory_format/info.mini_version" in importer.match(Source(write(tmp_path, no_marker, "a.json")))
    only_version = {"messages": [], "info": {"mini_version": "1.0.0"}}  # early v1 files lack trajectory_format
    assert importer.match(Source(write(tmp_path, only_version, "b.json"))) is None
    assert "messages" in importer.match(Source(write(tmp_path, {"trajectory_format": "mini-swe-agent-1"}, "c.json")))
    jsonl = tmp_path / "d.jsonl"
    jsonl.write_text('{"type": "user"}\n{"type": "assistant"}\n')
    assert importer.match(Source(jsonl)) == "not a single JSON document"


@needs_shared
def test_through_load_file():
    from compactlab.sessions.importers import load_file

    path = V2_DIR / SAMPLES[0]
    [detected] = load_file(path)
    [named] = load_file(path, format="mini-swe-agent")
    assert detected.source_format == named.source_format == "mini-swe-agent"
    assert len(detected.calls) == manifest()[SAMPLES[0]][0]
    [v1] = load_file(V1_FIXTURE)
    assert v1.source_format == "mini-swe-agent" and len(v1.calls) == 21
