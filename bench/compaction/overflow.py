"""Recognising "context too long" errors from each provider, and silent overflow.

Each pattern is anchored on the provider's own wording, so an unrelated error that merely
mentions "context" or "tokens" is never taken for an overflow. Where the message states the
sizes, they are extracted (`tokens`, `limit`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, overload

if TYPE_CHECKING:
    import numpy as np

_NUMBER = r"(\d[\d,]*)"

# (provider, pattern, group of the requested tokens or None, group of the limit or None)
PATTERNS: tuple[tuple[str, re.Pattern[str], int | None, int | None], ...] = (
    # OpenAI Chat Completions: code context_length_exceeded.
    (
        "openai",
        re.compile(
            rf"This model's maximum context length is {_NUMBER} tokens\. However, (?:your messages resulted in|you requested) {_NUMBER} tokens"
        ),
        2,
        1,
    ),
    # OpenAI Responses API (gpt-5 family).
    ("openai", re.compile(r"Your input exceeds the context window of this model"), None, None),
    ("openai", re.compile(rf"Input tokens exceed the configured limit of {_NUMBER} tokens"), None, 1),
    # Anthropic Messages: invalid_request_error.
    ("anthropic", re.compile(rf"prompt is too long: {_NUMBER} tokens > {_NUMBER} maximum"), 1, 2),
    ("anthropic", re.compile(rf"input length and `max_tokens` exceed context limit: {_NUMBER} \+ {_NUMBER} > {_NUMBER}"), 1, 3),
    # Google Gemini API: INVALID_ARGUMENT.
    (
        "google",
        re.compile(rf"The input token count \(?{_NUMBER}\)? exceeds the maximum number of tokens allowed \(?{_NUMBER}\)?"),
        1,
        2,
    ),
    # OpenAI-compatible servers.
    ("vllm", re.compile(rf"maximum context length is {_NUMBER} tokens\. However, you requested {_NUMBER} tokens"), 2, 1),
    ("llama.cpp", re.compile(r"the request exceeds the available context size"), None, None),
    (
        "ollama",
        re.compile(r"input length exceeds the context length|prompt too long; exceeded (?:max )?context length"),
        None,
        None,
    ),
    (
        "openrouter",
        re.compile(
            rf"This endpoint's maximum context length is {_NUMBER} tokens\. However, you requested about {_NUMBER} tokens"
        ),
        2,
        1,
    ),
)


@dataclass(frozen=True)
class Overflow:
    provider: str
    tokens: int | None
    limit: int | None


def classify_overflow(message: str) -> Overflow | None:
    """The overflow described by a provider error message, or None when it is another error."""
    for provider, pattern, tokens_group, limit_group in PATTERNS:
        match = pattern.search(message)
        if match:
            return Overflow(provider, _int(match, tokens_group), _int(match, limit_group))
    return None


def _int(match: re.Match[str], group: int | None) -> int | None:
    return int(match.group(group).replace(",", "")) if group else None


@overload
def silent_overflow(reported_prompt_tokens: int, window: int) -> bool: ...
@overload
def silent_overflow(reported_prompt_tokens: np.ndarray, window: int) -> np.ndarray: ...
def silent_overflow(reported_prompt_tokens: int | np.ndarray, window: int) -> bool | np.ndarray:
    """A provider that truncates instead of refusing reports an input above the window.

    One size, or an array of them (the replay's fast path sizes many calls at once)."""
    return reported_prompt_tokens > window
