"""The identity memo: found again by identity, never by equality, bounded, emptied per run."""

from __future__ import annotations

from compactlab.memo import IdentityMemo, forget
from compactlab.scoring.extraction import _message_items
from compactlab.sessions.importers import load_file
from tests.conftest import bundled


def test_a_value_is_found_again_only_for_the_same_object():
    memo: IdentityMemo[int] = IdentityMemo(limit=10)
    calls: list[object] = []

    def compute(obj: object) -> int:
        calls.append(obj)
        return len(calls)

    first, equal = ["a"], ["a"]
    assert memo.of(first, compute) == 1 and memo.of(first, compute) == 1
    assert memo.of(equal, compute) == 2  # equal but another object: computed afresh
    assert memo.get((first, equal), 3, lambda: 7) == 7 and memo.get((first, equal), 3, lambda: 8) == 7
    assert memo.get((first, equal), 4, lambda: 9) == 9  # another extra key


def test_a_full_memo_is_emptied_and_forget_empties_every_memo():
    memo: IdentityMemo[int] = IdentityMemo(limit=2)
    kept = [object() for _ in range(3)]
    for obj in kept:
        memo.of(obj, id)
    assert len(memo) == 1  # emptied when full, then the third entry went in
    memo.of(kept[0], id)
    forget()
    assert len(memo) == 0


def test_the_memos_give_what_computing_afresh_gives_on_a_real_session():
    [session] = load_file(bundled("m-claude", "3af9b1a7"), lenient=True)
    remembered = [_message_items(m) for m in session.messages]
    again = [_message_items(m) for m in session.messages]
    assert all(a is b for a, b in zip(remembered, again))  # the same lists: found, not recomputed
    forget()
    assert [_message_items(m) for m in session.messages] == remembered
