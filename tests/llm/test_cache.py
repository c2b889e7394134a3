"""The LLM call cache against a local provider server: hits, misses, refresh, offline replay, damage."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from compactlab.contract import CompactionFailed
from compactlab.llm import CacheMiss, CacheRequest, LLMCache, LLMSummarizer, RecordedSummarizer, make_summarizer
from compactlab.llm.cache import Completion
from tests.fake_behaviours import bad_request, ok, server_error
from tests.fake_providers import FakeProvider, serve
from tests.llm.support import MODELS, PROVIDERS, cache_files, client, request


@pytest.mark.parametrize("kind", PROVIDERS)
def test_identical_call_hits_the_cache(kind: str, server: FakeProvider, tmp_path: Path) -> None:
    server.queue(ok("The summary."))
    cache = LLMCache(tmp_path)
    summarizer = LLMSummarizer(client(kind, server), cache)
    first = summarizer.summarize(request())
    second = summarizer.summarize(request())
    assert server.count() == 1  # the second answer came from disk
    assert second == first and first.usage is not None and first.usage.cost_usd is not None and first.usage.cost_usd > 0
    assert (cache.hits, cache.misses) == (1, 1)
    [path] = cache_files(tmp_path)
    key = summarizer.cache_request(request()).key()
    assert path == tmp_path / key[:2] / f"{key}.json"
    # Deterministic: sorted keys, no timestamps, no request text, no cost (computed on read).
    data = json.loads(path.read_text())
    assert list(data) == sorted(data) and data["key"] == key and data["params"]["max_tokens"] == 256
    assert "cost_usd" not in path.read_text() and request().prompt not in path.read_text()
    before = path.read_bytes()
    recorded = cache.get(key)
    assert recorded == Completion(first.text, replace(first.usage, cost_usd=None), first_stop_reason(kind))
    cache.put(summarizer.cache_request(request()), recorded)  # re-recording the same answer: same bytes
    assert path.read_bytes() == before


def first_stop_reason(kind: str) -> str:
    return "stop" if kind == "openai" else "end_turn"


@pytest.mark.parametrize("kind", PROVIDERS)
def test_different_parameters_miss_the_cache(kind: str, server: FakeProvider, tmp_path: Path) -> None:
    cache = LLMCache(tmp_path)
    LLMSummarizer(client(kind, server), cache).summarize(request())
    LLMSummarizer(client(kind, server), cache).summarize(request(max_output_tokens=512))
    LLMSummarizer(client(kind, server, temperature=0.0), cache).summarize(request())
    LLMSummarizer(client(kind, server), cache).summarize(request(system="Another system prompt."))
    LLMSummarizer(client(kind, server), cache).summarize(request(prompt="Another prompt."))
    assert server.count() == 5
    assert len(cache_files(tmp_path)) == 5
    LLMSummarizer(client(kind, server, temperature=0.0), cache).summarize(request())
    assert server.count() == 5


def test_cache_key_covers_provider_and_model() -> None:
    base = CacheRequest("openai", "gpt-4o-mini", "s", "p", {"max_tokens": 10, "temperature": None})
    assert base.key() == CacheRequest("openai", "gpt-4o-mini", "s", "p", {"max_tokens": 10}).key()  # None is absent
    assert base.key() != CacheRequest("anthropic", "gpt-4o-mini", "s", "p", {"max_tokens": 10}).key()
    assert base.key() != CacheRequest("openai", "gpt-4.1-mini", "s", "p", {"max_tokens": 10}).key()


def test_refresh_mode_calls_again_and_overwrites(server: FakeProvider, tmp_path: Path) -> None:
    LLMSummarizer(client("openai", server), LLMCache(tmp_path)).summarize(request())
    server.queue(ok("a newer answer"))
    refreshed = LLMSummarizer(client("openai", server), LLMCache(tmp_path, "refresh")).summarize(request())
    assert refreshed.text == "a newer answer" and server.count() == 2
    assert LLMSummarizer(client("openai", server), LLMCache(tmp_path)).summarize(request()).text == "a newer answer"
    assert server.count() == 2 and len(cache_files(tmp_path)) == 1


def test_offline_miss_says_how_to_record(tmp_path: Path) -> None:
    summarizer = RecordedSummarizer("openai", "gpt-4o-mini", tmp_path)
    with pytest.raises(CacheMiss) as raised:
        summarizer.summarize(request())
    message = str(raised.value)
    key = summarizer.cache_request(request()).key()
    for part in (key, "'openai'", "'gpt-4o-mini'", str(tmp_path), "without --offline", "API key"):
        assert part in message, part
    assert not isinstance(raised.value, CompactionFailed)  # a missing recording must stop a CI run
    with pytest.raises(CacheMiss, match=r"nor a recording by provider\(s\) anthropic"):
        make_summarizer("recorded", "gpt-4o-mini", cache_dir=tmp_path).summarize(request())


@pytest.mark.parametrize("kind", PROVIDERS)
def test_recorded_summarizer_replays_without_a_server(kind: str, tmp_path: Path) -> None:
    with serve() as server:
        live = LLMSummarizer(client(kind, server), LLMCache(tmp_path)).summarize(request())
    replayed = RecordedSummarizer(kind, MODELS[kind], tmp_path).summarize(request())
    assert replayed == live
    factory = make_summarizer("recorded", MODELS[kind], recorded_provider=kind, cache_dir=tmp_path)
    assert factory.summarize(request()) == live and factory.name == f"llm:{kind}:{MODELS[kind]}"
    any_provider = make_summarizer("recorded", MODELS[kind], cache_dir=tmp_path)  # whoever recorded it
    assert any_provider.summarize(request()) == live
    other = "anthropic" if kind == "openai" else "openai"
    with pytest.raises(CacheMiss):
        RecordedSummarizer(other, MODELS[kind], tmp_path).summarize(request())
    offline = make_summarizer(kind, MODELS[kind], cache_dir=tmp_path, mode="offline")  # no key needed
    assert offline.summarize(request()) == live


@pytest.mark.parametrize("kind", PROVIDERS)
def test_errors_are_not_cached(kind: str, server: FakeProvider, tmp_path: Path) -> None:
    cache = LLMCache(tmp_path)
    server.queue(server_error(500), bad_request("invalid model settings"))
    summarizer = LLMSummarizer(client(kind, server, max_retries=0), cache)
    for _ in range(2):
        with pytest.raises(CompactionFailed):
            summarizer.summarize(request())
        assert cache_files(tmp_path) == []
    server.queue(ok("good"))
    assert summarizer.summarize(request()).text == "good"
    [path] = cache_files(tmp_path)
    assert json.loads(path.read_text())["response"]["text"] == "good"
    assert server.count() == 3


def test_damaged_cache_file(server: FakeProvider, tmp_path: Path) -> None:
    summarizer = LLMSummarizer(client("openai", server), LLMCache(tmp_path))
    summarizer.summarize(request())
    [path] = cache_files(tmp_path)
    path.write_text("{ not json")
    with pytest.raises(CacheMiss, match="damaged"):
        RecordedSummarizer("openai", "gpt-4o-mini", tmp_path).summarize(request())
    summarizer.summarize(request())  # "use" mode replaces it
    assert server.count() == 2 and json.loads(path.read_text())["format"] == 1
