"""The LLM layer: clients over the official SDKs, a call cache, prices, and summarizers.

    summarizer = make_summarizer("openai", "gpt-4.1-mini", cache_dir="suite/llm-cache")
    summarizer = make_summarizer("openai", "qwen2.5:7b", base_url="http://localhost:11434/v1")
    summarizer = make_summarizer("recorded", "gpt-4.1-mini", cache_dir="suite/llm-cache")  # CI: no key

Every module imports the SDKs lazily, so the "recorded" (CI) path never loads them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from compactlab.llm.cache import CacheMiss, CacheRequest, Completion, LLMCache, Mode
from compactlab.llm.clients import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, AnthropicClient, LLMClient, OpenAIChatClient
from compactlab.llm.concurrency import DEFAULT_MAX_IN_FLIGHT, BudgetExhausted, CallAccount, Limits
from compactlab.llm.errors import BadAnswer, ContextOverflowError, LLMError, LLMUnavailable
from compactlab.llm.prices import DEFAULT_PRICES, ModelPrice, cost_of, price_for, resolve_prices
from compactlab.llm.summarizer import LLMSummarizer, RecordedSummarizer, summarize_many

__all__ = [
    "AnthropicClient",
    "BadAnswer",
    "BudgetExhausted",
    "CallAccount",
    "Limits",
    "CacheMiss",
    "CacheRequest",
    "Completion",
    "ContextOverflowError",
    "DEFAULT_PRICES",
    "LLMCache",
    "LLMClient",
    "LLMError",
    "LLMSummarizer",
    "LLMUnavailable",
    "ModelPrice",
    "OpenAIChatClient",
    "RecordedSummarizer",
    "cost_of",
    "make_summarizer",
    "price_for",
    "resolve_prices",
    "summarize_many",
]

DEFAULT_CACHE_DIR = Path(".compactlab") / "llm-cache"
Provider = Literal["openai", "anthropic", "recorded"]


def make_summarizer(
    provider: Provider | str,  # checked here: a configuration's provider is any string until then
    model: str,
    base_url: str | None = None,
    cache_dir: str | Path | None = DEFAULT_CACHE_DIR,
    mode: Mode = "use",
    api_key_env: str | None = None,
    prices: Mapping[str, object] | str | Path | None = None,
    max_retries: int = DEFAULT_MAX_RETRIES,
    timeout: float = DEFAULT_TIMEOUT,
    temperature: float | None = None,
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
    recorded_provider: str | None = None,
    requests_per_minute: float | None = None,
    tokens_per_minute: float | None = None,
) -> LLMSummarizer:
    """A summarizer for `provider` and `model`.

    "openai" covers every OpenAI-compatible server through `base_url` (a server without auth needs
    no key). `cache_dir=None` disables the cache (and with it offline replays). "recorded" reads
    the cache only; it uses a recording by any provider unless `recorded_provider` names one.
    `mode="offline"` with a real provider is the same, restricted to that provider.
    `max_in_flight`, `requests_per_minute` and `tokens_per_minute` bound the calls sent (see
    `compactlab.llm.concurrency`).
    """
    limits = Limits(max_in_flight, requests_per_minute, tokens_per_minute)  # checked even when no call is sent
    if provider == "recorded":
        if cache_dir is None:
            raise ValueError("the recorded summarizer needs cache_dir (where the recordings are)")
        return RecordedSummarizer(recorded_provider, model, cache_dir, prices=prices, temperature=temperature)
    if mode == "offline":
        if cache_dir is None:
            raise ValueError("offline mode needs cache_dir")
        # Offline needs no client: building one would demand a key that offline runs do not have.
        return RecordedSummarizer(provider, model, cache_dir, prices=prices, temperature=temperature)
    client: LLMClient
    if provider == "openai":
        client = OpenAIChatClient(
            model, base_url=base_url, api_key_env=api_key_env, max_retries=max_retries, timeout=timeout, temperature=temperature
        )
    elif provider == "anthropic":
        client = AnthropicClient(
            model, base_url=base_url, api_key_env=api_key_env, max_retries=max_retries, timeout=timeout, temperature=temperature
        )
    else:
        raise ValueError(f"unknown LLM provider {provider!r}; expected 'openai', 'anthropic' or 'recorded'")
    cache = LLMCache(cache_dir, mode) if cache_dir is not None else None
    return LLMSummarizer(client, cache, prices=prices, limits=limits)
