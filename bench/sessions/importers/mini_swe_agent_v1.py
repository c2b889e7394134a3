"""What mini-swe-agent v1.x trajectories need besides the shared reading (importers/mini_swe_agent.py).

How a v1 run is told apart (`trajectory_format` "mini-swe-agent-1", or none with `info.mini_version` "1.*"),
the closing message v1 appends to a finished run (never sent to a model), and its observations:
v1 parses one action from each reply with `info.config.agent.action_regex` and answers with a
`user` message (the command's output, a timeout, or a format error when the reply held no or several actions).
To strategies those answers are tool output, as v2's `tool` messages are: each v1 reply gets a `bash` tool call
read from its text (`from_text`, `{"command": ...}` as v2's, or `{"actions": [...]}` when the reply did not hold
exactly one action), and the `user` message right after it becomes that call's tool result (`sent_as="user"`,
content the message's text verbatim; `is_error` unless it is a command's `<returncode>` output).
"""

from __future__ import annotations

import json
import re
from dataclasses import replace

from compactlab.sessions.model import Message, TextPart, ToolCallPart, ToolResultPart
from compactlab.sessions.source import RecordIssues

V1_ACTION_REGEX = r"```bash\s*\n(.*?)\n```"  # v1's default (config/default.yaml `action_regex`)


def is_v1(doc: dict, info: dict) -> bool:
    fmt, version = doc.get("trajectory_format"), info.get("mini_version")
    return fmt == "mini-swe-agent-1" or (fmt is None and isinstance(version, str) and version.startswith("1."))


def ends_with_v1_exit(info: dict, raw_messages: list) -> bool:
    """v1 ends a run by appending `user: str(exception)`: the submission, or "" after LimitsExceeded.

    v1 saves after every step with exit_status None until the end, so only a finished run's closing message
    (content == info.submission) is dropped; a run cut off mid-way keeps its last message.
    """
    last = raw_messages[-1] if raw_messages else None
    finished = isinstance(info.get("exit_status"), str) and bool(info["exit_status"])
    return finished and isinstance(last, dict) and last.get("role") == "user" and (last.get("content") == info.get("submission"))


def action_regex(info: dict, issues: RecordIssues) -> re.Pattern:
    """The regular expression the run parsed actions with (recorded in its config), else v1's default."""
    agent = info.get("config", {}).get("agent") if isinstance(info.get("config"), dict) else None
    pattern = agent.get("action_regex") if isinstance(agent, dict) else None
    if pattern is None:
        return re.compile(V1_ACTION_REGEX, re.DOTALL)
    try:
        return re.compile(pattern, re.DOTALL)  # v1 parses with re.findall(action_regex, content, re.DOTALL)
    except (re.error, TypeError) as exc:
        issues.report(None, f"info.config.agent.action_regex: not a regular expression ({exc}); v1's default used")
        return re.compile(V1_ACTION_REGEX, re.DOTALL)


def v1_observations(messages: list[Message], action_regex: re.Pattern) -> list[Message]:
    """v1 replies with the action read from their text, and the `user` answers to them as tool results."""
    out: list[Message] = []
    for message in messages:
        previous = out[-1] if out else None
        if message.role == "assistant":
            text = "\n".join(p.text for p in message.parts if isinstance(p, TextPart))
            actions = [a.strip() for a in action_regex.findall(text)]
            arguments = {"command": actions[0]} if len(actions) == 1 else {"actions": actions}
            call = ToolCallPart(f"{message.source_id}:bash", "bash", json.dumps(arguments, ensure_ascii=False), from_text=True)
            message = replace(message, parts=(*message.parts, call))
        elif message.role == "user" and previous is not None and previous.role == "assistant":
            answer = message.parts[0]  # v1 writes every message as one string: one text part
            if len(message.parts) == 1 and isinstance(answer, TextPart):
                failed = not answer.text.startswith("<returncode>")  # a timeout or a format error
                tool_call = previous.parts[-1]
                assert isinstance(tool_call, ToolCallPart), tool_call  # every assistant message here ends with its call
                result = ToolResultPart(tool_call.id, answer.text, is_error=failed)
                message = replace(message, role="tool", parts=(result,), sent_as="user")
        out.append(message)
    return out
