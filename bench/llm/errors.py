"""The errors an LLM call ends with, after the SDK's retries (bench/llm/clients.py raises them).

What each means to a run: `RateLimited` (a 429 the SDK's retries did not get past) is waited out and
sent again by `compactlab.llm.concurrency`; `LLMUnavailable` (a refused key, an unreachable server,
a used-up quota) stops the run, since no later call can do better, and the calls in flight end with
`RequestCancelled`; `BadAnswer` (a 200 with no usable answer) is a failure like any other, never
cached; `ContextOverflowError` lets the engine compact instead of paying for hopeless retries.
None of them carries the API key.
"""

from __future__ import annotations

from compactlab.compaction.overflow import Overflow


class LLMError(RuntimeError):
    """An LLM call failed after the SDK's retries. Never carries the API key."""

    def __init__(self, provider: str, model: str, message: str, status: int | None = None) -> None:
        self.provider, self.model, self.status = provider, model, status
        where = f"HTTP {status}" if status is not None else "no HTTP status"
        super().__init__(f"{provider} call to model {model!r} failed ({where}): {message}")


class LLMUnavailable(LLMError):
    """The provider cannot be used at all: it refused the credentials (401/403) or cannot be reached."""


class RequestCancelled(LLMUnavailable):
    """A call in flight cancelled because the run stopped (another call's key was refused)."""


CANCELLED = "cancelled in flight: the run stopped (see its first error)"


class RateLimited(LLMError):
    """The provider answered 429 (too many requests or tokens per minute) after the SDK's retries."""

    def __init__(self, provider: str, model: str, message: str, retry_after: float | None) -> None:
        super().__init__(provider, model, message, 429)
        self.retry_after = retry_after  # seconds the server asked for; None: it did not say


class BadAnswer(LLMError):
    """The provider answered 200 with no usable answer: an empty text, a truncated or malformed body."""

    def __init__(self, provider: str, model: str, reason: str) -> None:
        super().__init__(provider, model, reason, 200)
        self.reason = reason


class ContextOverflowError(LLMError):
    """The provider refused the request as longer than the model's context window."""

    def __init__(self, provider: str, model: str, message: str, status: int | None, overflow: Overflow) -> None:
        super().__init__(provider, model, message, status)
        self.overflow = overflow
