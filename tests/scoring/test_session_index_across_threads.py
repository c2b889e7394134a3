"""A session's searchable text (`SessionText`) answers the same when threads share it.

Every setting of a session shares one (`compactlab.scoring.preservation` keeps it by the session's
identity), and an LLM run scores its settings side by side in threads
(`compactlab.runs.concurrent_replays`). `python -m tests.scripts.concurrent_rows` measures what the
race cost a whole run.
"""

from __future__ import annotations

import threading

from compactlab.scoring.extraction import extract_items
from compactlab.scoring.matching import Item, SessionText
from compactlab.scoring.preservation import history_count
from compactlab.sessions.importers import load_file
from tests.conftest import bundled


def test_two_threads_extending_one_items_search_find_each_message_once_in_order() -> None:
    # One thread's search of an item is held between finding and recording what
    # it found while a second thread asks about the same item: without the index's lock both append
    # the messages they found (twice, out of order) and `history_count`'s bisection counts wrong,
    # which made a concurrent run's preservation scores differ from a serial run's in one digit.
    messages = load_file(bundled("claude-code-log", "-Users-dain-workspace-claude-code-log-sample__37f83ec9"))[0].messages
    fresh = SessionText(messages)
    half = len(messages) // 2
    item = next(
        i
        for m in messages
        if m.role == "assistant"
        for i in extract_items([m])
        if i.kind == "path" and len([at for at in fresh.occurring(i) if at < half]) >= 2 and fresh.occurring(i)[-1] >= half
    )
    expected = fresh.occurring(item)
    index = SessionText(messages)
    search, held, release = index._search, threading.Event(), threading.Event()

    def held_search(wanted: Item, first: int, end: int) -> set[int]:
        found = search(wanted, first, end)
        if threading.current_thread().name == "first":
            held.set()
            release.wait(timeout=10)
        return found

    index._search = held_search  # type: ignore[method-assign]
    first = threading.Thread(target=index.occurring, args=(item,), name="first")
    second = threading.Thread(target=index.occurring, args=(item, half), name="second")
    first.start()
    assert held.wait(timeout=10)
    second.start()
    second.join(timeout=0.2)  # done at once without the lock; with it, waiting for the first thread
    release.set()
    first.join(timeout=10)
    second.join(timeout=10)
    assert index.occurring(item) == expected == sorted(set(expected))
    assert [history_count(index, item, at) for at in range(len(messages))] == [
        history_count(fresh, item, at) for at in range(len(messages))
    ]
