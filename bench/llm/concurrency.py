"""How many LLM calls a run sends at once and per minute, what it may spend, and what it did.

A run replays its (session, setting) pairs side by side in threads of one process while their
calls wait on the provider (`compactlab.runs.concurrent_replays`). Each call goes through:

- its provider's `ProviderGate`: at most `max_in_flight` calls sent at once, and, when configured,
  `requests_per_minute` and `tokens_per_minute` (token buckets refilled continuously, full at the
  start, as providers meter them). A call's tokens are its prompt's estimate plus its output
  budget, which is what OpenAI counts against a token limit. A 429 (`RateLimited`) pauses every
  sender of that provider for the server's `retry-after` (or a doubling backoff from 1 s up to
  60 s when it gives none) and the call is sent again: rate-limit waits slow a run, they are never
  failures, however many there are.
- the run's `CallAccount`: the cost budget (`max_cost_usd`) and the counts progress shows. Before a
  call is sent its cost is estimated from the prompt's size and the price table (the output at its
  full budget: an upper bound) and reserved; the call is refused with `BudgetExhausted` when what
  was spent plus what calls in flight reserved plus this estimate would pass the budget. From then
  on every call is refused, so the run stops at once; what was paid for is in the call cache, and
  `--resume` replays it for nothing.
- a provider that cannot be used (a refused key, 401 or 403): the run stops at its first such
  answer. No call is sent after it, and the calls in flight are cancelled (`CallAccount.unusable`
  cancels each client's `cancellation`, registered by `run_calls`): their connections are shut
  down, so they end at once instead of when the server answers (`compactlab.llm.cancellation`).
  Calls in flight when the budget stops a run finish: they were within the budget.

One process holds a run's gates: an LLM-bound run replays in threads, never in worker processes,
so the bound holds across the whole run with plain locks (see `compactlab.runs.concurrent_replays`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

from compactlab.llm.errors import LLMUnavailable, RateLimited, RequestCancelled
from compactlab.llm.prices import ModelPrice, cost_of
from compactlab.sessions.model import LLMCall

T = TypeVar("T")

DEFAULT_MAX_IN_FLIGHT = 8
MAX_BACKOFF = 60.0  # seconds: the longest pause after 429s that named no wait
INPUT_MARGIN = 1.1  # providers' tokenizers count up to ~10% more than o200k on code and logs


@dataclass(frozen=True)
class Limits:
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None

    def __post_init__(self) -> None:
        if isinstance(self.max_in_flight, bool) or not isinstance(self.max_in_flight, int) or self.max_in_flight < 1:
            raise ValueError(f"max_in_flight must be a whole number >= 1, got {self.max_in_flight!r}")
        for name in ("requests_per_minute", "tokens_per_minute"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
                raise ValueError(f"{name} must be a number > 0, got {value!r}")

    def tighter(self, other: Limits) -> Limits:
        """The limits that keep both: two tables (summarizer and judge) naming one provider account share them."""

        def low(a, b):
            return b if a is None else a if b is None else min(a, b)

        return Limits(
            min(self.max_in_flight, other.max_in_flight),
            low(self.requests_per_minute, other.requests_per_minute),
            low(self.tokens_per_minute, other.tokens_per_minute),
        )


class BudgetExhausted(LLMUnavailable):
    """The next call would pass the run's `max_cost_usd`: the run stops before sending it."""

    def __init__(self, provider: str, model: str, budget: float, spent: float, estimate: float) -> None:
        super().__init__(provider, model, "cost budget reached")
        # A budget stop, not a failed call: nothing went wrong with the provider, and no call was sent.
        self.args = (
            f"the run's cost budget max_cost_usd = {budget:g} USD is reached: {spent:.4f} USD spent, the next call "
            f"({provider} {model}) is estimated at {estimate:.4f} USD, so it was not sent (no call failed)",
        )
        self.budget, self.spent = budget, spent


class RunStopped(LLMUnavailable):
    """The run is stopping (another call hit the budget or an unusable provider): no new call is sent."""


class _Bucket:
    """`per_minute` units, refilled continuously; a take larger than the bucket waits for a full one."""

    def __init__(self, per_minute: float) -> None:
        self.capacity, self.rate = float(per_minute), per_minute / 60.0
        self.level, self.stamp = self.capacity, time.monotonic()

    def wait_for(self, amount: float, now: float) -> float:
        """Seconds until `amount` can be taken (0: take it now)."""
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now
        needed = min(amount, self.capacity)
        return 0.0 if self.level >= needed else (needed - self.level) / self.rate

    def take(self, amount: float) -> None:
        self.level -= amount  # may go below zero: a call bigger than the bucket is paid off afterwards


class ProviderGate:
    """The limits of one provider account, shared by every thread that calls it (see the module docstring)."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._slots = threading.BoundedSemaphore(limits.max_in_flight)
        self._lock = threading.Lock()
        self._requests = _Bucket(limits.requests_per_minute) if limits.requests_per_minute else None
        self._tokens = _Bucket(limits.tokens_per_minute) if limits.tokens_per_minute else None
        self._paused_until = 0.0
        self._backoff = 1.0

    def send(self, call: Callable[[], T], tokens: int, account: CallAccount | None = None, who: tuple[str, str] = ("", "")) -> T:
        """`call()` within the limits, sent again after each 429 (counted in `account.rate_limited`);
        never once the run is stopping (`who`: the provider and model, for the error)."""
        while True:
            self._wait_turn(tokens)
            with self._slots:
                if account is not None:
                    account.check_running(*who)  # it may have stopped while this call waited for a slot
                    account.sending()
                try:
                    result = call()
                except RateLimited as exc:
                    self._pause(exc.retry_after)
                    if account is not None:
                        account.rate_limited_once()
                    continue
                except LLMUnavailable as exc:
                    if account is not None and not isinstance(exc, (RunStopped, RequestCancelled)):
                        # Before the slot is let go: a call waiting for it must find the run stopped.
                        account.unusable(exc)
                    raise
                finally:
                    if account is not None:
                        account.sent()
            with self._lock:
                self._backoff = 1.0
            return result

    def _wait_turn(self, tokens: int) -> None:
        while True:
            with self._lock:
                now = time.monotonic()
                wait = max(
                    self._paused_until - now,
                    self._requests.wait_for(1, now) if self._requests else 0.0,
                    self._tokens.wait_for(tokens, now) if self._tokens else 0.0,
                )
                if wait <= 0:
                    if self._requests:
                        self._requests.take(1)
                    if self._tokens:
                        self._tokens.take(tokens)
                    return
            time.sleep(wait)

    def _pause(self, retry_after: float | None) -> None:
        with self._lock:
            wait = retry_after if retry_after is not None else self._backoff
            self._backoff = min(MAX_BACKOFF, self._backoff * 2)
            self._paused_until = max(self._paused_until, time.monotonic() + min(wait, MAX_BACKOFF))


def estimated_cost(price: ModelPrice, model: str, prompt_tokens: int, max_output_tokens: int) -> float:
    """An upper estimate of a call's cost: the prompt uncached (with `INPUT_MARGIN`), the output at its full budget."""
    call = LLMCall(model=model, input_tokens=round(prompt_tokens * INPUT_MARGIN), output_tokens=max_output_tokens)
    return cost_of(call, {model: price}) or 0.0


class CallAccount:
    """A run's LLM calls: counts for progress, the cost spent, and the budget (see the module docstring).

    `on_change` is called (from whichever thread made the change) after every count changes."""

    def __init__(self, max_cost_usd: float | None = None, on_change: Callable[[CallAccount], None] | None = None) -> None:
        if max_cost_usd is not None and (
            isinstance(max_cost_usd, bool) or not isinstance(max_cost_usd, (int, float)) or max_cost_usd < 0
        ):
            raise ValueError(f"max_cost_usd must be a number of US dollars >= 0, got {max_cost_usd!r}")
        self.max_cost_usd = max_cost_usd
        self.on_change = on_change
        self.done = self.in_flight = self.cached = self.failed = self.rate_limited = 0
        self.spent = 0.0
        self.unpriced = 0  # calls whose actual cost is unknown: their estimate is counted instead
        self.stopped: str | None = None  # why no call is sent any more
        # What stopped the run: the budget, or a provider that cannot be used (a refused key: one 401
        # or 403 stops every call, none is sent after it, as no later call can do better).
        self.stop_error: LLMUnavailable | None = None
        self._reserved = 0.0
        self._lock = threading.Lock()
        # What ends the calls in flight when a provider cannot be used (`run_calls` registers each
        # client's `cancellation.cancel`).
        self.cancellers: list[Callable[[], None]] = []

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change(self)

    def reserve(self, provider: str, model: str, estimate: float) -> float:
        """Book `estimate` for a call about to be sent; `BudgetExhausted` (and a stopped run) when it would not fit."""
        with self._lock:
            if self.stopped is not None:
                raise RunStopped(provider, model, self.stopped)
            if self.max_cost_usd is not None and self.spent + self._reserved + estimate > self.max_cost_usd:
                error = self.stop_error = BudgetExhausted(provider, model, self.max_cost_usd, self.spent, estimate)
                self.stopped = str(error)
                raise error
            self._reserved += estimate
        return estimate

    def settle(self, reserved: float, cost: float | None) -> None:
        """A sent call's actual cost replaces its reservation (a failed call: `cost` 0; unknown: the estimate)."""
        with self._lock:
            self._reserved -= reserved
            if cost is None:
                self.unpriced += 1
                cost = reserved
            self.spent += cost
        self._changed()

    def stop(self, why: str) -> None:
        with self._lock:
            self.stopped = self.stopped or why

    def unusable(self, error: LLMUnavailable) -> None:
        """A provider refused the key or cannot be reached: the run stops, no call is sent after this
        one, and the calls in flight are cancelled."""
        with self._lock:
            if self.stop_error is None:
                self.stop_error = error
            self.stopped = self.stopped or str(error)
            cancellers = list(self.cancellers)
        for cancel in cancellers:
            cancel()

    def check_running(self, provider: str, model: str) -> None:
        """`RunStopped` once the run is stopping: a call that waited for its turn is not sent then."""
        if self.stopped is not None:
            raise RunStopped(provider, model, self.stopped)

    def sending(self) -> None:
        with self._lock:
            self.in_flight += 1
        self._changed()

    def sent(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def answered(self, ok: bool) -> None:
        with self._lock:
            if ok:
                self.done += 1
            else:
                self.failed += 1
        self._changed()

    def cache_hit(self) -> None:
        with self._lock:
            self.cached += 1
        self._changed()

    def rate_limited_once(self) -> None:
        with self._lock:
            self.rate_limited += 1
        self._changed()

    def line(self) -> str:
        """What progress shows: calls done, in flight, cached, failed, rate-limited waits, cost so far."""
        budget = f" of {self.max_cost_usd:g}" if self.max_cost_usd is not None else ""
        waits = f", {self.rate_limited} rate-limited waits" if self.rate_limited else ""
        return (
            f"LLM calls: {self.done} done, {self.in_flight} in flight, {self.cached} cached, {self.failed} failed{waits}; "
            f"{self.spent:.4f}{budget} USD"
        )


def shared_gates(limits_by_account: Iterable[tuple[tuple, Limits]]) -> dict[tuple, ProviderGate]:
    """One gate per provider account (`(provider, base_url, api key variable)`), with the tighter
    limits where several tables name the same account."""
    merged: dict[tuple, Limits] = {}
    for account, limits in limits_by_account:
        merged[account] = merged[account].tighter(limits) if account in merged else limits
    return {account: ProviderGate(limits) for account, limits in merged.items()}


def llm_completers(summarizer: object, judge: object) -> list:
    """The run's LLM completers (`LLMSummarizer`s: the summarizer, the judge's, its grader's) that
    book calls; other summarizers (the extractive one, a test's) are called as they are."""
    candidates = (summarizer, getattr(judge, "completer", judge), getattr(judge, "grader", None))
    return list({id(c): c for c in candidates if c is not None and hasattr(c, "gate") and hasattr(c, "account")}.values())


def default_replay_threads(completers: Iterable) -> int:
    """Replays to run side by side: twice the calls the providers let through at once, so that
    while some replays work between their calls, others' calls fill every slot."""
    gates = shared_gates((c.provider_account, c.limits) for c in completers)
    return max(1, 2 * sum(gate.limits.max_in_flight for gate in gates.values()))


def check_budget_prices(completers: Iterable, account: CallAccount) -> None:
    """A budget needs each model that calls are sent to to have a price: an error before the run otherwise."""
    if account.max_cost_usd is None:
        return
    for completer in completers:
        if completer.sends_calls and completer.price() is None:
            raise ValueError(
                f"max_cost_usd: the model {completer.client.model!r} has no price, so its calls' cost cannot be "
                f'bounded; add a [prices."{completer.client.model}"] table to the configuration'
            )


@contextmanager
def run_calls(completers: Iterable, account: CallAccount) -> Iterator[list[ProviderGate]]:
    """For the duration of a run: LLM completers (`LLMSummarizer`s) of one provider account share
    one gate, and all of them book their calls in `account`, which cancels their clients' calls in
    flight when a provider cannot be used. Yields the gates."""
    completers = list({id(c): c for c in completers}.values())
    gates = shared_gates((c.provider_account, c.limits) for c in completers)
    saved = [(c, c.gate, c.account) for c in completers]
    cancellations = [c.client.cancellation for c in completers if hasattr(c.client, "cancellation")]
    cancellations = list({id(c): c for c in cancellations}.values())
    account.cancellers += [cancellation.cancel for cancellation in cancellations]
    for completer in completers:
        completer.gate, completer.account = gates[completer.provider_account], account
    try:
        yield list(gates.values())
    finally:
        for cancellation in cancellations:
            cancellation.allow()  # a client used again in a later run sends again
        for completer, gate, previous in saved:
            completer.gate, completer.account = gate, previous
