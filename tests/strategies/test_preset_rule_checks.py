"""The preset rules that had no test on a real session (issue 29): one test per rule (a few rules that
share one behaviour, such as the offline summary, share one test), each on a bundled real session.
A deviation's test checks what the preset does instead, as its table says."""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import replace

import pytest

from compactlab.compaction.engine import Engine
from compactlab.contract import Context, SummaryRequest, SummaryResponse
from compactlab.replay.replay import replay
from compactlab.replay.setting import Setting, window_and_trigger
from compactlab.replay.uncompacted import uncompacted
from compactlab.sessions.importers import load_file
from compactlab.sessions.messages import is_summary, pinned_head
from compactlab.sessions.model import ToolCallPart, ToolResultPart
from compactlab.strategies.prune import PLACEHOLDER as PRUNED
from compactlab.strategies.registry import get_strategy
from compactlab.strategies.rule import OFFLINE
from compactlab.tokens.context_windows import ContextWindows
from compactlab.tokens.metering import Meter
from tests.conftest import bundled
from tests.strategies.test_seed_rules import GPT5_MINI, LONG_CODEX, MANIFEST, ME_NEXT, compact, request
from tests.strategy_sessions import assert_no_orphans

AT_64K = ContextWindows(overrides={"": 64_000})
MANUAL = load_file(bundled("m-claude", "97b0ffde"), lenient=True)[0]  # a real manual /compact
OVERFLOWING = load_file(bundled("m-claude", "agent-abc3cb6"), lenient=True)[0]  # one prompt jumps over a 64k window


class Spy:
    """A summarizer standing for the run's LLM: it records what it is asked and answers with a marker."""

    name = "spy"

    def __init__(self) -> None:
        self.asked: list[SummaryRequest] = []

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        self.asked.append(request)
        return SummaryResponse(f"SPY SUMMARY {len(self.asked)}")


def with_llm(strategy: object) -> object:
    """`strategy` with every summarizing part set to the run's summarizer (`summarizer = "llm"`)."""
    if not dataclasses.is_dataclass(strategy) or isinstance(strategy, type):
        return strategy
    changes: dict[str, object] = {}
    for f in dataclasses.fields(strategy):
        value = getattr(strategy, f.name)
        if f.name == "summarizer" and value == "extractive":
            changes[f.name] = "llm"
        elif isinstance(value, tuple) and value and all(dataclasses.is_dataclass(v) for v in value):
            changes[f.name] = tuple(with_llm(v) for v in value)
        elif dataclasses.is_dataclass(value) and f.name != "trigger" and f.name != "harness":
            changes[f.name] = with_llm(value)
    return replace(strategy, **changes) if changes else strategy


def _replayed(name: str, session=LONG_CODEX, windows=AT_64K, strategy=None):
    return replay(session, Setting(name, name), windows, strategy=strategy)


def _rules_about(name: str, words: str):
    return [r for r in get_strategy(name).rules if words in r.rule]


# --- when a preset is asked, and at what size it fires -------------------------------------------------


# pi is asked only before a call that starts a prompt run (Harness.checks "run-start"; its own tests:
# tests/strategies/test_pi_oracle.py, tests/replay/test_run_start_checks.py).
@pytest.mark.parametrize("name", ["seed-000", "seed-003", "seed-004", "cline"])
def test_presets_are_asked_before_every_recorded_call(name: str) -> None:
    done = _replayed(name)
    calls = done.calls
    assert done.compactions
    for row in done.compactions:  # each compaction sits right before a recorded call
        assert calls["compacted_before"][row.call] and calls["message_index"][row.call] == row.message_index
    # Asked before every call, not only at a turn's start or end: some compaction falls in mid-turn
    # (the message before its call is a tool result), as seed 004's table says.
    messages = LONG_CODEX.messages
    assert any(
        messages[row.message_index - 1].role == "tool" for row in done.compactions if row.event.reason != "silent_overflow"
    )


@pytest.mark.parametrize(
    ("name", "share"),
    [
        ("seed-000", 0.8),
        ("seed-002", 1.0),
        ("seed-004", 0.8),
        ("codex", 0.9),
        ("openhands", 0.8),
        ("cline", 0.9),
        ("openhands-sdk", 1.0),
    ],
)
def test_thresholds_fire_at_their_share_of_the_window(name: str, share: float) -> None:
    preset = get_strategy(name)
    line = math.ceil(share * 64_000)
    assert preset.trigger.check(line, 64_000) and preset.trigger.check(line - 1, 64_000) is None  # at ≥, not >
    # On a real session the first threshold compaction comes at the first call whose size reaches the line.
    base = uncompacted(Meter(LONG_CODEX, preset.estimator), 64_000, preset.harness.anchor_output)
    first = next(i for i, tokens in enumerate(base.trigger_tokens) if tokens >= line)
    done = _replayed(name)
    assert done.compactions[0].call == first and done.compactions[0].event.reason == "threshold"


def test_the_provider_count_is_dropped_after_a_compaction() -> None:
    preset = get_strategy("seed-000")
    meter = Meter(MANIFEST, preset.estimator)
    calls = [i for i, m in enumerate(MANIFEST.messages) if m.call is not None]
    last = MANIFEST.messages[calls[-1]].call
    assert last is not None
    context = Context(MANIFEST.messages, known_usage=(calls[-1] + 1, last.prompt_tokens + last.output_tokens))
    engine = Engine(preset, 40_000, meter, meter.count, trigger=preset.trigger, harness=preset.harness)
    after, event = engine.before_call(context)
    assert event is not None and event.compacted
    # lastPromptTokens = 0: the compacted context is counted locally, not anchored on the old count.
    assert after.known_usage is None and meter(after) == meter.from_sum(sum(meter.message_tokens(m) for m in after.messages))


# --- the summary and what is kept ----------------------------------------------------------------------


def test_summaries_are_user_messages() -> None:
    summary = next(m for m in compact("seed-000", ME_NEXT).context.messages if is_summary(m))
    assert summary.role == "user" and summary.text().strip()


def test_seed_000_keeps_every_archive_and_reads_none() -> None:
    seed = get_strategy("seed-000")
    half = len(ME_NEXT.messages) // 2
    first = seed.compact(Context(ME_NEXT.messages[:half]), request(ME_NEXT)).context
    grown = replace(first, messages=(*first.messages, *ME_NEXT.messages[half:]))
    second = seed.compact(grown, request(ME_NEXT)).context
    assert second.archives == (ME_NEXT.messages[:half], grown.messages)
    # Nothing is read back from an archive: the new session is the head and the new summary alone.
    head = pinned_head(ME_NEXT.messages)
    assert len(second.messages) == head + 1 and is_summary(second.messages[-1]) and "archive #2" in second.messages[-1].text()


SUMMARIZING = ("seed-000", "seed-001", "seed-002", "seed-003", "seed-004", "pi", "opencode", "codex", "claude-code", "openhands",
               "cline", "goose", "openhands-sdk")  # fmt: skip


@pytest.mark.parametrize("name", SUMMARIZING)
def test_offline_the_extractive_stand_in_writes_the_summary_and_the_runs_llm_otherwise(name: str) -> None:
    preset = get_strategy(name)
    spy = Spy()
    offline = preset.compact(Context(MANIFEST.messages), replace(request(MANIFEST, window=30_000), summarizer=spy))
    assert not spy.asked and not offline.summarizer_calls and not fell_back(offline.note)
    online = with_llm(preset)
    result = online.compact(Context(MANIFEST.messages), replace(request(MANIFEST, window=30_000), summarizer=spy))
    assert spy.asked and "SPY SUMMARY" in "".join(m.text() for m in result.context.messages)
    assert any(r.deviation == OFFLINE for r in preset.rules)


def fell_back(note: str) -> bool:
    return "[fell back]" in note


@pytest.mark.parametrize("name", ["seed-001", "seed-002", "cline"])  # pi: its own estimateTokens (test_pi_oracle.py)
def test_hybrid_presets_add_new_messages_as_chars_over_4(name: str) -> None:
    preset = get_strategy(name)
    meter = Meter(MANIFEST, preset.estimator)
    assert preset.estimator == "hybrid" and meter.local.name == "chars/4"
    base = uncompacted(meter, 10**7, preset.harness.anchor_output)
    quarter = Meter(MANIFEST, "chars/4")
    positions, full, outputs = base.positions, base.columns["full_tokens"], base.columns["output_tokens"]
    for k in range(1, len(positions)):
        since = MANIFEST.messages[positions[k - 1] + 1 : positions[k]]
        expected = full[k - 1] + outputs[k - 1] + sum(quarter.message_tokens(m) for m in since)
        assert abs(base.trigger_tokens[k] - expected) <= 1, k
    # ceil(len / 4) for one text (seed 002's Token Estimation): chars/4 rounds each whole count.
    text = MANIFEST.messages[positions[0]].text()
    assert abs(quarter.count([MANIFEST.messages[positions[0]]]) - math.ceil(len(text) / 4)) <= 10


SECTIONS = {
    "seed-001": ("User's Primary Goals", "Conversation Timeline", "Technical Context", "Files and Code Changes",
                 "Active Work and Last Actions", "Unresolved Issues", "Immediate Next Step"),
    "openhands": ("USER_CONTEXT", "TASK_TRACKING", "CODE_STATE", "TESTS", "CHANGES", "DEPS"),
    "seed-004": ("## Goal", "## Progress", "## Key Decisions", "## Next Steps", "## Critical Context"),
    "cline": ("## Goal", "## State", "## Highlights", "## Next", "## Files"),
    "openhands-sdk": ("USER_CONTEXT", "TASK_TRACKING", "CODE_STATE", "TESTS", "CHANGES", "DEPS", "VERSION_CONTROL_STATUS"),
    "goose": ("## Goal", "## Constraints & Preferences", "## Key Decisions", "## Next Steps", "## Critical Context"),
}  # fmt: skip


@pytest.mark.parametrize("name", list(SECTIONS))
def test_presets_ask_with_their_sources_prompt(name: str) -> None:
    spy = Spy()
    preset = with_llm(get_strategy(name))
    preset.compact(Context(MANIFEST.messages), replace(request(MANIFEST, window=30_000), summarizer=spy))
    asked = spy.asked[0]
    missing = [section for section in SECTIONS[name] if section not in asked.prompt]
    assert not missing, (name, missing)
    task = MANIFEST.messages[pinned_head(MANIFEST.messages, False)].text()
    assert task[:60] in asked.prompt  # the real session is what the prompt asks about
    if name == "seed-004":  # its structured summary ends with the cumulative file lists
        summary = next(m for m in compact(name, MANIFEST, window=30_000).context.messages if is_summary(m))
        assert "<read-files>" in summary.text() and "<modified-files>" in summary.text()


def _cut_after_a_tool_call(session):
    """The session up to an assistant message whose tool call has no result yet."""
    for i, message in enumerate(session.messages):
        if any(isinstance(p, ToolCallPart) for p in message.parts) and i > 20:
            return session.messages[: i + 1]
    raise AssertionError("no tool call")


def test_missing_tool_results_are_filled_for_the_summarizer_only() -> None:
    spy = Spy()
    history = _cut_after_a_tool_call(MANIFEST)
    result = with_llm(get_strategy("seed-001")).compact(Context(history), replace(request(MANIFEST), summarizer=spy))
    filled = [p for m in spy.asked[0].messages for p in m.parts if isinstance(p, ToolResultPart)]
    assert filled[-1].content == "[no result recorded before this point]"
    assert "[no result recorded before this point]" not in "".join(m.text() for m in result.context.messages)


def test_seed_001_adds_no_understood_message() -> None:
    history = _cut_after_a_tool_call(MANIFEST)
    with_results = MANIFEST.messages[: len(history) + 1]  # ends with the tool's result
    assert with_results[-1].role == "tool"
    after = get_strategy("seed-001").compact(Context(with_results), request(MANIFEST)).context.messages
    assert not [m for m in after if m.role == "assistant" and m.text().strip() == "Understood."]
    assert is_summary(after[-1]) or after[-1].role == "user"


def test_the_replays_measure_stands_in_for_the_api_recount() -> None:
    done = _replayed("seed-001")
    assert done.compactions
    for row in done.compactions:  # the next call's prompt is the compacted context as the engine measured it
        assert done.calls["context_tokens"][row.call] == row.event.tokens_after


# --- pruning -------------------------------------------------------------------------------------------


def _seed_002_prune():
    return get_strategy("seed-002").strategy.stages[1]


def test_seed_002_prunes_only_beyond_its_minimum() -> None:
    prune = _seed_002_prune()
    assert (prune.protect_tokens, prune.minimum_tokens) == (40_000, 20_000)
    count = Meter(LONG_CODEX, "chars/4").count
    # A prefix with some prunable output beyond the newest 40,000, but under 20,000 of it: nothing pruned.
    for end in range(60, len(LONG_CODEX.messages), 20):
        messages = LONG_CODEX.messages[:end]
        loose = replace(prune, minimum_tokens=0).compact(Context(messages), request(LONG_CODEX)).context.messages
        freed = count(messages) - count(loose)
        if 0 < freed < 20_000:
            assert prune.compact(Context(messages), request(LONG_CODEX)).note.startswith("nothing to do")
            return
    raise AssertionError("no prefix with less than 20,000 prunable tokens")


def test_seed_002_protects_the_skill_tool() -> None:
    prune = replace(_seed_002_prune(), protect_tokens=2_000, minimum_tokens=1_000)
    assert "skill" in prune.protected_tools

    def renamed(message):
        parts = tuple(replace(p, name="skill") if isinstance(p, ToolCallPart) else p for p in message.parts)
        return replace(message, parts=parts)

    skills = tuple(renamed(m) for m in MANIFEST.messages)
    assert "cleared" in prune.compact(Context(MANIFEST.messages), request(MANIFEST)).note
    assert prune.compact(Context(skills), request(MANIFEST)).note.startswith("nothing to do")


def test_seed_002_prunes_every_recorded_result_errors_included() -> None:
    prune = replace(_seed_002_prune(), protect_tokens=2_000, minimum_tokens=1_000)
    errors = [i for i, m in enumerate(ME_NEXT.messages) for p in m.parts if isinstance(p, ToolResultPart) and p.is_error]
    assert errors
    after = prune.compact(Context(ME_NEXT.messages), request(ME_NEXT)).context.messages
    pruned = [p for i in errors for p in after[i].parts if isinstance(p, ToolResultPart) and p.content == PRUNED]
    assert pruned, "an error result (a state the recordings do not tell from completed) is pruned as any other"


@pytest.mark.parametrize("name", ["seed-002", "opencode", "claude-code", "jetbrains-masking", "goose", "openhands-sdk"])
def test_presets_change_nothing_between_compactions(name: str) -> None:
    # No pruning at a session start, no microcompaction, no masking at every step: until a compaction
    # the prompt is the whole history, and the context changes only at the calls a compaction precedes.
    done = _replayed(name)
    calls = done.calls
    first = done.compactions[0].call
    assert first > 0 and calls["context_tokens"][:first] == calls["full_tokens"][:first]
    assert {k for k, flag in enumerate(calls["compacted_before"]) if flag} == {row.call for row in done.compactions}


# --- windows and estimators ------------------------------------------------------------------------------


def test_seed_003_runs_at_the_models_window_not_8000() -> None:
    done = _replayed("seed-003", GPT5_MINI, ContextWindows())
    assert set(done.calls["window"]) == {400_000}


def test_seed_003_counts_words_cjk_and_special_characters() -> None:
    meter = Meter(ME_NEXT, get_strategy("seed-003").estimator)
    message = next(m for m in ME_NEXT.messages if m.role == "user" and m.text().strip())
    text = "".join(p.text for p in message.parts if hasattr(p, "text"))
    words = len(re.findall(r"[A-Za-z0-9_]+", text))
    special = len(re.findall(r"[^\sA-Za-z0-9_]", text))
    assert meter.message_tokens(message) == pytest.approx(0.75 * words + 0.25 * special, abs=3)
    assert meter.count([]) == 50  # + 50 per prompt


def test_seed_004_window_from_its_table_and_128k_for_unknown_models() -> None:
    done = _replayed("seed-004", GPT5_MINI, ContextWindows())
    assert set(done.calls["window"]) == {400_000}
    assert ContextWindows().lookup("a-model-nobody-knows").tokens == 128_000


def test_manual_compactions_are_not_replayed() -> None:
    assert [m.trigger for m in MANUAL.compactions] == ["manual"]
    done = _replayed("seed-004", MANUAL, ContextWindows(overrides={"": 24_000}))
    assert done.compactions and all(row.event.reason != "manual" for row in done.compactions)
    assert MANUAL.compactions[0].at_message not in {row.message_index for row in done.compactions}


def test_opencode_reserves_one_reserve_for_every_model() -> None:
    preset = get_strategy("opencode@31e22f65")  # V1's rule (V2's: test_presets_today)
    for model in ("gpt-5", "deepseek-chat", "claude-sonnet-4-5"):  # no model's input or output limit changes it
        assert preset.trigger.for_model(model).reserve_tokens == preset.trigger.reserve_tokens == 52_000
    # On a real gpt-5 session at a 64k window the reserve is scaled by 64,000 ÷ the real window, and the
    # first compaction comes at the first call whose size passes window − that reserve.
    real = LONG_CODEX.context_window or ContextWindows().lookup(LONG_CODEX.calls[0].model).tokens
    window, trigger = window_and_trigger(preset, None, AT_64K, LONG_CODEX.calls[0].model, LONG_CODEX.context_window)
    assert trigger.reserve_tokens == round(52_000 * 64_000 / real)
    base = uncompacted(Meter(LONG_CODEX, preset.estimator), window, preset.harness.anchor_output)
    first = next(i for i, tokens in enumerate(base.trigger_tokens) if tokens > window - trigger.reserve_tokens)
    assert _replayed("opencode@31e22f65").compactions[0].call == first


def test_opencode_and_openhands_give_the_previous_summary_to_the_new_one() -> None:
    for name in ("opencode-summary", "openhands"):
        spy = Spy()
        strategy = with_llm(get_strategy(name))
        half = len(LONG_CODEX.messages) // 2
        ask = replace(request(LONG_CODEX, window=60_000), summarizer=spy)
        first = strategy.compact(Context(LONG_CODEX.messages[:half]), ask).context
        strategy.compact(replace(first, messages=(*first.messages, *LONG_CODEX.messages[half:])), ask)
        updates = [asked for asked in spy.asked if asked.purpose == "update"]
        assert updates and updates[-1].previous_summary is not None and "SPY SUMMARY 1" in updates[-1].previous_summary


def test_codex_compacts_locally_without_ghost_snapshots() -> None:
    result = compact("codex", LONG_CODEX, window=272_000)
    assert not result.summarizer_calls  # no remote compaction endpoint: the local summary
    roles = {m.role for m in result.context.messages}
    assert roles <= {"system", "user"}, roles  # instructions, kept user messages, the summary: nothing else carried


def test_claude_code_keeps_the_harness_guard_and_overflow_path() -> None:
    preset = get_strategy("claude-code")
    assert preset.harness.loop_guard and preset.harness.emergency
    # The harness's emergency path compacts an over-window request; a preset without it (JetBrains) does not.
    for name, acts in (("claude-code", True), ("jetbrains-masking", False)):
        strategy = get_strategy(name)
        meter = Meter(OVERFLOWING, strategy.estimator)
        engine = Engine(strategy, 64_000, meter, meter.count, trigger=strategy.trigger, harness=strategy.harness)
        _, event = engine.emergency(Context(OVERFLOWING.messages), reason="silent_overflow")
        assert (event is not None and event.compacted) is acts, name


def test_openhands_keeps_a_quarter_of_the_window() -> None:
    for window in (40_000, 80_000):
        after = compact("openhands", LONG_CODEX, window=window).context.messages
        at = next(i for i, m in enumerate(after) if is_summary(m))
        kept = Meter(LONG_CODEX, "chars/4").count(after[at + 1 :])
        assert 0 < kept <= window // 4 + 2_000, (window, kept)


def test_pi_drops_the_tail_it_kept_at_its_previous_compaction() -> None:
    # prepareCompaction summarizes from the previous compaction entry on (boundaryStart): the entries it
    # kept verbatim then, before that entry in pi's log, are neither summarized nor kept.
    pi = with_llm(get_strategy("pi"))
    half = len(LONG_CODEX.messages) // 2
    asked = {}
    for drop in (True, False):
        spy = Spy()
        strategy = replace(pi, strategy=replace(pi.strategy, drop_kept_tail=drop))
        ask = replace(request(LONG_CODEX, window=200_000), summarizer=spy)
        first = strategy.compact(Context(LONG_CODEX.messages[:half]), ask).context
        tail = first.messages[first.messages.index(next(m for m in first.messages if is_summary(m))) + 1 :]
        assert first.kept_tail == len(tail) > 0
        second = strategy.compact(replace(first, messages=(*first.messages, *LONG_CODEX.messages[half:])), ask)
        summarized = [m for request_ in spy.asked[1:] for m in request_.messages]
        kept = second.context.messages
        asked[drop] = sum(any(m is t for m in summarized) or any(m is t for m in kept) for t in tail)
        assert_no_orphans(kept)
    assert asked == {True: 0, False: len(tail)}  # dropped, where the harness default summarized them
    assert get_strategy("pi").strategy.drop_kept_tail and not get_strategy("seed-004").strategy.drop_kept_tail
