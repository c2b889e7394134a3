"""What was computed for a session's objects, kept to be found again, and a way to empty it all.

A sweep asks the same questions about the same messages many times: a message's file events, its
needed items, its searchable text, a compaction's scores. `IdentityMemo` keeps such answers by the
identity of the objects they were computed from (a message, a message tuple, a session's text).
Each entry holds those objects, so no id can be reused by another object while the entry lives,
and a hit is checked by `is`: an equal but distinct object is computed afresh, never confused.

The memos hold their objects alive, so they are bounded, and `forget` empties every one (and the
functions under `functools.lru_cache` registered with `text_cache`) when a process moves on to
another session and when a run starts: a process replaying thousands of sessions would
otherwise keep the last hundred thousand messages alive.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, Protocol, TypeVar

V = TypeVar("V")
K = TypeVar("K")
F = TypeVar("F", bound=Callable)


class _Clearable(Protocol):
    def cache_clear(self) -> None: ...


_MEMOS: list[IdentityMemo] = []
_TEXT_CACHES: list[_Clearable] = []


class IdentityMemo(Generic[V]):
    """Values by the identity of the objects they were computed from (see the module docstring)."""

    def __init__(self, limit: int, forgotten: bool = True) -> None:
        """`forgotten`: whether `forget` empties it. A memo that lives and dies with one object (a
        `Meter`'s, one per session and estimator) is not registered, or the registry would keep
        every such memo, and the objects in it, alive."""
        self.limit = limit  # entries kept: a full memo is emptied before the next entry
        self._entries: dict[Hashable, tuple[object, V]] = {}
        if forgotten:
            _MEMOS.append(self)

    def of(self, obj: K, compute: Callable[[K], V]) -> V:
        """The value for one object: the one kept, or `compute(obj)`'s (the common case, kept cheap)."""
        entry = self._entries.get(id(obj))
        if entry is not None and entry[0] is obj:
            return entry[1]
        value = compute(obj)
        if len(self._entries) >= self.limit:
            self._entries.clear()
        self._entries[id(obj)] = (obj, value)
        return value

    def get(self, objects: tuple[object, ...], extra: Hashable, compute: Callable[[], V]) -> V:
        """The value for `objects` (by identity) and `extra` (by equality): the one kept, or `compute()`'s."""
        key = (tuple(map(id, objects)), extra)
        entry = self._entries.get(key)
        if entry is not None and isinstance(kept := entry[0], tuple) and all(a is b for a, b in zip(kept, objects)):
            return entry[1]
        value = compute()
        if len(self._entries) >= self.limit:
            self._entries.clear()
        self._entries[key] = (objects, value)
        return value

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()


def text_cache(function: F) -> F:
    """Register a function under `functools.lru_cache` (keyed by texts, not objects) to be emptied
    by `forget`; returns it, so it can decorate."""
    _TEXT_CACHES.append(function)  # type: ignore[arg-type]  # an lru_cache wrapper has cache_clear
    return function


def forget() -> None:
    """Empty every memo and registered cache: the process moves on to another session or run."""
    for memo in _MEMOS:
        memo.clear()
    for cache in _TEXT_CACHES:
        cache.cache_clear()
