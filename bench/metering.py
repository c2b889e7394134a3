"""Binding an estimator to one transcript: the token counts the engine and strategies use.

A `Meter` counts a message list with the run's estimator and the transcript's framing, adding
the per-session constant for sources whose files lack the system prompt (see
`bench.estimation`), and, for `hybrid`, starting from the provider's last reported count when the
context still holds the prefix that count covered.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate

from bench.estimators import Hybrid, KnownUsage, estimate, get_estimator
from bench.framing import MISSING_SYSTEM_PROMPT, framing_for
from bench.model import Message, Transcript
from bench.tokenizers import TokenCache
from strategies.base import Context


@dataclass
class Meter:
    transcript: Transcript
    estimator_name: str = "hybrid"
    cache: TokenCache = field(default_factory=TokenCache)
    offset: int = 0  # the per-session constant (system prompt and tools the file does not hold)

    def __post_init__(self) -> None:
        self._memo: dict[int, tuple[Message, float]] = {}
        self._sums: dict[int, tuple[tuple[Message, ...], list[float]]] = {}
        self.estimator = get_estimator(self.estimator_name)
        self.framing = framing_for(self.transcript.source_format)
        # Strategies count pieces of the context (a message, a kept tail) with the base of a hybrid
        # estimator: provider usage only ever describes a whole prompt.
        self.local = get_estimator(self.estimator.base) if isinstance(self.estimator, Hybrid) else self.estimator
        if self.transcript.source_format in MISSING_SYSTEM_PROMPT:
            self.offset = self._first_call_offset()

    def _first_call_offset(self) -> int:
        for index, message in enumerate(self.transcript.messages):
            if message.call is not None:
                return message.call.prompt_tokens - self.count(self.transcript.messages[:index])
        return 0

    def count(self, messages: Sequence[Message]) -> int:
        """A local estimate of `messages` (no constant, no provider usage)."""
        return round(self.local.prompt_overhead + sum(self.message_tokens(m) for m in messages))

    def message_tokens(self, message: Message) -> float:
        """One message's estimate, computed once per message object however often it is asked for.

        A replay asks for every message in every later prompt; the memo holds the message itself
        so its id cannot be reused by another object while the entry lives.
        """
        found = self._memo.get(id(message))
        if found is None or found[0] is not message:
            found = (message, self.local.message_tokens(message, self.framing, self.cache))
            self._memo[id(message)] = found
        return found[1]

    def running_sums(self, messages: tuple[Message, ...]) -> list[float]:
        """The estimates of `messages`, summed one by one as `sum` adds them (the last is their total).

        Kept for the last few message tuples: settings that share a compaction's result
        (`bench.shared_compactions`) count it once. The entry holds the tuple, so its id is not reused."""
        found = self._sums.get(id(messages))
        if found is None or found[0] is not messages:
            if len(self._sums) >= 64:
                self._sums.clear()
            found = self._sums[id(messages)] = (messages, list(accumulate(map(self.message_tokens, messages))))
        return found[1]

    def __call__(self, context: Context) -> int:
        """The estimated prompt tokens of the whole context, as the trigger sees it."""
        known = KnownUsage(*context.known_usage) if context.known_usage else None
        if isinstance(self.estimator, Hybrid) and known is not None:
            return estimate(self.estimator, context.messages, self.framing, self.cache, known)
        return self.count(context.messages) + self.offset
