"""The engine: triggers, events, loop guard, failure breaker, overflow recognition."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from compactlab.cli.main import main
from compactlab.compaction.engine import Engine
from compactlab.compaction.overflow import classify_overflow, silent_overflow
from compactlab.contract import CompactionFailed, CompactionResult, Context, Trigger
from compactlab.runs.preview import compact
from compactlab.sessions.importers import load_file
from compactlab.strategies.registry import get_strategy
from compactlab.tokens.metering import Meter
from tests.conftest import bundled

SESSION = load_file(bundled("claude-code-log", "-src-deep-manifest__a7da6a22"))[0]


def engine_for(strategy, window: int = 60_000, trigger: Trigger | None = None) -> tuple[Engine, Meter]:
    meter = Meter(SESSION, "chars/4")
    return Engine(strategy=strategy, window=window, meter=meter, count_tokens=meter.count, trigger=trigger or Trigger()), meter


def test_trigger_levels() -> None:
    single = Trigger(fraction=0.8)
    assert single.check(79_999, 100_000) is None and single.check(80_000, 100_000) == "threshold"
    assert Trigger(fraction=1.0, absolute=50_000).check(50_000, 200_000) == "threshold"
    assert Trigger(fraction=1.0, reserve_tokens=16_384).check(183_617, 200_000) == "threshold"
    assert Trigger(fraction=1.0, reserve_tokens=16_384).check(183_616, 200_000) is None
    two = Trigger(warning=0.75, critical=0.9, target=0.6)
    assert [two.check(t, 100_000) for t in (74_999, 75_000, 90_000)] == [None, "warning", "critical"]
    assert two.target_tokens(100_000) == 60_000


def test_event_vocabulary_on_a_real_session() -> None:
    engine, meter = engine_for(get_strategy("summarize"))
    context = Context(messages=SESSION.messages)
    after, event = engine.before_call(context)
    assert event is not None and event.reason == "threshold" and event.failed is None
    assert event.tokens_before == meter(context) > 0.8 * 60_000
    assert event.tokens_after == meter(after) < event.tokens_before
    assert (event.messages_before, event.messages_after) == (len(context.messages), len(after.messages))
    assert event.strategy == "summarize" and event.prompt_hash
    assert after.compactions == 1 and after.known_usage is None


def test_no_compaction_under_the_trigger() -> None:
    engine, _ = engine_for(get_strategy("summarize"), window=10_000_000)
    context = Context(messages=SESSION.messages)
    assert engine.before_call(context) == (context, None)


@dataclass(frozen=True)
class DoesNothing:
    name = "does-nothing"

    def compact(self, context, request):
        return CompactionResult(context, 0, note="nothing to do")


@dataclass(frozen=True)
class AlwaysFails:
    name = "always-fails"

    def compact(self, context, request):
        raise CompactionFailed("summarizer unreachable")


def test_loop_guard_stops_after_an_ineffective_compaction() -> None:
    engine, _ = engine_for(DoesNothing())
    context = Context(messages=SESSION.messages)
    _, event = engine.before_call(context)
    assert event.stalled and event.reduction < 0.05
    assert engine.before_call(context) == (context, None)  # no further attempts
    _, emergency = engine.emergency(context)  # an overflow still gets its attempt
    assert emergency.reason == "overflow"


def test_the_guard_tries_again_once_the_history_has_grown_enough_for_an_attempt_to_differ() -> None:
    # opencode's prune with small protections, on a real session: after 40 messages its tool output
    # lies within the protected tail (nothing to clear); after 60 some is older than it.
    engine, meter = engine_for(get_strategy("prune", protect_tokens=4_000, minimum_tokens=2_000), window=20_000)
    early, later = Context(messages=SESSION.messages[:40]), Context(messages=SESSION.messages[:60])
    _, event = engine.before_call(early)
    assert event is not None and not event.changed and event.stalled
    assert engine.before_call(early) == (early, None)  # the same history: the same nothing, not tried again
    # Grown by more than 5% of the window (1,000 tokens): the attempt may differ, and here it works.
    assert meter(later) - meter(early) > 0.05 * 20_000
    after, retried = engine.before_call(later)
    assert retried is not None and retried.changed and retried.reduction >= 0.05 and not retried.stalled
    assert engine.fires_from() == 0.8 * 20_000  # the guard no longer holds


def _fires(engine: Engine, sizes: range) -> list[bool]:
    return [engine.due(tokens) is not None for tokens in sizes]


def test_due_and_fires_from_agree_whether_the_guard_or_the_breaker_holds_or_neither() -> None:
    # The replay finds its first stop from `fires_from` and asks `due` call by call: one rule
    # (`attempts_from`) must give both the same edge in every state of the engine.
    guarded, _ = engine_for(get_strategy("prune", protect_tokens=4_000, minimum_tokens=2_000), window=20_000)
    broken, _ = engine_for(AlwaysFails(), window=20_000)
    context = Context(messages=SESSION.messages[:40])
    edges = {"neither": guarded.fires_from()}
    guarded.before_call(context)
    edges["guard"] = guarded.fires_from()
    for _ in range(3):
        broken.before_call(context)
    assert guarded.stalled and broken.breaker_open and edges == {"neither": 16_000, "guard": guarded.stalled_at + 1_000}
    sizes = range(10_000, 40_000, 7)  # across both edges: 16,000 and the guard's (here 33,957)
    assert sizes.start < edges["neither"] < edges["guard"] < sizes.stop
    for engine in (guarded, broken):
        edge = engine.fires_from()
        assert _fires(engine, sizes) == [tokens >= edge for tokens in sizes]
    assert broken.fires_from() == math.inf


def test_failure_breaker_opens_after_repeated_failures() -> None:
    engine, _ = engine_for(AlwaysFails(), trigger=Trigger())
    context = Context(messages=SESSION.messages)
    for _ in range(3):
        _, event = engine.before_call(context)
        assert event.failed == "summarizer unreachable"
    assert engine.breaker_open
    assert engine.before_call(context) == (context, None)


@pytest.mark.parametrize(
    ("message", "provider", "tokens", "limit"),
    [
        (
            "This model's maximum context length is 128000 tokens. However, your messages resulted in 130532 tokens. Please reduce the length of the messages.",
            "openai",
            130532,
            128000,
        ),
        ("prompt is too long: 210843 tokens > 200000 maximum", "anthropic", 210843, 200000),
        (
            "input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000, decrease input length or `max_tokens` and try again",
            "anthropic",
            188240,
            200000,
        ),
        ("The input token count (1196265) exceeds the maximum number of tokens allowed (1048576).", "google", 1196265, 1048576),
        (
            "This model's maximum context length is 32768 tokens. However, you requested 33000 tokens (31000 in the messages, 2000 in the completion).",
            "openai",
            33000,
            32768,
        ),
        ("the request exceeds the available context size, try increasing it", "llama.cpp", None, None),
        (
            "This endpoint's maximum context length is 163840 tokens. However, you requested about 170926 tokens (154542 of text input, 16384 in the output).",
            "openrouter",
            170926,
            163840,
        ),
    ],
)
def test_overflow_messages_of_each_provider(message: str, provider: str, tokens, limit) -> None:
    found = classify_overflow(message)
    assert found is not None and (found.provider, found.tokens, found.limit) == (provider, tokens, limit)


@pytest.mark.parametrize(
    "message",
    [
        "Rate limit reached for gpt-4o: 30000 tokens per min",
        "Overloaded",
        "max_tokens: 64000 > 32000, which is the maximum allowed",
        "context canceled",
    ],
)
def test_other_errors_are_not_overflow(message: str) -> None:
    assert classify_overflow(message) is None


def test_silent_overflow() -> None:
    assert silent_overflow(200_001, 200_000) and not silent_overflow(200_000, 200_000)


def test_preview_compacts_where_the_trigger_first_fires(capsys) -> None:
    result = compact(SESSION, "summarize", estimator="chars/4")
    assert result.chosen_by in ("trigger", "last call (the trigger never fired in this session)")
    at = compact(SESSION, "prune", at_call=50)
    assert at.call == 50 and at.chosen_by == "--at"
    assert (
        main(["compact", str(bundled("claude-code-log", "-src-deep-manifest__a7da6a22")), "--strategy", "pi", "--at", "80"]) == 0
    )
    out = capsys.readouterr().out
    assert "event: reason=manual" in out and "compacted context:" in out
    assert main(["compact", str(bundled("claude-code-log", "-src-deep-manifest__a7da6a22")), "--strategy", "summarise"]) == 2
    assert "Did you mean 'summarize'" in capsys.readouterr().err


def test_strategies_command_lists_everything(capsys) -> None:
    import json

    assert main(["strategies", "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert {
        "truncate",
        "prune",
        "observation-masking",
        "summarize",
        "iterative-merge",
        "extractive",
        "pipeline",
        "archive",
    } <= set(rows)
    assert rows["prune"]["parameters"]["protect_tokens"] == 40_000
    assert rows["pi"]["parameters"]["trigger"]["reserve_tokens"] == 16_384
