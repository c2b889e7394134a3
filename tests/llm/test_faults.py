"""LLM faults never pass as answers: empty or malformed answers are retried failures, never
cached; a refused key or an unreachable server stops at the first call, and a refused key
cancels the calls in flight beside it.

Against the local wire-format server (tests/fake_providers.py) through the real SDKs.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from compactlab.contract import CompactionFailed
from compactlab.llm import BadAnswer, LLMCache, LLMSummarizer, LLMUnavailable, RecordedSummarizer
from compactlab.llm.cache import CacheMiss, CacheRequest, Completion
from compactlab.llm.concurrency import CallAccount, Limits, run_calls
from compactlab.llm.errors import RequestCancelled
from compactlab.sessions.model import LLMCall
from tests.fake_behaviours import Behaviour, echo_credentials, empty_answer, ok, truncated_body
from tests.fake_providers import FakeProvider
from tests.llm.support import MODELS, OPEN, PROVIDERS, cache_files, client, request


@pytest.mark.parametrize("kind", PROVIDERS)
@pytest.mark.parametrize("fault", [empty_answer, truncated_body], ids=["empty", "truncated"])
def test_a_bad_answer_is_asked_again(kind: str, fault, server: FakeProvider, tmp_path: Path) -> None:
    server.queue(fault(), ok("the summary"))
    summarizer = LLMSummarizer(client(kind, server, max_retries=2), LLMCache(tmp_path))
    assert summarizer.summarize(request()).text == "the summary"
    assert server.count() == 2
    [path] = cache_files(tmp_path)
    assert json.loads(path.read_text())["response"]["text"] == "the summary"


@pytest.mark.parametrize("kind", PROVIDERS)
@pytest.mark.parametrize("fault", [empty_answer, truncated_body], ids=["empty", "truncated"])
def test_bad_answers_to_the_end_are_a_failed_call_and_nothing_is_cached(
    kind: str, fault, server: FakeProvider, tmp_path: Path
) -> None:
    server.queue(fault(), fault(), fault())
    summarizer = LLMSummarizer(client(kind, server, max_retries=2), LLMCache(tmp_path))
    with pytest.raises(CompactionFailed, match="empty answer|malformed response") as raised:
        summarizer.summarize(request())
    assert isinstance(raised.value.__cause__, BadAnswer) and "3 attempt(s)" in str(raised.value)
    assert server.count() == 3 and cache_files(tmp_path) == []
    # A warm rerun asks again (nothing was recorded) and gets the answer.
    assert summarizer.summarize(request()).text.startswith("Summary of:")
    assert server.count() == 4


def test_an_empty_answer_recorded_by_an_older_version_is_not_replayed(server: FakeProvider, tmp_path: Path) -> None:
    summarizer = LLMSummarizer(client("openai", server), LLMCache(tmp_path))
    key_request = summarizer.cache_request(request())
    path = LLMCache(tmp_path).put(key_request, Completion("x", LLMCall(MODELS["openai"], input_tokens=1)))
    document = json.loads(path.read_text())
    document["response"]["text"] = ""  # as versions that cached empty answers wrote them
    path.write_text(json.dumps(document))
    with pytest.raises(CacheMiss, match="the recorded answer is empty"):
        RecordedSummarizer("openai", MODELS["openai"], tmp_path).summarize(request())
    assert summarizer.summarize(request()).text.startswith("Summary of:")  # "use" mode asks again
    assert server.count() == 1 and json.loads(path.read_text())["response"]["text"].startswith("Summary of:")
    with pytest.raises(ValueError, match="never recorded"):
        LLMCache(tmp_path).put(CacheRequest("openai", "m", "", "p"), Completion(" ", LLMCall("m", input_tokens=1)))


@pytest.mark.parametrize("kind", PROVIDERS)
def test_a_refused_key_stops_at_the_first_call(kind: str, server: FakeProvider) -> None:
    server.queue(echo_credentials(), echo_credentials())
    summarizer = LLMSummarizer(client(kind, server, max_retries=2))
    with pytest.raises(LLMUnavailable, match="HTTP 401.*refused the credentials"):
        summarizer.summarize(request())
    assert server.count() == 1  # not retried, and not a CompactionFailed a strategy would fall back from


@pytest.mark.parametrize("kind", PROVIDERS)
def test_a_server_that_cannot_be_reached_stops_the_run(kind: str) -> None:
    from tests.fake_providers import serve

    with serve() as gone:
        pass  # its port is free again: nothing listens there
    made = client(kind, gone, max_retries=0)
    OPEN.append(made)
    with pytest.raises(LLMUnavailable, match="cannot reach"):
        LLMSummarizer(made).summarize(request())


@pytest.mark.parametrize("kind", PROVIDERS)
def test_a_refused_key_cancels_the_calls_in_flight(kind: str, server: FakeProvider) -> None:
    # The first request is refused after 2 s; the others, sent meanwhile, would be refused after 5 s.
    def refuse() -> Behaviour:  # (called under the server's lock: its count() would wait for it)
        return Behaviour("echo_credentials", status=401, delay=2.0 if len(server.received) == 1 else 5.0)

    server.otherwise = refuse
    summarizer = LLMSummarizer(client(kind, server, max_retries=2, timeout=10.0), limits=Limits(max_in_flight=6))
    account = CallAccount()
    with run_calls([summarizer], account), ThreadPoolExecutor(6) as pool:
        futures = [pool.submit(summarizer.summarize, request(prompt=f"call {i}")) for i in range(6)]
        errors = [future.exception(timeout=30) for future in futures]
    sent = server.count()  # (on a loaded machine a thread may send its call only after the refusal: refused unsent)
    assert 3 <= sent <= 6  # several of the six calls were in flight, and none was sent twice
    [(refused_at, status)] = server.ended().answered  # the server answered the first request only
    assert status == 401 and "HTTP 401" in str(account.stop_error)
    # The others' connections were closed by the client at the refusal (the server notes its answer's
    # time before writing it), before their 5 s answers. No call waited for its answer: every call is
    # over, and the server answered one request only (a wall-clock bound on the test would say the
    # same and fail on a loaded machine).
    assert len(server.abandoned) == sent - 1 and all(0 <= t - refused_at < 2.5 for t in server.abandoned)
    assert sum(isinstance(e, RequestCancelled) for e in errors) == sent - 1
    assert all(isinstance(e, LLMUnavailable) for e in errors)
    # The same client sends again once the stopped run is over.
    server.otherwise = ok()
    assert summarizer.summarize(request(prompt="a new run")).text.startswith("Summary of:")
