"""Caches of what was computed for a transcript's messages, and a way to empty them all.

Several modules keep what they computed for a message (its searchable text, its needed items, its
file events, the error lines of a tool output, ...) by the message's identity or its text, bounded
by a number of entries. Each entry holds the message or its text, and a run's messages are rarely
met again once their transcript is replayed: a process replaying thousands of transcripts would
keep the last hundred thousand messages or outputs alive (most of a worker's memory, growing with
the transcripts until the bounds are reached). `forget` empties them between transcripts.
"""

from __future__ import annotations

_CACHES: list[dict] = []


def message_cache(cache):
    """Register `cache` (a module's dict keyed by messages, or a function under `functools.lru_cache`
    keyed by their texts) to be emptied by `forget`; returns it, so it can decorate."""
    _CACHES.append(cache)
    return cache


def forget() -> None:
    """Empty every registered cache: the process moves on to another transcript."""
    for cache in _CACHES:
        clear = getattr(cache, "cache_clear", None) or cache.clear
        clear()
