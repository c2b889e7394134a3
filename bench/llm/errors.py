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
from compactlab.sessions.model import LLMCall

# What a provider's 429 says when the account's quota or spend limit is used up, not a rate limit:
# waiting does not cure it. OpenAI: `error.code` and `error.type` "insufficient_quota" (and
# "billing_hard_limit_reached"); Anthropic: a `rate_limit_error` whose `error.details.error_code`
# is "enforced_spend_limit_reached" (its monthly spend cap; the 429 has no retry-after).
QUOTA_CODES = frozenset({"insufficient_quota", "billing_hard_limit_reached", "enforced_spend_limit_reached"})


def quota_code(body: object) -> str | None:
    """The quota code of an error body (either provider's, whole or as the SDK unwrapped it), None
    when it names none."""
    found: list[object] = []
    if isinstance(body, dict):
        error = body.get("error")
        for part in (body, error if isinstance(error, dict) else {}):
            details = part.get("details")
            found += [part.get("code"), part.get("type"), details.get("error_code") if isinstance(details, dict) else None]
    return next((code for code in found if isinstance(code, str) and code in QUOTA_CODES), None)


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
    """The provider answered 200 with no usable answer: an empty text, a truncated or malformed body,
    an answer cut off at its output budget or bigger than it can fill."""

    def __init__(self, provider: str, model: str, reason: str, billed: tuple[LLMCall, ...] = ()) -> None:
        super().__init__(provider, model, reason, 200)
        self.reason = reason
        self.billed = billed  # the usage of answers the provider bills although they are unusable (cut off)


class ContextOverflowError(LLMError):
    """The provider refused the request as longer than the model's context window."""

    def __init__(self, provider: str, model: str, message: str, status: int | None, overflow: Overflow) -> None:
        super().__init__(provider, model, message, status)
        self.overflow = overflow
