"""Eviction's indexed view of later calls (`_IndexedLater`) answers as its definition (`_Later`) does.

`_Later` asks every later call, one by one, whether it changed a file or repeated an output;
`_IndexedLater` looks the same up in what it indexed once per context. Here both answer every
question eviction asks of every tool call of real sessions (the whole session, and its first half
as an earlier context), and must agree.
"""

from __future__ import annotations

import pytest

from compactlab.sessions.model import Message, ToolCallPart
from compactlab.sessions.tool_effects import CallEffect, call_effect
from compactlab.strategies.evict import _IndexedLater, _Later
from tests.strategy_sessions import DATASETS, each


def _calls(messages: tuple[Message, ...]) -> dict[str, tuple[int, ToolCallPart, CallEffect]]:
    """Every tool call of `messages` by id, as eviction gathers them."""
    return {
        part.id: (at, part, call_effect(part))
        for at, message in enumerate(messages)
        for part in message.parts
        if isinstance(part, ToolCallPart)
    }


@pytest.mark.parametrize("dataset", DATASETS)
def test_the_indexed_answers_equal_the_call_by_call_ones(dataset: str) -> None:
    answers: list[bool] = []

    def check(session) -> None:
        for messages in (tuple(session.messages), tuple(session.messages[: len(session.messages) // 2])):
            calls = _calls(messages)
            plain, indexed = _Later(messages, calls), _IndexedLater(messages, calls)
            for at, _, effect in calls.values():
                expected = [plain.changed(at, effect.paths), plain.changed(at, ()), plain.repeated(at, effect)]
                found = [indexed.changed(at, effect.paths), indexed.changed(at, ()), indexed.repeated(at, effect)]
                assert found == expected, (at, effect)
                answers.extend(expected)

    each(dataset, check)
    assert True in answers and False in answers, "the sessions must give both answers for the test to mean anything"
