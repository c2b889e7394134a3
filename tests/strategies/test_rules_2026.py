"""The cline and goose presets' rules (issue 48, `compactlab.strategies.rules_2026`), each on a real
bundled session: Cline's SDK at 21cb8d25, goose's context_mgmt as the search index stores it."""

from __future__ import annotations

from dataclasses import replace

from compactlab.contract import Context
from compactlab.replay.replay import replay
from compactlab.replay.setting import Setting
from compactlab.replay.uncompacted import run_starts, uncompacted
from compactlab.sessions.messages import is_summary, is_user_turn_start, pinned_head, safe_cut_points, summary_text
from compactlab.sessions.model import TextPart, ToolResultPart
from compactlab.strategies.goose import CONVERSATION_CONTINUATION, TOOL_LOOP_CONTINUATION
from compactlab.strategies.prompting import TOOL_RESULT_MAX_CHARS
from compactlab.strategies.registry import get_strategy
from compactlab.tokens.context_windows import ContextWindows
from compactlab.tokens.metering import Meter
from tests.strategies.test_preset_rule_checks import Spy, with_llm
from tests.strategies.test_seed_rules import LONG_CODEX, MANIFEST, request
from tests.strategy_sessions import assert_no_orphans

AT_40K = ContextWindows(overrides={"": 40_000})
AT_64K = ContextWindows(overrides={"": 64_000})


def _replayed(name: str, session=MANIFEST, windows=AT_40K, strategy=None, summarizer=None):
    return replay(session, Setting(name, name), windows, summarizer=summarizer, strategy=strategy)


def _tail(context):
    """The messages after the summary of a compacted context."""
    at = next(i for i, m in enumerate(context) if is_summary(m))
    return context[:at], context[at], context[at + 1 :]


# --- cline -------------------------------------------------------------------------------------------


def test_cline_keeps_the_newest_20000_tokens_from_a_safe_cut() -> None:
    done = _replayed("cline", LONG_CODEX, AT_64K)
    assert len(done.compactions) >= 2
    meter = Meter(LONG_CODEX, "chars/4")
    for context in done.compacted:
        head, summary, tail = _tail(context)
        assert_no_orphans(context)
        assert meter.count(list(tail)) >= 20_000
        # No later safe cut keeps 20,000 too, but one that would summarize the latest prompt.
        safe = set(safe_cut_points(tail))
        for j in range(1, len(tail)):
            if j in safe and meter.count(list(tail[j:])) >= 20_000:
                assert any(is_user_turn_start(m) for m in tail[:j]), j


def test_cline_never_summarizes_the_latest_prompt() -> None:
    done = _replayed("cline")
    assert done.compactions
    for row, context in zip(done.compactions, done.compacted):
        before = MANIFEST.messages[: row.message_index]
        starts = [i for i, m in enumerate(before) if is_user_turn_start(m)]
        latest = before[starts[-1]]
        head, summary, tail = _tail(context)
        if starts[-1] > pinned_head(before, False):
            assert any(m is latest for m in tail), row.call
    # The preset's rule can fail: a plain 20,000-token tail cuts inside the latest turn on this session.
    plain = replace(get_strategy("cline").strategy, tail_rule="turn-before", split_turn_min_messages=1)
    other = _replayed("cline", strategy=replace(get_strategy("cline"), strategy=plain))
    assert other.compacted != done.compacted


def test_cline_folds_the_previous_summary_into_the_next() -> None:
    spy = Spy()
    preset = with_llm(get_strategy("cline"))
    done = _replayed("cline", LONG_CODEX, AT_64K, strategy=preset, summarizer=spy)
    assert len(done.compactions) >= 2 and len(spy.asked) >= 2
    later = spy.asked[1]
    assert later.previous_summary == "SPY SUMMARY 1" and later.purpose == "update"
    assert "Previous summary:\nSPY SUMMARY 1" in later.prompt


def test_cline_asks_for_4096_tokens_with_tool_results_cut_at_2000() -> None:
    spy = Spy()
    preset = with_llm(get_strategy("cline"))
    preset.compact(Context(LONG_CODEX.messages), replace(request(LONG_CODEX, window=64_000), summarizer=spy))
    asked = spy.asked[0]
    assert asked.max_output_tokens == 4_096 and TOOL_RESULT_MAX_CHARS == 2_000
    longest = max(len(p.content) for m in asked.messages for p in m.parts if isinstance(p, ToolResultPart))
    assert longest > 2_000, "the session has a tool result over the limit"
    blocks = [b for b in asked.prompt.split("\n\n[") if b.startswith("Tool result")]
    assert blocks and all(len(b.split("\n[... ")[0]) <= 2_000 + len("Tool result]: ") for b in blocks)
    for section in ("## Goal", "## State", "## Highlights", "## Next", "## Files"):
        assert section in asked.prompt


def test_cline_summary_ends_with_the_files() -> None:
    done = _replayed("cline")
    summaries = [_tail(context)[1] for context in done.compacted]
    assert all(summary.role == "user" for summary in summaries)
    # The lists are cumulative: once a file is read, every later summary lists it.
    listed = ["<read-files>" in summary_text(summary) for summary in summaries]
    assert any(listed) and listed[listed.index(True) :] == [True] * (len(listed) - listed.index(True))


# --- goose -------------------------------------------------------------------------------------------


def test_goose_checks_its_last_usage_at_each_prompt() -> None:
    preset = get_strategy("goose")
    assert preset.estimator == "usage" and preset.harness.checks == "run-start"
    done = _replayed("goose")
    assert done.compactions
    starts = run_starts(MANIFEST.messages)
    base = uncompacted(Meter(MANIFEST, "usage"), 40_000, preset.harness.anchor_output, "run-start")
    first = done.compactions[0].call
    # The first compaction comes at the first prompt whose last usage reaches 0.8 of the window, not in a tool loop.
    expected = next(k for k, tokens in enumerate(base.trigger_tokens) if starts[k] and tokens >= 0.8 * 40_000)
    assert first == expected
    assert all(starts[row.call] for row in done.compactions if row.event.reason == "threshold")
    # The count is the last recorded usage (its prompt and output), not an estimate of the messages since.
    prompts, outputs = base.columns["recorded_prompt_tokens"], base.columns["output_tokens"]
    assert all(base.trigger_tokens[k] == prompts[k - 1] + outputs[k - 1] for k in range(1, first + 1))


def test_goose_summarizes_everything_then_continues_and_repeats_the_request() -> None:
    done = _replayed("goose")
    assert done.compactions
    for row, context in zip(done.compactions, done.compacted):
        head, summary, after = _tail(context)
        assert len(head) == pinned_head(context, False), "nothing but the system prompt and instructions before it"
        assert [m.role for m in after] == ["assistant", "user"]
        before = MANIFEST.messages[: row.message_index]
        latest = next(m for m in reversed(before) if is_user_turn_start(m) and m.text().strip())
        text = "\n".join(p.text for p in latest.parts if isinstance(p, TextPart)).strip()
        assert after[1].text() == text
        at_prompt = before[-1] is latest
        assert after[0].text() == (CONVERSATION_CONTINUATION if at_prompt else TOOL_LOOP_CONTINUATION)


def test_goose_asks_the_summarizer_with_every_tool_response() -> None:
    spy = Spy()
    preset = with_llm(get_strategy("goose"))
    preset.compact(Context(MANIFEST.messages), replace(request(MANIFEST, window=40_000), summarizer=spy))
    assert len(spy.asked) == 1  # one request, no retry with tool responses removed
    results = sum(isinstance(p, ToolResultPart) for m in MANIFEST.messages for p in m.parts)
    assert sum(isinstance(p, ToolResultPart) for m in spy.asked[0].messages for p in m.parts) >= results


# --- openhands-sdk -----------------------------------------------------------------------------------


def _sdk_compact(messages, window: int, summarizer=None, strategy=None):
    preset = strategy or get_strategy("openhands-sdk")
    asked = replace(request(MANIFEST, window=window), pin_task=True, summarizer=summarizer)
    return preset.compact(Context(tuple(messages)), asked)


def test_openhands_sdk_forgets_until_half_the_window() -> None:
    meter = Meter(MANIFEST, "chars/4")
    messages = MANIFEST.messages[:120]
    result = _sdk_compact(messages, 40_000)
    assert result.messages_removed
    head, summary, tail = _tail(result.context.messages)
    assert_no_orphans(result.context.messages)
    cut = len(messages) - len(tail)
    assert all(a is b for a, b in zip(tail, messages[cut:]))
    budget = 20_000 - meter.count(list(head))
    assert meter.count(list(tail)) <= budget
    # The longest such tail: an earlier cut that keeps no tool result from its call would not fit.
    safe = set(safe_cut_points(messages))
    assert all(meter.count(list(messages[j:])) > budget for j in range(len(head), cut) if j in safe)


def test_openhands_sdk_keeps_the_head_and_resummarizes_the_earlier_summary() -> None:
    spy = Spy()
    preset = with_llm(get_strategy("openhands-sdk"))
    first = _sdk_compact(MANIFEST.messages[:120], 40_000, spy, preset)
    head = pinned_head(MANIFEST.messages, True)
    assert head >= 1 and all(a is b for a, b in zip(first.context.messages[:head], MANIFEST.messages[:head]))
    later = _sdk_compact((*first.context.messages, *MANIFEST.messages[120:200]), 40_000, spy, preset)
    assert later.messages_removed and len(spy.asked) == 2
    again = spy.asked[1]
    assert again.previous_summary is None and again.purpose == "history"
    assert is_summary(again.messages[0]) and "SPY SUMMARY 1" in again.messages[0].text()


def test_openhands_sdk_refuses_a_condensation_under_minimum_progress() -> None:
    messages = MANIFEST.messages[:120]
    size = Meter(MANIFEST, "chars/4").count(list(messages))
    sdk = get_strategy("openhands-sdk")
    eager = replace(sdk, strategy=replace(sdk.strategy, minimum_progress=0.01))
    # Windows where half of it holds most of the context: a few messages would be forgotten, under a tenth.
    refused = []
    for share in range(150, 210, 2):
        window = size * share // 100
        result = _sdk_compact(messages, window)
        if result.messages_removed == 0 and "minimum_progress" in result.note and not result.note.startswith("forgets 0 "):
            assert _sdk_compact(messages, window, strategy=eager).messages_removed > 0, window
            refused.append(window)
        elif result.messages_removed:
            assert result.messages_removed >= 0.1 * len(messages) - 1, window
    assert refused, "some window forgets under a tenth of the messages"
