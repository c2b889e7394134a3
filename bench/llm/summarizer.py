"""LLM summarizers for compaction strategies: a client, the call cache and the price table.

`LLMSummarizer` implements `compactlab.contract.Summarizer`: it sends `SummaryRequest.system` and
`.prompt` with `.max_output_tokens` as the output budget, looks the call up in the cache first,
and returns the text with the call's usage and cost. The cost is what the call costs at the
provider, also when the answer came from the cache, so a replay reports the same cost whether or
not it was recorded before.

Failures of the call (after the retries) and context overflows become `CompactionFailed`,
which the engine counts towards its failure breaker and strategies may answer with a fallback. A
`CacheMiss` in offline mode and `LLMUnavailable` (credentials refused, server unreachable) are
*not* turned into `CompactionFailed`: they are a broken setup, and a run must stop on them rather
than quietly fall back to another strategy at every compaction.

Calls actually sent (cache misses) go through the summarizer's `ProviderGate` (in-flight bound,
rate limits, 429 waits) and, during a run, the run's `CallAccount` (cost budget, progress counts):
see `compactlab.llm.concurrency`.

`RecordedSummarizer` is the offline, cache-only variant for CI: no client, no key, no network.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from compactlab.contract import CompactionFailed, Summarizer, SummaryRequest, SummaryResponse
from compactlab.llm.cache import CacheMiss, CacheRequest, Completion, LLMCache
from compactlab.llm.clients import LLMClient
from compactlab.llm.concurrency import CallAccount, Limits, ProviderGate, estimated_cost
from compactlab.llm.errors import BadAnswer, ContextOverflowError, LLMError, LLMUnavailable
from compactlab.llm.prices import ModelPrice, cost_of, price_for, resolve_prices
from compactlab.sessions.model import LLMCall
from compactlab.tokens.tokenizers import get_encoding


class LLMSummarizer:
    """A `Summarizer` that asks an LLM, through the cache when one is given."""

    sends_calls = True  # to a provider (the recorded summarizer only reads its cache)

    def __init__(
        self,
        client: LLMClient,
        cache: LLMCache | None = None,
        prices: Mapping[str, object] | str | Path | None = None,
        limits: Limits | None = None,
        name: str | None = None,
    ) -> None:
        self.client = client
        self.cache = cache
        self.prices: dict[str, ModelPrice] = resolve_prices(prices)
        self.name = name or f"llm:{client.provider}:{client.model}"
        # Bounds calls actually sent to the provider, across every thread using this summarizer
        # (cache hits take no slot): the rate limit is per account, not per session. A run
        # gives summarizers of one provider account one gate (`compactlab.llm.concurrency.shared_gates`).
        self.limits = limits or Limits()
        self.gate = ProviderGate(self.limits)
        self.account: CallAccount | None = None  # set for the duration of a run

    @property
    def provider_account(self) -> tuple:
        """Who the limits apply to: the provider at its address (a local server is an account of its own)."""
        return (self.client.provider, getattr(self.client, "base_url", None))

    def price(self) -> ModelPrice | None:
        return price_for(self.client.model, self.prices)

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

    def summarize_all(self, requests: Sequence[SummaryRequest]) -> list[SummaryResponse]:
        """Independent summaries of one compaction (its history and its turn prefix), asked at
        once; in order, the first failure in order raised once both calls are over."""
        return summarize_many(self, requests, max_workers=max(1, len(requests)))  # type: ignore[return-value]

    def complete(self, system: str, prompt: str, max_tokens: int) -> SummaryResponse:
        """A plain completion (e.g. a judge's question) through the same cache, gate and prices.

        Unlike `summarize`, failures stay `LLMError` (an empty answer is one, as there).
        """
        request = SummaryRequest(messages=(), prompt=prompt, system=system, prompt_hash="", max_output_tokens=max_tokens)
        completion = self._complete(request)
        return SummaryResponse(
            text=completion.text, usage=replace(completion.usage, cost_usd=cost_of(completion.usage, self.prices))
        )

    def _complete(self, request: SummaryRequest) -> Completion:
        account = self.account

        def call() -> Completion:
            return self._send(request, account)

        if self.cache is None:
            return call()
        completion, hit = self.cache.fetch(self.cache_request(request), call)
        if hit and account is not None:
            account.cache_hit()
        return completion

    def _send(self, request: SummaryRequest, account: CallAccount | None) -> Completion:
        """One call to the provider, within its gate and the run's budget."""
        price = self.price()
        budgeted = account is not None and account.max_cost_usd is not None
        tokens = 0
        if budgeted or self.limits.tokens_per_minute:  # counting a long prompt is worth it only then
            encoding = get_encoding("o200k_base")
            tokens = sum(len(encoding.encode(text, disallowed_special=())) for text in (request.system, request.prompt))
        reserved = 0.0
        if account is not None:
            estimate = estimated_cost(price, self.client.model, tokens, request.max_output_tokens) if budgeted and price else 0.0
            reserved = account.reserve(self.client.provider, self.client.model, estimate)
        billed: tuple[LLMCall, ...] = ()
        usable = False
        try:
            completion = self.gate.send(
                lambda: self.client.complete(request.system, request.prompt, request.max_output_tokens),
                tokens + request.max_output_tokens,
                account,
                (self.client.provider, self.client.model),
            )
            billed = (completion.usage,)
            # What the SDK clients refuse already, refused from any client: never recorded, never a summary.
            if not completion.text.strip():
                raise BadAnswer(self.client.provider, self.client.model, "empty answer", billed)
            if completion.cut_off:
                raise BadAnswer(
                    self.client.provider, self.client.model, completion.cut_off_reason(request.max_output_tokens), billed
                )
            usable = True
            return completion
        except BadAnswer as exc:
            billed = exc.billed
            raise
        finally:
            if account is not None:
                # A failed call is not billed, but for answers cut off at their budget (the provider
                # bills those in full); a cost unknown to the table counts as the estimate.
                costs = [cost_of(usage, self.prices) for usage in billed]
                cost = None if any(c is None for c in costs) else sum(c for c in costs if c is not None)
                account.settle(reserved, cost if billed else 0.0)
                account.answered(usable)


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

    sends_calls = False

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
                completion = self.cache.fetch(candidate, self.client_never_called)[0]
                if self.account is not None:
                    self.account.cache_hit()
                return completion
        try:
            completion = self.cache.fetch(wanted, self.client_never_called)[0]
        except CacheMiss as miss:
            if len(self.providers) == 1:
                raise
            others = ", ".join(self.providers[1:])
            raise CacheMiss(wanted, miss.key, self.cache.directory, f"nor a recording by provider(s) {others}") from None
        if self.account is not None:
            self.account.cache_hit()
        return completion

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
    session does not stop the others); otherwise the first failure in input order is raised
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
                    for pending in futures[index + 1 :]:
                        pending.cancel()
                    raise
                results.append(exc)
    return results
