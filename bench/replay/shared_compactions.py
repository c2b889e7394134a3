"""One compaction for the settings of a run that reach the same context with the same strategy.

A sweep replays each session under settings that differ only in their trigger. Where the
context jumps past several thresholds at one call, each of them compacts the same history there
with the same strategy, and their replays stay the same until the next compaction. (In the speed
sweep of `tests.scripts.speed_sweep`, about one compaction in five is such a repeat.) `SharedCompactions`
stands in for the strategy in each of those settings: it makes the compaction once and hands the
same result to each. A strategy's result depends only on the context and the request (it is a
frozen dataclass without state, see `compactlab.strategies.base`), so nothing a replay records changes.

Settings of one session may replay side by side in threads (`compactlab.runs.concurrent_replays`): a
lock per key makes a second setting reaching the same context wait for the first one's result
instead of making it again (an LLM summary would be asked twice).
"""

from __future__ import annotations

import operator
import threading
from dataclasses import dataclass, field

from compactlab.contract import CompactionRequest, CompactionResult, Context, Strategy


@dataclass(eq=False)
class SharedCompactions:
    """`strategy`, with each compaction of a context made once (see the module docstring).

    A context is the same when it holds the same message objects (the session's, or those an
    earlier shared compaction made), so comparing it costs a look at each message's identity.
    Keep one per session: it holds every context it compacted."""

    strategy: Strategy
    results: dict[tuple, list[tuple[Context, CompactionRequest, CompactionResult]]] = field(default_factory=dict)
    locks: dict[tuple, threading.Lock] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)  # over `locks`

    @property
    def name(self) -> str:
        return self.strategy.name

    def __getattr__(self, name: str) -> object:  # the strategy's trigger, estimator, ...
        if name == "strategy":  # not set yet (a copy being made): no strategy to ask
            raise AttributeError(name)
        return getattr(self.strategy, name)

    def compact(self, context: Context, request: CompactionRequest) -> CompactionResult:
        messages, counter = context.messages, request.count_tokens
        # The messages are told apart by their ends in the key and by identity on a hit: a key of
        # every message's id would cost about what sharing the compaction saves.
        key = (
            len(messages),
            id(messages[0]) if messages else None,
            id(messages[-1]) if messages else None,
            context.summary,
            context.compactions,
            context.known_usage,
            id(context.archives),
            context.kept_tail,
            request.reason,
            request.window,
            request.target_tokens,
            *_counter_identity(counter),
            id(request.summarizer),
        )
        with self.lock:
            key_lock = self.locks.setdefault(key, threading.Lock())
        with key_lock:
            entries = self.results.setdefault(key, [])
            for earlier, _, result in entries:
                if all(map(operator.is_, earlier.messages, messages)):
                    return result
            result = self.strategy.compact(context, request)
            # The entry holds the context and the request, so no object named in its key by identity
            # can be freed and its id reused while the entry lives.
            entries.append((context, request, result))
            return result


def _counter_identity(counter: object) -> tuple[int, int]:
    """What a request's counter counts with, by identity. An engine's `piece_size` follows its
    estimator's meter at the context's call, so every setting's engine sharing that meter counts a
    piece alike: it is keyed by the meter, not by the engine (one per setting)."""
    owner, func = getattr(counter, "__self__", counter), getattr(counter, "__func__", counter)
    if getattr(func, "__name__", "") == "piece_size" and hasattr(owner, "count_tokens"):  # `Engine.piece_size`
        owner = getattr(owner.count_tokens, "__self__", owner.count_tokens)
    return id(owner), id(func)


def shared_by_setting(instances: dict[str, Strategy]) -> dict[str, SharedCompactions]:
    """For each setting (by label), the `SharedCompactions` of its strategy: settings whose
    strategies are equal (the same class and settings) share one."""
    shared: list[SharedCompactions] = []
    by_label = {}
    for label, instance in instances.items():
        found = next((s for s in shared if s.strategy == instance), None)
        if found is None:
            found = SharedCompactions(instance)
            shared.append(found)
        by_label[label] = found
    return by_label
