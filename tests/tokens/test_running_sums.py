"""`Meter.running_sums` equals its definition, `Meter.running_sums_plain`, on every bundled dataset.

The walk sizes every compaction's result from the running sums of its messages' estimates;
`running_sums` looks each message up in the meter's memo in its loop instead of a call per
message. Here both sum real sessions' messages (all counted before, and a context of new message
objects, counted for the first time) and must agree value for value.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from compactlab.sessions.datasets import list_datasets
from compactlab.sessions.loading import load_inputs
from compactlab.tokens.metering import Meter


@pytest.mark.parametrize("estimator", ["hybrid", "tiktoken-o200k", "words"])
@pytest.mark.parametrize("dataset", list_datasets(), ids=lambda d: d.name)
def test_the_running_sums_equal_the_definition(dataset, estimator: str) -> None:
    compared = 0
    for session in load_inputs([dataset.name]).sessions[:20]:
        meter = Meter(session, estimator)
        messages = tuple(session.messages)
        fresh = tuple(replace(m) for m in messages[::2])  # equal messages, other objects: not in the memo
        for context in (messages, messages[: len(messages) // 2], fresh + messages[1::2]):
            fast = meter.running_sums(context)  # first: the fresh messages are not in the memo yet
            plain = meter.running_sums_plain(context)
            assert fast == plain, (session.id, len(context))
            compared += len(plain)
    if not compared:
        pytest.skip(f"{dataset.name}: no session with messages")
