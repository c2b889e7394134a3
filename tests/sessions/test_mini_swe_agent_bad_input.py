"""The mini-swe-agent importer on damaged trajectories: values of the wrong type (each one named in the
error, skipped with --lenient), usage that costs a message only its call, a tool call whose loss
orphans its result, and a real recorded response without its usage.

The documents are test_import_mini_swe_agent.py's: a minimal v2, a Responses-API v2, the modelled
real v1 and a real v2 trajectory from the shared set.
"""

from __future__ import annotations

import copy
import json

import pytest

from compactlab.sessions.source import SessionError
from tests.sessions.test_import_mini_swe_agent import (
    SAMPLES,
    V1_FIXTURE,
    V2_DIR,
    load,
    minimal_v2,
    needs_shared,
    responses_api_v2,
    write,
)


@pytest.mark.parametrize(
    ("mutate", "where"),
    [
        (lambda d: d.__setitem__("messages", {"a": 1}), "messages: expected a list"),
        (lambda d: d["messages"].__setitem__(1, 42), "messages[1]: expected a message object"),
        (lambda d: d["messages"][1].__setitem__("role", "robot"), "messages[1].role: unknown role"),
        (lambda d: d["messages"][2].__setitem__("tool_calls", "ls"), "messages[2].tool_calls: expected a list"),
        (lambda d: d["messages"][3].__setitem__("tool_call_id", 5), "messages[3].tool_call_id: expected a string"),
        (
            lambda d: d["messages"][2]["extra"]["response"]["usage"].__setitem__("prompt_tokens", "120"),
            "messages[2].extra.response.usage.prompt_tokens: expected a non-negative integer",
        ),
        (lambda d: d["messages"][2]["extra"].__setitem__("cost", "cheap"), "messages[2].extra.cost: expected a number"),
    ],
)
def test_wrong_types_strict_raises_lenient_skips(tmp_path, mutate, where):
    doc = minimal_v2()
    mutate(doc)
    path = write(tmp_path, doc)
    with pytest.raises(SessionError) as err:
        load(path)
    assert where in str(err.value) and str(path) in str(err.value)
    session = load(path, lenient=True)
    assert session.skipped and session.skipped[0].reason.startswith(where.split(":")[0])


def test_bad_usage_keeps_the_message_but_not_its_call(tmp_path):
    doc = minimal_v2()
    doc["messages"][2]["extra"]["response"]["usage"]["completion_tokens"] = True
    session = load(write(tmp_path, doc), lenient=True)
    assert len(session.skipped) == 1 and session.calls == []
    assert [m.role for m in session.messages] == ["system", "user", "assistant", "tool"]  # result still pairs


def test_a_skipped_tool_call_orphans_its_result(tmp_path):
    doc = minimal_v2()
    doc["messages"][2]["tool_calls"] = [{"id": 3}]
    session = load(write(tmp_path, doc), lenient=True)
    reasons = [s.reason for s in session.skipped]
    assert reasons[0].startswith("messages[2].tool_calls[0]") and "orphan tool result" in reasons[1]
    assert [m.role for m in session.messages] == ["system", "user"]


@pytest.mark.parametrize("make", [minimal_v2, responses_api_v2, lambda: json.loads(V1_FIXTURE.read_text())])
def test_no_wrong_type_anywhere_escapes_as_a_raw_exception(tmp_path, make):
    """Replace every value of a trajectory, one at a time, by values of each wrong JSON type."""
    base = make()
    if base["messages"][2].get("role") == "assistant":
        base["messages"][2]["reasoning_content"] = "hm"
    base["messages"] = base["messages"][:6]

    def paths(node, prefix=()):
        yield prefix
        children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, child in children:
            yield from paths(child, (*prefix, key))

    for path in list(paths(base))[1:]:
        for bad in (None, 7, -1, "x", [], {}, [1], {"x": 1}, True):
            doc = copy.deepcopy(base)
            node = doc
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = bad
            file = write(tmp_path, doc)
            for lenient in (False, True):
                try:
                    load(file, lenient)
                except SessionError:
                    assert not lenient, (path, bad)


@needs_shared
def test_a_recorded_response_without_usage_is_reported_not_dropped(tmp_path):
    # Every real recorded response holds its usage: one without is damage that costs the call its
    # size, an error naming the record, or with --lenient a counted skip (the message is kept).
    doc = json.loads((V2_DIR / SAMPLES[0]).read_text())
    at = next(i for i, m in enumerate(doc["messages"]) if (m.get("extra") or {}).get("response"))
    del doc["messages"][at]["extra"]["response"]["usage"]
    path = write(tmp_path, doc, SAMPLES[0])
    with pytest.raises(SessionError, match=rf"messages\[{at}\].*usage: missing"):
        load(path)
    lenient = load(path, lenient=True)
    original = load(V2_DIR / SAMPLES[0])
    assert len(lenient.skipped) == 1 and len(lenient.calls) == len(original.calls) - 1
    assert len(lenient.messages) == len(original.messages)
