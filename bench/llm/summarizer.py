"""LLM summarizers for compaction strategies: a client, the call cache and the price table.

`LLMSummarizer` implements `strategies.base.Summarizer`: it sends `SummaryRequest.system` and
`.prompt` with `.max_output_tokens` as the output budget, looks the call up in the cache first,
and returns the text with the call's usage and cost. The cost is what the call costs at the
provider, also when the answer came from the cache, so a replay reports the same cost whether or
not it was recorded before.

Failures of the call (after the retries) and context overflows become `CompactionFailed`,
which the engine counts towards its failure breaker and strategies may answer with a fallback. A
`CacheMiss` in offline mode and `LLMUnavailable` (credentials refused, server unreachable) are
*not* turned into `CompactionFailed`: they are a broken setup, and a run must stop on them rather
than quietly fall back to another strategy at every compaction.

`RecordedSummarizer` is the offline, cache-only variant for CI: no client, no key, no network.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from bench.llm.cache import CacheMiss, CacheRequest, Completion, LLMCache
from bench.llm.clients import ContextOverflowError, LLMClient, LLMError, LLMUnavailable
from bench.llm.prices import ModelPrice, cost_of, resolve_prices
from strategies.base import CompactionFailed, Summarizer, SummaryRequest, SummaryResponse


class LLMSummarizer:
    """A `Summarizer` that asks an LLM, through the cache when one is given."""

    def __init__(
        self,
        client: LLMClient,
        cache: LLMCache | None = None,
        prices: Mapping[str, object] | str | Path | None = None,
        max_in_flight: int | None = None,
        name: str | None = None,
    ) -> None:
        if max_in_flight is not None and max_in_flight < 1:
            raise ValueError(f"max_in_flight must be >= 1, got {max_in_flight}")
        self.client = client
        self.cache = cache
        self.prices: dict[str, ModelPrice] = resolve_prices(prices)
        self.name = name or f"llm:{client.provider}:{client.model}"
        # Bounds calls actually sent to the provider, across every thread using this summarizer
        # (cache hits take no slot): the rate limit is per account, not per transcript.
        self._gate = threading.BoundedSemaphore(max_in_flight) if max_in_flight else None

    def close(self) -> None:
        """Release the client's connections (a no-op for clients that hold none)."""
        close = getattr(self.client, "close", None)
        if callable(close):
            close()

    def __enter__(self) -> LLMSummarizer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def cache_request(self, request: SummaryRequest) -> CacheRequest:
        params: dict[str, object] = {"max_tokens": request.max_output_tokens, **self.client.params()}
        return CacheRequest(self.client.provider, self.client.model, request.system, request.prompt, params)

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        if request.max_output_tokens < 1:
            raise CompactionFailed(f"{self.name}: max_output_tokens must be >= 1, got {request.max_output_tokens}")
        try:
            completion = self._complete(request)
        except ContextOverflowError as exc:
            raise CompactionFailed(f"{self.name}: the summary prompt is too long for the summarizer model ({exc})") from exc
        except LLMUnavailable:
            raise
        except LLMError as exc:
            raise CompactionFailed(f"{self.name}: {exc}") from exc
        if not completion.text.strip():
            # An empty summary would silently drop the whole history: treat it as a failure. (The
            # SDK clients already refuse one; other clients may not.)
            raise CompactionFailed(f"{self.name}: the model returned an empty summary (stop reason {completion.stop_reason!r})")
        usage = replace(completion.usage, cost_usd=cost_of(completion.usage, self.prices))
        return SummaryResponse(text=completion.text, usage=usage)

    def complete(self, system: str, prompt: str, max_tokens: int) -> SummaryResponse:
        """A plain completion (e.g. a judge's question) through the same cache, gate and prices.

        Unlike `summarize`, failures stay `LLMError` (an empty answer is one, as there).
        """
        request = SummaryRequest(messages=(), prompt=prompt, system=system, prompt_hash="", max_output_tokens=max_tokens)
        completion = self._complete(request)
        return SummaryResponse(text=completion.text, usage=replace(completion.usage, cost_usd=cost_of(completion.usage, self.prices)))

    def _complete(self, request: SummaryRequest) -> Completion:
        def call() -> Completion:
            if self._gate is None:
                return self.client.complete(request.system, request.prompt, request.max_output_tokens)
            with self._gate:
                return self.client.complete(request.system, request.prompt, request.max_output_tokens)

        if self.cache is None:
            return call()
        completion, _hit = self.cache.fetch(self.cache_request(request), call)
        return completion


class _RecordedOnly:
    """A client that is never called: it only names provider, model and parameters for the key."""

    def __init__(self, provider: str, model: str, temperature: float | None) -> None:
        self.provider, self.model = provider, model
        self.temperature = float(temperature) if temperature is not None else None

    def params(self) -> dict[str, object]:
        return {"temperature": self.temperature}  # the same parameters the real clients report

    def complete(self, system: str, prompt: str, max_tokens: int) -> Completion:
        raise AssertionError("a recorded summarizer never calls a provider")  # offline cache: CacheMiss first


RECORDING_PROVIDERS: tuple[str, ...] = ("openai", "anthropic")


class RecordedSummarizer(LLMSummarizer):
    """Replays recorded summaries only (CI): a call that was never recorded raises `CacheMiss`.

    `provider`, `model` and `temperature` must be those of the run that recorded the cache, since
    they are part of each call's key; with `provider=None` a recording by any provider of
    `RECORDING_PROVIDERS` is used. Named like the live summarizer ("llm:provider:model") so
    results read the same whether the summaries were fetched or replayed.
    """

    def __init__(
        self,
        provider: str | None,
        model: str,
        cache_dir: str | Path,
        prices: Mapping[str, object] | str | Path | None = None,
        temperature: float | None = None,
        name: str | None = None,
    ) -> None:
        self.providers = (provider,) if provider else RECORDING_PROVIDERS
        super().__init__(
            _RecordedOnly(self.providers[0], model, temperature),
            LLMCache(cache_dir, mode="offline"),
            prices=prices,
            name=name or f"llm:{provider or 'recorded'}:{model}",
        )

    def _complete(self, request: SummaryRequest) -> Completion:
        assert self.cache is not None
        wanted = self.cache_request(request)
        for provider in self.providers:
            candidate = replace(wanted, provider=provider)
            if self.cache.path_for(candidate.key()).exists():
                return self.cache.fetch(candidate, self.client_never_called)[0]
        try:
            return self.cache.fetch(wanted, self.client_never_called)[0]
        except CacheMiss as miss:
            if len(self.providers) == 1:
                raise
            others = ", ".join(self.providers[1:])
            raise CacheMiss(wanted, miss.key, self.cache.directory, f"nor a recording by provider(s) {others}") from None

    @staticmethod
    def client_never_called() -> Completion:
        raise AssertionError("a recorded summarizer never calls a provider")


def summarize_many(
    summarizer: Summarizer,
    requests: Iterable[SummaryRequest],
    max_workers: int = 4,
    return_exceptions: bool = False,
) -> list[SummaryResponse | BaseException]:
    """Summarize many requests in parallel, at most `max_workers` at once, results in input order.

    With `return_exceptions`, a failed request's exception takes its place in the list (one bad
    transcript does not stop the others); otherwise the first failure in input order is raised
    once the calls already running have finished, and calls not yet started are cancelled.
    """
    if max_workers < 1:
        raise ValueError(f"max_workers must be >= 1, got {max_workers}")
    items: Sequence[SummaryRequest] = list(requests)
    gate = threading.BoundedSemaphore(max_workers)

    def run(request: SummaryRequest) -> SummaryResponse:
        with gate:  # in-flight bound, independent of how the pool schedules its threads
            return summarizer.summarize(request)

    results: list[SummaryResponse | BaseException] = []
    with ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="summarize") as pool:
        futures: list[Future[SummaryResponse]] = [pool.submit(run, request) for request in items]
        for index, future in enumerate(futures):
            try:
                results.append(future.result())
            except Exception as exc:
                if not return_exceptions:
                    for pending in futures[index + 1:]:
                        pending.cancel()
                    raise
                results.append(exc)
    return results
