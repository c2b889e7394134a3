"""The LLM layer against local servers that speak each provider's wire format.

The real `openai` and `anthropic` SDKs send real HTTP to `tests/fake_providers.py` on 127.0.0.1,
so retries, timeouts and error parsing are the SDKs' own. Timeouts are short (1 s) and servers
hint `retry-after-ms: 10` where the test is about retrying, not about the SDK's backoff.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from compactlab.contract import CompactionFailed
from compactlab.llm import (
    AnthropicClient,
    ContextOverflowError,
    Limits,
    LLMCache,
    LLMError,
    LLMSummarizer,
    LLMUnavailable,
    ModelPrice,
    OpenAIChatClient,
    cost_of,
    make_summarizer,
    price_for,
    resolve_prices,
    summarize_many,
)
from compactlab.llm.clients import NO_AUTH_KEY
from compactlab.llm.prices import load_prices_toml
from compactlab.sessions.model import LLMCall
from tests.fake_behaviours import (
    MAX_STALL_SECONDS,
    bad_request,
    context_overflow,
    echo_credentials,
    ok,
    rate_limited,
    server_error,
    stall,
)
from tests.fake_providers import ANTHROPIC_PATH, OPENAI_PATH, FakeProvider
from tests.llm.support import MODELS, OPEN, PROVIDERS, SECRET, cache_files, client, request

# --- usage mapping and cost ---------------------------------------------------------------------


def test_openai_usage_mapping_request_and_cost(server: FakeProvider) -> None:
    server.queue(
        ok(
            "The summary.",
            usage={
                "prompt_tokens": 1000,
                "completion_tokens": 50,
                "total_tokens": 1050,
                "prompt_tokens_details": {"cached_tokens": 600},
            },
        )
    )
    completion = client("openai", server).complete("sys", "the prompt", 77)
    assert completion.text == "The summary."
    assert completion.stop_reason == "stop"
    # prompt_tokens includes the cached part: input is the uncached rest.
    assert completion.usage == LLMCall(
        "gpt-4o-mini",
        input_tokens=400,
        cache_read_tokens=600,
        cache_write_tokens=0,
        output_tokens=50,
        request_id="chatcmpl-fake1",
    )
    sent = server.received[0]
    assert sent.path == OPENAI_PATH
    assert sent.body["messages"] == [{"role": "system", "content": "sys"}, {"role": "user", "content": "the prompt"}]
    assert sent.body["max_tokens"] == 77 and sent.body["model"] == "gpt-4o-mini"
    assert "temperature" not in sent.body  # only sent when configured
    assert sent.credential_sha256 == hashlib.sha256(SECRET.encode()).hexdigest()
    # gpt-4o-mini: 400 x 0.15 + 600 x 0.075 + 50 x 0.60 per million.
    assert cost_of(completion.usage) == pytest.approx((400 * 0.15 + 600 * 0.075 + 50 * 0.60) / 1e6)


def test_deepseek_cache_hits_through_the_openai_client(server: FakeProvider) -> None:
    # DeepSeek reports its cached part as prompt_cache_hit_tokens, as the importers read it.
    usage = {
        "prompt_tokens": 900,
        "completion_tokens": 10,
        "total_tokens": 910,
        "prompt_cache_hit_tokens": 800,
        "prompt_cache_miss_tokens": 100,
    }
    server.queue(ok(usage=usage))
    call = client("openai", server, model="deepseek-chat").complete("", "p", 10).usage
    assert (call.input_tokens, call.cache_read_tokens, call.output_tokens) == (100, 800, 10)
    assert [m["role"] for m in server.received[0].body["messages"]] == ["user"]  # no empty system message
    assert cost_of(call) == pytest.approx((100 * 0.28 + 800 * 0.028 + 10 * 0.42) / 1e6)


def test_anthropic_usage_mapping_request_and_cost(server: FakeProvider) -> None:
    usage = {"input_tokens": 50, "output_tokens": 40, "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 200}
    server.queue(ok("Claude's summary.", usage=usage))
    completion = client("anthropic", server, temperature=0).complete("sys", "the prompt", 99)
    assert completion.text == "Claude's summary."
    assert completion.stop_reason == "end_turn"
    # input_tokens is already the uncached part.
    assert completion.usage == LLMCall(
        "claude-haiku-4-5",
        input_tokens=50,
        cache_read_tokens=1000,
        cache_write_tokens=200,
        output_tokens=40,
        request_id="req_fake1",
    )
    sent = server.received[0]
    assert sent.path == ANTHROPIC_PATH
    assert sent.body == {
        "model": "claude-haiku-4-5",
        "max_tokens": 99,
        "system": "sys",
        "messages": [{"role": "user", "content": "the prompt"}],
        "temperature": 0.0,
    }
    assert "anthropic-version" in sent.headers and sent.had_credentials
    assert cost_of(completion.usage) == pytest.approx((50 * 1.0 + 1000 * 0.10 + 200 * 1.25 + 40 * 5.0) / 1e6)


def test_price_lookup_longest_prefix_and_no_guessing() -> None:
    assert price_for("claude-sonnet-4-5-20250929") == price_for("claude-sonnet-4-5")
    assert price_for("gpt-4o-mini-2024-07-18").input == 0.15  # not gpt-4o's price
    assert price_for("gpt-4o-2024-05-13").input == 5.0  # a snapshot with its own price wins
    assert price_for("anthropic/claude-haiku-4-5").output == 5.0  # router prefixes are ignored
    for unknown in ("gpt-5.4", "claude-sonnet-4-7", "o3", "llama3.1:8b", "gpt-4"):
        assert price_for(unknown) is None, unknown
        assert cost_of(LLMCall(unknown, input_tokens=10)) is None
    # A cached read on a model without cache pricing has no known cost.
    assert cost_of(LLMCall("gpt-5-pro", input_tokens=10, cache_read_tokens=5)) is None
    assert cost_of(LLMCall("gpt-5-pro", input_tokens=1_000_000)) == pytest.approx(15.0)


def test_long_context_tier() -> None:
    short = cost_of(LLMCall("gemini-2.5-pro", input_tokens=200_000, output_tokens=1000))
    long = cost_of(LLMCall("gemini-2.5-pro", input_tokens=200_001, output_tokens=1000))
    assert short == pytest.approx((200_000 * 1.25 + 1000 * 10) / 1e6)
    assert long == pytest.approx((200_001 * 2.50 + 1000 * 15) / 1e6)


def test_price_overrides_from_dict_and_toml(tmp_path: Path) -> None:
    table = resolve_prices(
        {"llama3.1": {"input": 0, "output": 0}, "gpt-4o-mini": ModelPrice(input=1.0, output=2.0, cache_read=0.5)}
    )
    assert cost_of(LLMCall("llama3.1:8b", input_tokens=500, output_tokens=20), table) == 0.0
    assert cost_of(LLMCall("gpt-4o-mini", input_tokens=1_000_000, cache_read_tokens=1_000_000), table) == pytest.approx(1.5)
    assert cost_of(LLMCall("llama3.1:8b", input_tokens=1, cache_read_tokens=1), table) is None  # no cache price given
    path = tmp_path / "prices.toml"
    path.write_text('[prices."my-model"]\ninput = 2.0\ncache_read = 0.2\ncache_write = 2.5\noutput = 8.0\n')
    assert load_prices_toml(path)["my-model"] == ModelPrice(input=2.0, output=8.0, cache_read=0.2, cache_write=2.5)
    assert cost_of(
        LLMCall("my-model-v2", input_tokens=1_000_000, cache_write_tokens=1_000_000), resolve_prices(path)
    ) == pytest.approx(4.5)
    path.write_text('[prices."bad"]\ninput = 1.0\n')
    with pytest.raises(ValueError, match="missing output"):
        load_prices_toml(path)


def test_a_none_input_or_output_price_is_missing() -> None:
    # A dict (unlike TOML) can say None: it used to build a price that failed in the first cost_of.
    with pytest.raises(ValueError, match="'my-model': missing input"):
        resolve_prices({"my-model": {"input": None, "output": 1.0}})
    with pytest.raises(ValueError, match="missing output"):
        resolve_prices({"my-model": {"input": 1.0, "output": None, "cache_read": None}})


# --- retries ------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", PROVIDERS)
def test_rate_limit_is_retried_then_succeeds(kind: str, server: FakeProvider) -> None:
    server.queue(rate_limited(retry_after="0"), rate_limited(retry_after_ms="10"), ok("finally"))
    assert client(kind, server, max_retries=2).complete("s", "p", 10).text == "finally"
    assert server.count() == 3
    assert [r.headers.get("x-stainless-retry-count") for r in server.received] == ["0", "1", "2"]  # the SDK's own retries


@pytest.mark.parametrize("kind", PROVIDERS)
def test_server_errors_are_retried(kind: str, server: FakeProvider) -> None:
    server.queue(server_error(529 if kind == "anthropic" else 503), server_error(500), ok("recovered"))
    assert client(kind, server).complete("s", "p", 10).text == "recovered"
    assert server.count() == 3


@pytest.mark.parametrize("kind", PROVIDERS)
def test_server_errors_exhaust_retries(kind: str, server: FakeProvider) -> None:
    server.queue(*[server_error(500)] * 3)
    with pytest.raises(LLMError) as raised:
        client(kind, server, max_retries=2).complete("s", "p", 10)
    assert server.count() == 3
    error = raised.value
    assert error.status == 500 and error.provider == kind and error.model == MODELS[kind]
    assert f"{kind} call to model {MODELS[kind]!r} failed (HTTP 500)" in str(error)
    assert ("server had an error" if kind == "openai" else "Internal server error") in str(error)


# A timeout of 1 s: a stall (5 s) always outlasts it, and an answer on a loaded machine still beats it
# (at 0.2 s the answer after a stall could time out too when two cores run nine test suites).
TIMEOUT = 1.0


@pytest.mark.parametrize("kind", PROVIDERS)
def test_timeout_is_retried_then_succeeds(kind: str, server: FakeProvider) -> None:
    server.queue(stall(MAX_STALL_SECONDS), ok("after a stall"))
    assert client(kind, server, timeout=TIMEOUT, max_retries=1).complete("s", "p", 10).text == "after a stall"
    assert server.count() == 2


@pytest.mark.parametrize("kind", PROVIDERS)
def test_timeout_gives_up_after_max_retries(kind: str, server: FakeProvider) -> None:
    server.queue(*[stall(MAX_STALL_SECONDS)] * 3)
    # The error names the timeout (the stalls never answered: the client gave up on each), and a third
    # request was never sent; no wall-clock bound, which a loaded machine could break.
    with pytest.raises(LLMError, match=r"timed out \(2 attempt\(s\), 1 s timeout each\)") as raised:
        client(kind, server, timeout=TIMEOUT, max_retries=1).complete("s", "p", 10)
    assert server.count() == 2
    assert raised.value.status is None


# --- context overflow ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", PROVIDERS)
def test_context_overflow_is_not_retried(kind: str, server: FakeProvider) -> None:
    server.queue(context_overflow(tokens=210_000, limit=200_000))
    with pytest.raises(ContextOverflowError) as raised:
        client(kind, server, max_retries=3).complete("s", "p", 10)
    assert server.count() == 1
    overflow = raised.value.overflow
    assert (overflow.provider, overflow.tokens, overflow.limit) == (kind, 210_000, 200_000)
    assert raised.value.status == 400


@pytest.mark.parametrize("kind", PROVIDERS)
def test_context_overflow_becomes_compaction_failed(kind: str, server: FakeProvider, tmp_path: Path) -> None:
    server.queue(context_overflow())
    summarizer = LLMSummarizer(client(kind, server), LLMCache(tmp_path))
    with pytest.raises(CompactionFailed, match="too long") as raised:
        summarizer.summarize(request())
    assert isinstance(raised.value.__cause__, ContextOverflowError)
    assert server.count() == 1
    assert cache_files(tmp_path) == []


@pytest.mark.parametrize("kind", PROVIDERS)
def test_other_bad_request_is_a_plain_error(kind: str, server: FakeProvider) -> None:
    server.queue(bad_request("max_tokens: must be greater than or equal to 1"))
    with pytest.raises(LLMError, match="max_tokens: must be greater") as raised:
        client(kind, server).complete("s", "p", 10)
    assert not isinstance(raised.value, ContextOverflowError)
    assert server.count() == 1


# --- the key stays secret -----------------------------------------------------------------------


@pytest.mark.parametrize("kind", PROVIDERS)
def test_api_key_never_in_cache_files_or_errors(kind: str, server: FakeProvider, tmp_path: Path) -> None:
    summarizer = LLMSummarizer(client(kind, server, timeout=TIMEOUT, max_retries=0), LLMCache(tmp_path))
    server.queue(echo_credentials(), context_overflow(), server_error(500), stall(MAX_STALL_SECONDS), ok())
    with pytest.raises(LLMUnavailable) as refused:  # a refused key stops the run: not a failed compaction
        summarizer.summarize(request())
    errors: list[BaseException] = [refused.value]
    for _ in range(3):
        with pytest.raises(CompactionFailed) as raised:
            summarizer.summarize(request())
        errors.extend([raised.value, raised.value.__cause__])
    summarizer.summarize(request())
    assert "Incorrect API key provided: ***" in str(errors[0])  # the server echoed it; we scrubbed it
    for error in errors:
        assert SECRET not in str(error) and SECRET not in repr(error)
        assert error.__cause__ is None or isinstance(error.__cause__, LLMError)
    for llm_error in [errors[0], *errors[2::2]]:
        assert isinstance(llm_error, LLMError) and llm_error.__context__ is None  # no SDK exception (and request) chained
    assert SECRET not in repr(summarizer.client)
    for path in cache_files(tmp_path):
        assert SECRET not in path.read_text()


def test_missing_key_for_the_real_api_is_a_clear_error() -> None:
    with pytest.raises(LLMError, match="set the environment variable OPENAI_API_KEY"):
        OpenAIChatClient("gpt-4o-mini")
    with pytest.raises(LLMError, match="set the environment variable ANTHROPIC_API_KEY"):
        AnthropicClient("claude-haiku-4-5")


# --- concurrency --------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", PROVIDERS)
def test_summarize_many_bounds_in_flight_and_keeps_order(kind: str, server: FakeProvider) -> None:
    server.queue(*[ok(delay=0.15)] * 9)
    summarizer = LLMSummarizer(client(kind, server))
    requests = [request(prompt=f"session {i}") for i in range(9)]
    results = summarize_many(summarizer, requests, max_workers=3)
    assert [r.text for r in results] == [f"Summary of: session {i}" for i in range(9)]
    assert 2 <= server.max_in_flight <= 3  # parallel, and never more than allowed


def test_summarizer_max_in_flight_bounds_all_callers(server: FakeProvider) -> None:
    server.queue(*[ok(delay=0.1)] * 6)
    summarizer = LLMSummarizer(client("openai", server), limits=Limits(max_in_flight=2))
    summarize_many(summarizer, [request(prompt=f"t{i}") for i in range(6)], max_workers=6)
    assert server.count() == 6 and server.max_in_flight <= 2


def test_summarize_many_return_exceptions(server: FakeProvider) -> None:
    server.queue(ok(), bad_request("nope"), ok())
    summarizer = LLMSummarizer(client("openai", server))
    results = summarize_many(summarizer, [request(prompt=f"t{i}") for i in range(3)], max_workers=1, return_exceptions=True)
    assert [type(r).__name__ for r in results] == ["SummaryResponse", "CompactionFailed", "SummaryResponse"]
    server.queue(bad_request("nope"))
    with pytest.raises(CompactionFailed, match="nope"):
        summarize_many(summarizer, [request(prompt="x"), request(prompt="y")], max_workers=1)


def test_concurrent_identical_requests_pay_once(server: FakeProvider, tmp_path: Path) -> None:
    server.queue(ok(delay=0.2))
    summarizer = LLMSummarizer(client("openai", server), LLMCache(tmp_path))
    results = summarize_many(summarizer, [request()] * 4, max_workers=4)
    assert server.count() == 1 and len({r.text for r in results}) == 1


# --- OpenAI-compatible local servers -------------------------------------------------------------


def test_openai_compatible_server_without_a_key(server: FakeProvider, tmp_path: Path) -> None:
    # No key anywhere (like Ollama, vLLM or llama.cpp without auth): a dummy is sent.
    summarizer = make_summarizer(
        "openai", "qwen2.5:7b", base_url=server.openai_base_url, cache_dir=tmp_path, max_retries=0, timeout=2.0
    )
    OPEN.append(summarizer)
    response = summarizer.summarize(request())
    assert response.text.startswith("Summary of:")
    assert response.usage is not None and response.usage.cost_usd is None  # a local model has no price: no guess
    assert server.received[0].credential_sha256 == hashlib.sha256(NO_AUTH_KEY.encode()).hexdigest()
    priced = make_summarizer(
        "openai", "qwen2.5:7b", base_url=server.openai_base_url, cache_dir=tmp_path, prices={"qwen2.5": {"input": 0, "output": 0}}
    )
    OPEN.append(priced)
    assert priced.summarize(request()).usage.cost_usd == 0.0
    assert server.count() == 1  # same call, answered by the cache
