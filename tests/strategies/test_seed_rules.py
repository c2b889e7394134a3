"""Each seed preset's rules, one test per rule, on a real session where the rule acts.

The rules and their sections are in ../shared/seeds/ (see each preset's `source`)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from compactlab.contract import CompactionRequest, Context
from compactlab.replay.replay import replay
from compactlab.replay.setting import Setting
from compactlab.sessions.importers import load_file
from compactlab.sessions.messages import is_summary, is_user_turn_start, last_user_request, pinned_head
from compactlab.sessions.model import ToolCallPart, ToolResultPart
from compactlab.strategies.pipeline import Pipeline
from compactlab.strategies.priority import PLACEHOLDER, PriorityPrune
from compactlab.strategies.prune import PLACEHOLDER as PRUNED
from compactlab.strategies.prune import Prune
from compactlab.strategies.registry import get_strategy, resolved
from compactlab.tokens.context_windows import ContextWindows
from compactlab.tokens.estimators import get_estimator
from compactlab.tokens.metering import Meter
from tests.conftest import bundled
from tests.strategy_sessions import assert_no_orphans

ME_NEXT = load_file(bundled("claude-code-log", "-Users-dain-workspace-danieldemmel-me-next__9e953218"))[0]
MANIFEST = load_file(bundled("claude-code-log", "-src-deep-manifest__a7da6a22"))[0]
GPT5_MINI = load_file(bundled("mini-swe-agent-v1", "mini-output__django__django-12276"))[0]
LONG_CODEX = load_file(bundled("codex-rollouts", "Monotoba__OpenPrintKit"))[0]


def request(session, reason="threshold", window=40_000, target=None, estimator="chars/4") -> CompactionRequest:
    meter = Meter(session, estimator)
    target = window // 2 if target is None else target
    return CompactionRequest(
        reason=reason, window=window, target_tokens=target, count_tokens=meter.count, prompt_tokens=meter.count
    )


def compact(name_or_strategy, session, **kw):
    strategy = get_strategy(name_or_strategy) if isinstance(name_or_strategy, str) else resolved(name_or_strategy)
    return strategy.compact(Context(messages=session.messages), request(session, **kw))


# --- seed 000 ---------------------------------------------------------------------------------


def test_seed_000_window_table_and_128k_fallback() -> None:
    # gpt-5-mini is not in seed 000's table: 128,000 (compactlab's own table gives gpt-5 400,000).
    seed = replay(GPT5_MINI, Setting("s", "seed-000"), ContextWindows())
    other = replay(GPT5_MINI, Setting("s", "seed-004"), ContextWindows())
    assert set(seed.calls["window"]) == {128_000} and set(other.calls["window"]) == {400_000}
    assert ContextWindows().with_table(get_strategy("seed-000").context_windows).lookup("gpt-4.1-mini").tokens == 1_000_000
    # A user's override still wins over the design's table.
    forced = replay(GPT5_MINI, Setting("s", "seed-000"), ContextWindows(overrides={"": 64_000}))
    assert set(forced.calls["window"]) == {64_000}


def test_seed_000_counts_new_messages_as_len_over_3_5() -> None:
    preset = get_strategy("seed-000")
    assert (preset.estimator, get_estimator(preset.estimator).base) == ("hybrid-chars/3.5", "chars/3.5")
    messages = ME_NEXT.messages
    # Without a provider count (first call, after a compaction) the whole prompt is len / 3.5.
    assert Meter(ME_NEXT, preset.estimator).count(messages) == Meter(ME_NEXT, "chars/3.5").count(messages)
    assert Meter(ME_NEXT, preset.estimator).count(messages) > Meter(ME_NEXT, "chars/4").count(messages)


def test_seed_000_new_session_is_the_summary_alone_with_the_archive() -> None:
    result = compact("seed-000", ME_NEXT)
    after = result.context.messages
    head = pinned_head(ME_NEXT.messages)
    assert after[:head] == ME_NEXT.messages[:head] and len(after) == head + 1 and is_summary(after[-1])
    assert result.context.archives == (ME_NEXT.messages,) and "archive #1" in after[-1].text()


# --- seed 001 ---------------------------------------------------------------------------------


def test_seed_001_compacts_at_200k_tokens_whatever_the_window() -> None:
    trigger = get_strategy("seed-001").trigger
    # At the session's real window (Codex records it): 200,000 tokens, not a share of the window.
    replayed = replay(LONG_CODEX, Setting("s", "seed-001"), ContextWindows())
    assert set(replayed.calls["window"]) == {LONG_CODEX.context_window} != {200_000}
    first = replayed.compactions[0]
    assert first.event.reason == "threshold" and first.event.tokens_before >= 200_000
    assert max(replayed.calls["context_tokens"][: first.call]) < 200_000  # no earlier call reached it
    assert trigger.check(199_999, 1_000_000) is None and trigger.check(150_000, 160_000) is None


def test_seed_001_history_is_system_and_summary_with_the_last_request() -> None:
    result = compact("seed-001", MANIFEST)
    after = result.context.messages
    head = pinned_head(MANIFEST.messages)
    assert len(after) == head + 1 and is_summary(after[-1])
    assert after[-1].text().endswith(f"Last request from user was: {last_user_request(MANIFEST.messages)}")
    assert get_strategy("seed-001").strategy.template == "seed_001.j2"


# --- seed 002 ---------------------------------------------------------------------------------


def test_seed_002_summarizes_then_prunes_beyond_the_newest_40k() -> None:
    result = compact("seed-002", MANIFEST, window=200_000, target=10_000)
    assert result.note.startswith("summarize:") and "; prune:" in result.note  # both ran, in the seed's order
    assert any(is_summary(m) for m in result.context.messages)


def _with_tool_names(session, name):
    def renamed(message):
        parts = tuple(replace(p, name=name) if isinstance(p, ToolCallPart) else p for p in message.parts)
        return replace(message, parts=parts)

    return replace(session, messages=tuple(renamed(m) for m in session.messages))


def test_seed_002_protects_tools_by_the_tool_prefix() -> None:
    prune = get_strategy("seed-002").strategy.stages[1]
    small = Prune(protect_tokens=2_000, minimum_tokens=1_000, protected_prefixes=prune.protected_prefixes)
    assert compact(small, MANIFEST).messages_removed == 0 and "cleared" in compact(small, MANIFEST).note
    # The same real session with every tool renamed `tool-…` (the AI SDK's part type): nothing is prunable.
    protected = _with_tool_names(MANIFEST, "tool-bash")
    assert compact(small, protected).note.startswith("nothing to do")


def test_seed_002_skips_parts_marked_pruned_and_goes_on() -> None:
    # One output in the middle of a real session cleared (an earlier prune's compactedAt mark).
    messages = list(MANIFEST.messages)
    middle = [i for i, m in enumerate(messages) if any(isinstance(p, ToolResultPart) for p in m.parts)]
    index = middle[len(middle) // 2]
    messages[index] = replace(
        messages[index],
        parts=tuple(replace(p, content=PRUNED) if isinstance(p, ToolResultPart) else p for p in messages[index].parts),
    )
    marked = replace(MANIFEST, messages=tuple(messages))
    stops = Prune(protect_tokens=1_000, minimum_tokens=500, protect_turns=0)
    skips = replace(stops, stop_at_pruned=False)
    stopped, went_on = compact(stops, marked), compact(skips, marked)

    def cleared(result):
        return sum(p.content == PRUNED for m in result.context.messages for p in m.parts if isinstance(p, ToolResultPart))

    assert "stopped at an earlier prune" in stopped.note and cleared(went_on) > cleared(stopped)
    assert get_strategy("seed-002").strategy.stages[1].stop_at_pruned is False


def test_seed_002_caps_one_outputs_estimate() -> None:
    # The largest output of the session counted at most `max_part_tokens` (seed 002: 50,000; here a
    # cap the real outputs exceed, so the rule acts on them).
    uncapped = Prune(protect_tokens=1_000, minimum_tokens=0, protect_turns=0)
    capped = replace(uncapped, max_part_tokens=200)
    first, second = compact(uncapped, MANIFEST), compact(capped, MANIFEST)

    def tokens(note):
        return int(note.split("(")[1].split(" tokens")[0].replace(",", ""))

    assert tokens(second.note) < tokens(first.note)


# --- seed 003 ---------------------------------------------------------------------------------


def test_seed_003_keeps_the_priorities_it_always_keeps() -> None:
    result = compact(PriorityPrune(), MANIFEST, target=1)  # a budget nothing optional fits
    after = result.context.messages
    original = MANIFEST.messages
    last_user = max(i for i, m in enumerate(original) if is_user_turn_start(m))
    last_assistant = max(i for i, m in enumerate(original) if m.role == "assistant")
    tools = [i for i, m in enumerate(original) if any(isinstance(p, ToolResultPart) for p in m.parts)][-5:]
    for index in (last_user, last_assistant, *tools, *range(pinned_head(original))):
        assert original[index] in after, f"message {index} must be kept"
    assert_no_orphans(after)
    assert is_summary(after[pinned_head(original)]) and "over" in result.note


def test_seed_003_fills_the_budget_with_older_exchanges_tool_outputs_last() -> None:
    meter = Meter(MANIFEST, "chars/4")
    budget = meter.count(MANIFEST.messages) // 3
    result = compact(PriorityPrune(), MANIFEST, target=budget)
    after = result.context.messages
    assert meter.count(after) <= budget
    cleared = [m for m in after if any(isinstance(p, ToolResultPart) and p.content == PLACEHOLDER for p in m.parts)]
    whole = [m for m in after if m in MANIFEST.messages and not is_summary(m)]
    assert cleared, "older exchanges kept with their outputs cleared (stage 5) before any is dropped"
    assert len(whole) > len(compact(PriorityPrune(), MANIFEST, target=1).context.messages) - 2
    assert_no_orphans(after)


def test_seed_003_critical_compacts_harder_than_warning() -> None:
    preset = get_strategy("seed-003")
    window = Meter(MANIFEST, "words").count(MANIFEST.messages)
    assert (
        preset.trigger.check(int(0.76 * window), window) == "warning"
        and preset.trigger.check(int(0.91 * window), window) == "critical"
    )
    sizes = {}
    for reason in ("warning", "critical"):
        result = compact(
            preset, MANIFEST, reason=reason, window=window, target=preset.trigger.target_tokens(window), estimator="words"
        )
        sizes[reason] = Meter(MANIFEST, "words").count(result.context.messages)
    assert sizes["critical"] <= 0.6 * window and sizes["warning"] <= 0.7 * window and sizes["critical"] < sizes["warning"]


def test_seed_003_summarizes_what_it_removed_and_runs_in_a_pipeline() -> None:
    result = compact(Pipeline(stages=("priority-prune", "truncate")), MANIFEST, target=5_000)
    summary = next(m for m in result.context.messages if is_summary(m))
    assert "## Goal" in summary.text() and result.messages_removed > 0
    again = compact(PriorityPrune(), replace(MANIFEST, messages=result.context.messages), target=5_000)
    assert sum(is_summary(m) for m in again.context.messages) == 1  # the earlier summary is merged, not stacked


# --- seed 004 ---------------------------------------------------------------------------------


def _kept_tail(result) -> int:
    after = result.context.messages
    return len(after) - 1 - next(i for i, m in enumerate(after) if is_summary(m))


def test_seed_004_emergency_keeps_a_fifth_of_the_window() -> None:
    preset = get_strategy("seed-004")
    # The cut moves on to the next user message (at or after the point), so a fifth and a quarter of
    # some windows reach the same one: never more is kept in an emergency, and somewhere less.
    pairs = [
        [_kept_tail(compact(preset, MANIFEST, reason=reason, window=window)) for reason in ("threshold", "silent_overflow")]
        for window in range(40_000, 160_001, 20_000)
    ]
    assert all(emergency <= usual for usual, emergency in pairs) and any(emergency < usual for usual, emergency in pairs)


def test_seed_004_forced_emergency_keeps_the_last_two_messages() -> None:
    preset = get_strategy("seed-004")
    huge = 10 * Meter(ME_NEXT, "chars/4").count(ME_NEXT.messages)  # a fifth of it holds the whole session
    assert compact(preset, ME_NEXT, reason="threshold", window=huge).messages_removed == 0
    forced = compact(preset, ME_NEXT, reason="overflow", window=huge)
    # The last 2 messages (3 when the second-last is a tool result, whose call stays with it).
    assert 2 <= _kept_tail(forced) <= 3 and forced.messages_removed > 0


def test_seed_004_falls_back_to_a_count_of_the_messages() -> None:
    preset = get_strategy("seed-004", summarizer="llm")  # no LLM configured: the summarizer fails
    result = compact(preset, MANIFEST, window=40_000)
    summary = next(m for m in result.context.messages if is_summary(m))
    assert "[Compacted " in summary.text() and " messages: " in summary.text() and "<modified-files>" in summary.text()
    assert "summarizer failed" in result.note


@pytest.mark.parametrize("name", ["seed-000", "seed-001", "seed-002", "seed-003", "seed-004"])
def test_seed_presets_name_their_document(name: str) -> None:
    preset = get_strategy(name)
    assert f"shared/seeds/{name.split('-')[1]}_" in preset.source
