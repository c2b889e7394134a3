"""Issue 45's LLM faults: an answer cut off at its output budget, a server that trickles its answer,
an answer bigger than its budget can fill, and a 429 that says the quota is used up.

Against the local wire-format server (tests/fake_providers.py) through the real SDKs, with small
timeouts (the trickle lasts 5 s; each test's deadline is 0.5 s).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from compactlab.contract import CompactionFailed
from compactlab.llm import BadAnswer, LLMCache, LLMError, LLMSummarizer, LLMUnavailable, RecordedSummarizer
from compactlab.llm.cache import CacheMiss, Completion
from compactlab.llm.concurrency import CallAccount, run_calls
from compactlab.llm.prices import cost_of
from compactlab.sessions.model import LLMCall
from tests.fake_behaviours import (
    MAX_STALL_SECONDS,
    Behaviour,
    huge_answer,
    length_stop,
    ok,
    quota_exceeded,
    rate_limited,
    trickle,
)
from tests.fake_providers import FakeProvider
from tests.llm.support import MODELS, PROVIDERS, cache_files, client, request


@pytest.mark.parametrize("kind", PROVIDERS)
def test_an_answer_cut_off_at_its_budget_is_a_failed_call_billed_and_never_cached(
    kind: str, server: FakeProvider, tmp_path: Path
) -> None:
    server.queue(length_stop(), length_stop(), length_stop())
    summarizer = LLMSummarizer(client(kind, server, max_retries=2), LLMCache(tmp_path))
    account = CallAccount()
    with run_calls([summarizer], account), pytest.raises(CompactionFailed, match="cut off at its output budget of 256") as raised:
        summarizer.summarize(request())
    assert isinstance(raised.value.__cause__, BadAnswer) and "3 attempt(s)" in str(raised.value)
    assert server.count() == 3 and cache_files(tmp_path) == []  # retried as configured, nothing recorded
    # Counted as a failed call, and billed: the provider charges a cut-off answer's tokens in full.
    one = cost_of(summarizer.client.complete("s", "p", 256).usage, summarizer.prices)  # (the server's usage, priced)
    assert (account.failed, account.done) == (1, 0) and one and account.spent == pytest.approx(3 * one)
    assert server.count() == 4
    # A warm rerun asks again (nothing was recorded) and gets a whole answer.
    assert summarizer.summarize(request()).text.startswith("Summary of:")


def test_a_recorded_cut_off_answer_is_not_replayed_nor_recorded(server: FakeProvider, tmp_path: Path) -> None:
    summarizer = LLMSummarizer(client("openai", server), LLMCache(tmp_path))
    key_request = summarizer.cache_request(request())
    path = LLMCache(tmp_path).put(key_request, Completion("the whole summary", LLMCall(MODELS["openai"], input_tokens=1)))
    document = json.loads(path.read_text())
    document["response"]["stop_reason"] = "length"  # as a version that cached cut-off answers wrote it
    path.write_text(json.dumps(document))
    with pytest.raises(CacheMiss, match="cut off at its output budget of 256 tokens"):
        RecordedSummarizer("openai", MODELS["openai"], tmp_path).summarize(request())
    assert summarizer.summarize(request()).text.startswith("Summary of:")  # "use" mode asks again
    assert server.count() == 1 and json.loads(path.read_text())["response"]["stop_reason"] == "stop"
    with pytest.raises(ValueError, match="cut off.*never recorded"):
        LLMCache(tmp_path).put(key_request, Completion("x", LLMCall("m", input_tokens=1), stop_reason="max_tokens"))


@pytest.mark.parametrize("kind", PROVIDERS)
@pytest.mark.parametrize("retries", [0, 1])
def test_the_timeout_is_each_attempts_total_time_against_a_trickle(kind: str, retries: int, server: FakeProvider) -> None:
    # A byte every 0.1 s: every read gets one, so httpx's per-read timeout never fires, and on its
    # own the answer takes the trickle's 5 s and arrives whole.
    server.otherwise = trickle(every=0.1, seconds=MAX_STALL_SECONDS)
    made = client(kind, server, max_retries=retries, timeout=0.5)
    started = time.monotonic()
    with pytest.raises(LLMError, match="timed out") as raised:
        made.complete("s", "Summarize.", 256)
    elapsed = time.monotonic() - started
    assert not isinstance(raised.value, LLMUnavailable)  # a failed call, not a server that cannot be reached
    assert server.count() == retries + 1  # each attempt its own deadline, retried as configured
    # 0.5 s per attempt plus the SDK's backoff between them (at most 1 s): far from the trickle's 5 s.
    assert elapsed < MAX_STALL_SECONDS - 1


@pytest.mark.parametrize("kind", PROVIDERS)
def test_an_answer_bigger_than_its_budget_can_fill_is_refused(kind: str, server: FakeProvider, tmp_path: Path) -> None:
    # 256 tokens may take 64 KiB plus 256 bytes each (compactlab.llm.attempts): 2 MB is fifteen times that.
    server.queue(huge_answer(2.0), huge_answer(2.0))
    summarizer = LLMSummarizer(client(kind, server, max_retries=1), LLMCache(tmp_path))
    with pytest.raises(CompactionFailed, match=r"larger than 131,072 bytes.*\(256 tokens\): refused") as raised:
        summarizer.summarize(request())
    assert isinstance(raised.value.__cause__, BadAnswer) and "2 attempt(s)" in str(raised.value)
    assert server.count() == 2 and cache_files(tmp_path) == []
    # An answer that fits its budget is taken as before.
    assert summarizer.summarize(request()).text.startswith("Summary of:")


def test_a_recorded_answer_bigger_than_its_budget_is_not_read(server: FakeProvider, tmp_path: Path) -> None:
    summarizer = LLMSummarizer(client("openai", server), LLMCache(tmp_path))
    path = LLMCache(tmp_path).put(
        summarizer.cache_request(request()), Completion("a summary", LLMCall(MODELS["openai"], input_tokens=1))
    )
    document = json.loads(path.read_text())
    document["response"]["text"] = huge_answer(2.0).text  # a recorded answer written by hand, or damaged
    path.write_text(json.dumps(document))
    with pytest.raises(CacheMiss, match=r"larger than 131,072 bytes, more than an answer of its max_tokens can take"):
        RecordedSummarizer("openai", MODELS["openai"], tmp_path).summarize(request())
    assert summarizer.summarize(request()).text.startswith("Summary of:")  # "use" mode asks again and replaces it
    assert server.count() == 1 and path.stat().st_size < 10_000


@pytest.mark.parametrize("kind", PROVIDERS)
def test_an_out_of_quota_429_is_final_and_a_rate_limit_is_still_retried(kind: str, server: FakeProvider) -> None:
    server.queue(quota_exceeded(), quota_exceeded(), quota_exceeded())
    summarizer = LLMSummarizer(client(kind, server, max_retries=2))
    with pytest.raises(LLMUnavailable, match="HTTP 429.*the account's quota is used up"):
        summarizer.summarize(request())
    assert server.count() == 1  # neither the SDK nor the gate sent it again
    server.script.clear()
    server.queue(rate_limited(retry_after_ms="10"), ok("after the wait"))
    assert summarizer.summarize(request()).text == "after the wait"
    assert server.count() == 3


def test_anthropics_billing_error_is_final(server: FakeProvider) -> None:
    body = {"type": "error", "error": {"type": "billing_error", "message": "Your credit balance is too low."}}
    server.queue(Behaviour("error", status=402, bodies=({"error": body["error"]}, body)))
    with pytest.raises(LLMUnavailable, match="HTTP 402.*quota is used up"):
        LLMSummarizer(client("anthropic", server, max_retries=2)).summarize(request())
    assert server.count() == 1
