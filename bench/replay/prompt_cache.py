"""What a provider's prompt cache still held at each recorded call, as far as the log can tell.

The replay's `prefix_tokens` (the part of a prompt a provider's cache could serve) is the part
identical to the previous prompt, and two facts of the session bound it:

- **The cache's state at the start.** A session's first call already finds part of its prompt
  cached: the system prompt and tools, kept warm by the user's other sessions (a Claude Code
  session's first call reads 11,439 of 16,921 tokens from the cache in a bundled session). The
  replay takes the recorded first call's cache read as that warm part (`warm_tokens`), for every
  setting alike, since no strategy has acted yet.
- **Edits the log does not show.** A recorded prompt smaller than the previous one with no
  compaction between was edited in place by the agent; where the replay's prompt is the recorded
  one, the cache keeps the warm part only there (`edited`).
- **The cache's lifetime.** A cached prefix lives for the provider's time to live after its last
  use: a call made after a longer pause, or with another model than the previous call (each model
  has its own cache), finds nothing of the previous prompt, whatever the strategy did, and pays a
  write of all but the warm part (`cold`). The lifetimes (`LIFETIMES`) are the providers' documented ones, read
  2026-12-02: Anthropic, https://platform.claude.com/docs/en/build-with-claude/prompt-caching: 5
  minutes by default, refreshed by each use, 1 hour with the 1-hour option (a session whose calls
  wrote one-hour entries, `LLMCall.cache_write_1h_tokens`, lives an hour from that call on); OpenAI,
  https://developers.openai.com/api/docs/guides/prompt-caching: in-memory retention "typically
  clears caches within 5 to 10 minutes of inactivity and always removes them within one hour":
  10 minutes, the end of the typical range, is taken. Providers that document no lifetime
  (DeepSeek: "hours to days"; Gemini's implicit caching) get none: no call there is cold for time.

A session whose calls carry no times (`LLMCall.timestamp`: the Anthropic and OpenAI request logs,
mini-swe-agent) cannot show a lifetime; `timed` says so, and the run counts such sessions.
Measured on the shared and development Claude Code sessions (tests/scripts/cache_model_check.py),
these rules and the compactions explain most of the breaks the recorded cache reads show, not all:
the rest have no cause the log records (a cache entry evicted early, an edit the agent made to its
own prompt without logging it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from compactlab.sessions.model import LLMCall
from compactlab.tokens.calibration import model_family

SHORT_LIFETIME = 300.0  # seconds: Anthropic's default time to live
LONG_LIFETIME = 3600.0  # seconds: Anthropic's 1-hour option
# Per model family (`compactlab.tokens.calibration.model_family`): the default lifetime in seconds.
LIFETIMES: dict[str, float] = {"claude": SHORT_LIFETIME, "gpt": 600.0}


@dataclass(frozen=True)
class CacheState:
    """The prompt cache at a session's recorded calls: `warm_tokens`, what it held of the prompt
    before the first call; `cold`, per call, whether it held nothing of the previous prompt then (the
    first call is not cold: it finds the warm part); `timed`, whether the calls carry times."""

    warm_tokens: int
    cold: tuple[bool, ...]
    timed: bool
    # Per call: the recorded prompt shrank since the previous call with no production compaction
    # between (the agent edited its prompt in place, e.g. Claude Code clearing old tool results, an
    # edit the log does not show): where the replay's prompt is the recorded one, its cache breaks
    # there too (`compactlab.replay.uncompacted` fills it in).
    edited: tuple[bool, ...] = ()
    # Per call: the seconds since the previous call, and the cache's lifetime then (None: unknown).
    pauses: tuple[float | None, ...] = ()
    lifetimes: tuple[float | None, ...] = ()

    def expired_within(self, call: int, margin: float) -> bool:
        """Whether the cache had expired at call `call`, or was within `margin` seconds of it (the
        trigger's `Trigger.on_cache_expiry` asks; with no margin, `cold`)."""
        if self.cold[call] or not margin:
            return self.cold[call]
        pause, lifetime = self.pauses[call], self.lifetimes[call]
        return pause is not None and lifetime is not None and pause > lifetime - margin

    def expired_calls(self, margin: float) -> np.ndarray:
        """`expired_within` of every call, as an array (the fast path's stops)."""
        return np.array([self.expired_within(call, margin) for call in range(len(self.cold))], dtype=bool)

    def prefix(self, call: int, previous: int, size: int, edited: bool = False) -> int:
        """The cached part of call `call`'s prompt of `size` tokens whose previous prompt shares
        `previous` tokens with it (the whole previous prompt when only appended to); `edited`: the
        prompt was edited in place before it (`edited_at`)."""
        if call == 0 or self.cold[call] or edited:
            return min(self.warm_tokens, size)
        return min(previous, size)

    def after_change(self, model: str, shared: int) -> int:
        """The cached part of a prompt changed from the previous one after its first `shared` tokens
        (a compaction, an in-place edit). A provider that caches any shared prefix (OpenAI, DeepSeek)
        serves all of it; Anthropic serves a prefix only up to a cache breakpoint the agent placed
        before the change, and its lookback from the last breakpoint reaches about 20 content blocks,
        short of where a compaction or an edit of old outputs changes the prompt: so only the head the
        agent marks (system prompt and tools), which the first call found cached, is read (`warm_tokens`)."""
        return min(shared, self.warm_tokens) if model_family(model) == "claude" else shared

    def edited_at(self, call: int, recorded: bool) -> bool:
        """Whether call `call`'s prompt, when it is the recorded one (`recorded`), was edited in place."""
        return recorded and bool(self.edited) and self.edited[call]


def lifetime(model: str, long: bool) -> float | None:
    """How long a cached prefix of `model` lives after its last use (None: no documented lifetime);
    `long`: the session wrote one-hour entries (an Anthropic option)."""
    family = model_family(model)
    if family == "claude" and long:
        return LONG_LIFETIME
    return LIFETIMES.get(family)


def cache_state(calls: Sequence[LLMCall]) -> CacheState:
    """The cache's state at each of `calls` (a session's recorded calls, in order)."""
    if not calls:
        return CacheState(0, (), False)
    cold: list[bool] = [False]
    pauses: list[float | None] = [None]
    lifetimes: list[float | None] = [lifetime(calls[0].model, False)]
    long = False
    for previous, call in zip(calls, calls[1:]):
        long = long or previous.cache_write_1h_tokens > 0  # what the calls so far wrote lives an hour
        ttl = lifetime(call.model, long)
        pause = call.timestamp - previous.timestamp if call.timestamp is not None and previous.timestamp is not None else None
        cold.append((ttl is not None and pause is not None and pause > ttl) or call.model != previous.model)
        pauses.append(pause)
        lifetimes.append(ttl)
    timed = all(call.timestamp is not None for call in calls)
    return CacheState(calls[0].cache_read_tokens, tuple(cold), timed, (), tuple(pauses), tuple(lifetimes))
