"""Caches keyed by the identity of a transcript's messages, and a way to empty them all.

Several modules keep what they computed for a message (its searchable text, its needed items, its
file events, ...) by the message's identity, bounded by a number of entries. Each entry holds the
message, and a run's messages are never met again once their transcript is replayed: a process
replaying thousands of transcripts would keep the last hundred thousand messages alive (most of
a worker's memory). `forget` empties them between transcripts.
"""

from __future__ import annotations

_CACHES: list[dict] = []


def message_cache(cache: dict) -> dict:
    """Register `cache` (a module's dict keyed by messages' identity) to be emptied by `forget`."""
    _CACHES.append(cache)
    return cache


def forget() -> None:
    """Empty every registered cache: the process moves on to another transcript."""
    for cache in _CACHES:
        cache.clear()
