"""`SafeCuts` answers as its definition, `safe_cut_points`, on every bundled dataset.

`safe_cut_points` walks a whole history; `SafeCuts` walks back from the end only as far as it is
asked. Here every cut of real sessions (the whole session and its first half, as an earlier
context), asked in the order a summarizing strategy asks (near the end first) and then every
other, must be safe exactly where the definition says.
"""

from __future__ import annotations

import pytest

from compactlab.sessions.datasets import list_datasets
from compactlab.sessions.loading import load_inputs
from compactlab.sessions.messages import SafeCuts, safe_cut_points


@pytest.mark.parametrize("dataset", list_datasets(), ids=lambda d: d.name)
def test_the_safe_cuts_found_backwards_equal_the_definition(dataset) -> None:
    answers: list[bool] = []
    for session in load_inputs([dataset.name]).sessions:
        for messages in (session.messages, session.messages[: len(session.messages) // 2]):
            expected = set(safe_cut_points(messages))
            lazy = SafeCuts(messages)
            asked = [len(messages) - 3, *range(len(messages) + 2), -1, len(messages) + 5]
            for index in asked:
                assert (index in lazy) == (index in expected), (session.id, len(messages), index)
                answers.append(index in expected)
    if not answers:
        pytest.skip(f"{dataset.name}: no session with messages")
    assert True in answers and False in answers, "the sessions must have safe and unsafe cuts for the test to mean anything"
