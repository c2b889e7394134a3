"""SWE-agent trajectories (`*.traj`): one JSON document per agent run.

Read from SWE-agent/SWE-agent (`sweagent/types.py` `HistoryItem`/`TrajectoryStep`/`AgentInfo`,
`sweagent/agent/agents.py`, the test trajectories under `tests/test_data/trajectories/`):

- `history`: the messages as the agent built them, `{role, content, agent, message_type}`; assistant
  items add `thought`, `action` and (function-calling configs) `tool_calls` in OpenAI's shape; tool
  results are `role: tool` items with `tool_call_ids`. Older configs write no `tool_calls`: the action
  is text in the reply and its output comes back as a `user` message, read as recorded.
  `is_demo` items are the demonstration shown with the task: sent to the model, so kept, as instructions.
- `trajectory`: one step per model reply ({action, observation, response, thought, state, ...}). The
  step that ends the run (`submit`) is written to `trajectory` but not to `history`: a step past the
  replies of `history` becomes an assistant message holding its `response`; its observation (the
  submitted patch) reaches no model and is counted in `Session.ignored` as ("final_observation", n).
- `info.model_stats`: the run's totals only (`tokens_sent`, `tokens_received`, `api_calls`,
  `instance_cost`). SWE-agent records no usage per call, so no message carries an `LLMCall`: the
  totals are not split into invented per-call figures. Calls the totals count beyond the replies in
  `history` (a reply requeried after a format error) are counted in `Session.ignored` as
  ("requeried_call", n).
"""

from __future__ import annotations

from compactlab.sessions.importers.importer import FormatFacts, check_tool_pairing
from compactlab.sessions.importers.mini_swe_agent import BadShape, openai_tool_calls
from compactlab.sessions.model import Message, Part, Role, Session, TextPart, ToolResultPart
from compactlab.sessions.source import RecordIssues, Source

_ROLES: dict[str, Role] = {"system": "system", "user": "user", "assistant": "assistant", "tool": "tool"}


# A history item of the wrong shape: the text is the path below `history[i]` and what is wrong (the
# `tool_calls` list is OpenAI's, read as mini-swe-agent v2's is).
_Bad = BadShape


def _type(value: object) -> str:
    return type(value).__name__ if value is not None else "null"


class SweAgentImporter:
    name = "swe-agent"
    description = "SWE-agent trajectory (*.traj): history messages, per-run model_stats"
    facts = FormatFacts()

    def match(self, source: Source) -> str | None:
        doc = source.document if source.is_single_document() else None
        for key in ("history", "trajectory"):
            if not (isinstance(doc, dict) and isinstance(doc.get(key), list)):
                return f"not a SWE-agent trajectory: no top-level `{key}` list"
        return None

    def load(self, source: Source, issues: RecordIssues) -> list[Session]:
        doc = source.document
        assert isinstance(doc, dict)  # match() checked it
        info = doc.get("info", {})
        if not isinstance(info, dict):
            issues.report(None, f"info: expected an object, got {_type(info)}")
            info = {}
        messages: list[Message] = []
        for i, raw in enumerate(doc["history"]):
            try:
                messages.append(_message(i, raw))
            except _Bad as exc:
                issues.report(None, f"history[{i}]{exc}")
        kept = check_tool_pairing(messages, issues)
        replies = sum(1 for m in kept if m.role == "assistant" and not m.instruction)
        ignored: dict[str, int] = {}
        steps = doc["trajectory"]
        for k in range(replies, len(steps)):
            step = steps[k]
            if not (isinstance(step, dict) and isinstance(step.get("response"), str)):
                issues.report(None, f"trajectory[{k}].response: expected a string, got {step!r:.60}")
                continue
            kept.append(Message(role="assistant", parts=(TextPart(step["response"]),), source_id=f"trajectory[{k}]"))
            ignored["final_observation"] = ignored.get("final_observation", 0) + 1
            replies += 1
        api_calls = _api_calls(info, issues)
        if api_calls is not None and api_calls > replies:
            ignored["requeried_call"] = api_calls - replies
        return [
            Session(
                id=source.path.name.removesuffix(".gz").removesuffix(".traj"),
                source_format=self.name,
                source_path=str(source.path),
                messages=tuple(kept),
                skipped=tuple(issues.skipped),
                ignored=tuple(sorted(ignored.items())),
                agent_version=info.get("swe_agent_version") if isinstance(info.get("swe_agent_version"), str) else None,
            )
        ]


def _api_calls(info: dict, issues: RecordIssues) -> int | None:
    stats = info.get("model_stats")
    if stats is None:
        return None
    calls = stats.get("api_calls") if isinstance(stats, dict) else None
    if isinstance(calls, bool) or not isinstance(calls, int) or calls < 0:
        issues.report(None, f"info.model_stats.api_calls: expected a non-negative integer, got {calls!r:.40}")
        return None
    return calls


def _message(i: int, raw: object) -> Message:
    if not isinstance(raw, dict):
        raise _Bad(f": expected a message object, got {_type(raw)}")
    role = raw.get("role")
    if not isinstance(role, str) or role not in _ROLES:
        raise _Bad(f".role: unknown role {role!r:.40}")
    text = _content(raw.get("content"))
    where = f"history[{i}]"
    demo = raw.get("is_demo") is True
    if role == "tool":
        ids = raw.get("tool_call_ids")
        if not (isinstance(ids, list) and len(ids) == 1 and isinstance(ids[0], str)):
            raise _Bad(f".tool_call_ids: expected a list of one call id, got {ids!r:.60}")
        return Message(role="tool", parts=(ToolResultPart(call_id=ids[0], content=text),), source_id=where)
    parts: list[Part] = [TextPart(text)]
    if role == "assistant":
        parts += openai_tool_calls(raw.get("tool_calls"))
    # A demonstration is shown to the model as a worked example, whatever role it is written under.
    return Message(role=_ROLES[role], parts=tuple(parts), source_id=where, instruction=demo)


def _content(content: object) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise _Bad(f".content: expected a string or a list of parts, got {_type(content)}")
    texts = []
    for k, item in enumerate(content):
        if not (isinstance(item, dict) and item.get("type") == "text" and isinstance(item.get("text"), str)):
            raise _Bad(f".content[{k}]: expected a text part, got {item!r:.60}")
        texts.append(item["text"])
    return "\n".join(texts)
