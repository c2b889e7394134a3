"""mini-swe-agent v1 observations as tool output, the task statement and Codex instructions kept
verbatim: on real sessions (bundled datasets and the shared collection)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from compactlab.contract import CompactionRequest, Context
from compactlab.runs.run_config import default_strategies
from compactlab.sessions.importers import load_file
from compactlab.sessions.importers.canonical import write_canonical
from compactlab.sessions.messages import is_instruction, is_summary, pinned_indexes, task_index
from compactlab.sessions.model import Message, Session, TextPart, ToolCallPart
from compactlab.strategies.masking import ObservationMasking
from compactlab.strategies.prune import PLACEHOLDER as PRUNED
from compactlab.strategies.prune import Prune
from compactlab.strategies.registry import get_strategy
from tests.conftest import bundled
from tests.strategy_sessions import counter

V1_HIGHEST = "mini-reasoning-high-res-api__sphinx-doc__sphinx-8548"  # peaks at 1.33x a 64k window
STRATEGIES = [c.strategy for c in default_strategies() if c.strategy != "recorded"]


def v1_files(shared: Path) -> list[Path]:
    return sorted((shared / "mini-swe-agent-v1").glob("*/*.traj.json"))


def original(message: Message) -> tuple[str, str]:
    """The role and text the model received, as the source recorded them."""
    if message.sent_as is not None:
        [result] = message.parts
        return message.sent_as, result.content
    return message.role, "\n".join(p.text for p in message.parts if isinstance(p, TextPart))


def test_every_v1_answer_is_the_tool_result_of_its_reply(shared: Path) -> None:
    files = v1_files(shared)
    assert len(files) == 67
    answers = 0
    for path in files:
        [session] = load_file(path)
        raw = json.loads(path.read_text())["messages"]
        messages = session.messages
        # Only the task statement is a user message; every later one is the answer to the reply before it.
        assert [i for i, m in enumerate(messages) if m.role == "user"] == [1], path
        for reply, answer in zip(messages, messages[1:]):
            if answer.role == "tool":
                [call] = [p for p in reply.parts if isinstance(p, ToolCallPart)]
                [result] = answer.parts
                assert call.from_text and result.call_id == call.id and answer.sent_as == "user"
                assert result.is_error == (not result.content.startswith("<returncode>"))
                answers += 1
        # Lossless: role and text as the model received them, in order (the closing submission was never sent).
        assert [original(m) for m in messages] == [(m["role"], m["content"]) for m in raw[: len(messages)]], path
    assert answers == 2035  # 1764 command outputs, 7 timeouts, 264 format errors


def test_v1_canonical_round_trip(tmp_path: Path) -> None:
    [session] = load_file(bundled("mini-swe-agent-v1", V1_HIGHEST))
    [again] = load_file(write_canonical([session], tmp_path / "v1.jsonl"))
    assert again == session
    assert any(m.sent_as == "user" for m in again.messages)
    assert any(isinstance(p, ToolCallPart) and p.from_text for m in again.messages for p in m.parts)


def test_a_call_read_from_the_text_adds_no_tokens() -> None:
    [session] = load_file(bundled("mini-swe-agent-v1", V1_HIGHEST))
    count = counter(session)
    reply = session.messages[2]
    without = Message(role="assistant", parts=tuple(p for p in reply.parts if not isinstance(p, ToolCallPart)))
    assert count([reply]) == count([without])


def compact(strategy, messages: Sequence[Message], session: Session, window: int):
    request = CompactionRequest("threshold", window, target_tokens=int(window * 0.5), count_tokens=counter(session))
    return strategy.compact(Context(messages=tuple(messages)), request)


def test_masking_and_prune_act_on_v1_observations() -> None:
    [session] = load_file(bundled("mini-swe-agent-v1", V1_HIGHEST))
    messages = session.messages
    masked = compact(ObservationMasking(), messages, session, 64_000).context.messages
    changed = [a for a, b in zip(masked, messages) if a != b]
    assert len(masked) == len(messages) and len(changed) > 10
    assert all(m.role == "tool" and m.sent_as == "user" for m in changed)
    assert all(m.parts[0].content.startswith("Old environment output: (") for m in changed)
    assert masked[-20:] == messages[-20:], "the last 10 outputs (and their replies) stay whole"
    assert masked[1] == messages[1], "the task statement is never masked"
    pruned = compact(Prune(protect_tokens=10_000, minimum_tokens=5_000), messages, session, 64_000)
    cleared = [m for m in pruned.context.messages if m.role == "tool" and m.parts[0].content == PRUNED]
    assert cleared and pruned.context.messages[1] == messages[1]
    # The last two steps (reply and answer) are protected: turns of the task's own turn.
    assert pruned.context.messages[-4:] == messages[-4:]


def sessions() -> list[Session]:
    return [
        load_file(bundled("mini-swe-agent-v1", V1_HIGHEST))[0],
        load_file(bundled("mini-swe-agent-pr816", "deepseek_reasoner_dev_marshmallow-code__marshmallow-1343"))[0],
        load_file(bundled("claude-code-log", "-src-deep-manifest__a7da6a22"))[0],
        load_file(bundled("m-claude", "21e3c711"), lenient=True)[0],
    ]


@pytest.mark.parametrize("name", STRATEGIES)
def test_the_task_statement_survives_every_compaction(name: str) -> None:
    """Each session is replayed in eight growing slices at a small window: every compaction's result
    is compacted again with the next slice, and the task statement must be there, verbatim, each time."""
    strategy = get_strategy(name)
    compactions = 0
    for session in sessions():
        messages = session.messages
        task = messages[task_index(messages)]
        step = max(1, len(messages) // 8)
        context: tuple[Message, ...] = ()
        for end in range(step, len(messages) + step, step):
            context = (*context, *messages[end - step : end])
            result = compact(strategy, context, session, 16_000)
            compactions += result.messages_removed > 0 or result.context.messages != context
            kept = result.context.messages
            assert task in kept, f"{name} on {session.id}: the task statement was dropped or changed"
            context = kept
    assert compactions, f"{name} never compacted these sessions"


SUMMARIZING = [
    "summarize",
    "extractive",
    "iterative-merge",
    "archive",
    "pipeline",
    "seed-001",
    "seed-004",
    "codex",
    "claude-code",
    "openhands",
    "pi",
    "opencode",
]


@pytest.mark.parametrize("name", SUMMARIZING)
def test_codex_instructions_are_kept_out_of_the_summary(name: str) -> None:
    # Codex writes the environment context again mid-session (message 111 of this rollout).
    [session] = load_file(bundled("codex-rollouts", "Hoper-J__cpolar-connect"))
    messages = session.messages
    instructions = [m for m in messages if is_instruction(m)]
    assert len(instructions) == 2 and messages.index(instructions[1]) > 100
    result = compact(get_strategy(name), messages, session, 8_000)
    kept = result.context.messages
    assert result.messages_removed > 40 and result.context.summary
    assert all(m in kept for m in instructions), "instructions are kept verbatim"
    assert "<environment_context>" not in result.context.summary
    if kept.index(instructions[1]) < len(kept) - 40:  # it was in the summarized span (pi and opencode keep more)
        head = [kept[i] for i in sorted(pinned_indexes(kept))]
        assert head == [instructions[0], messages[task_index(messages)], instructions[1]]
        assert is_summary(kept[3])
