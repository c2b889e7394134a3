"""The provider presets' rules (compactlab.strategies.provider_rules), one test per rule, on real bundled
sessions: Anthropic's context editing and server compaction, OpenAI's Responses compaction."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from compactlab.compaction.engine import Engine
from compactlab.contract import Context
from compactlab.replay.replay import replay
from compactlab.replay.setting import Setting, window_and_trigger
from compactlab.report.overview_section import strategy_about
from compactlab.runs.run_checks import resolve
from compactlab.runs.run_config import RunConfig, load_config, setting_from
from compactlab.sessions.importers import load_file
from compactlab.sessions.messages import is_summary, pinned_head
from compactlab.sessions.model import ToolCallPart, ToolResultPart
from compactlab.strategies.context_editing import PLACEHOLDER
from compactlab.strategies.registry import get_strategy
from compactlab.tokens.context_windows import ContextWindows
from compactlab.tokens.metering import Meter
from tests.conftest import bundled
from tests.strategies.test_seed_rules import request

# A Claude Sonnet 4.5 session (200,000-token window) whose prompts reach 155,000 tokens, 171 tool uses.
SONNET = load_file(bundled("m-claude", "3af9b1a7"), lenient=True)[0]
# A pi session on Claude Opus 4.5 (200,000) whose prompts reach 185,000 tokens.
PI = load_file(bundled("pi-sessions", "pi-mono-before-compaction"))[0]
# A gpt-5.2-codex session whose prompts reach 173,000 tokens.
CODEX = load_file(bundled("codex-rollouts", "Kocoro-lab__Shannon"))[0]
PROVIDERS = ("anthropic-context-editing", "anthropic-compaction", "openai-compaction")
REAL = ContextWindows()  # each model's real window: the thresholds as documented


def _uses(messages):
    """The tool results in order, with their calls (by id)."""
    calls = {p.id: p for m in messages for p in m.parts if isinstance(p, ToolCallPart)}
    return [(p, calls.get(p.call_id)) for m in messages for p in m.parts if isinstance(p, ToolResultPart)]


def _edited(name="anthropic-context-editing", session=SONNET, window=200_000, **settings):
    """One compaction of the whole of `session` by the preset, asked as the engine asks it (its harness
    pins no task)."""
    preset = get_strategy(name, **settings)
    ask = replace(request(session, window=window, estimator=preset.estimator), pin_task=preset.harness.pin_task)
    return preset.compact(Context(session.messages), ask)


def _first_firing(name: str, session, window: int, **settings) -> tuple[int, list[int]]:
    """The engine asked with the preset's trigger before each recorded call of `session` (its prompt: the
    messages before the call) at the model's real `window`: the call it first fires at, and every
    call's size as the preset counts it."""
    preset = get_strategy(name, **settings)
    meter = Meter(session, preset.estimator)
    engine = Engine(preset, window, lambda c: meter.count(c.messages), meter.count, preset.trigger, harness=preset.harness)
    sizes, fired = [], -1
    for index, message in enumerate(session.messages):
        if message.call is None:
            continue
        sizes.append(meter.count(session.messages[:index]))
        if engine.due(sizes[-1]) is not None:
            fired = len(sizes) - 1
            break
    return fired, sizes


def _first_compaction(name: str, session, **settings):
    preset = get_strategy(name, **settings)
    done = replay(session, Setting(name, name), REAL, strategy=preset)
    return done, (done.compactions[0].event if done.compactions else None)


# --- anthropic-context-editing ------------------------------------------------------------------


def test_context_editing_fires_at_100000_and_not_below() -> None:
    preset = get_strategy("anthropic-context-editing")
    assert preset.trigger.check(100_000, 200_000) is None and preset.trigger.check(100_001, 200_000) == "threshold"
    # On a real session at its real window: the first prompt over 100,000, and none before it.
    fired, sizes = _first_firing("anthropic-context-editing", SONNET, 200_000)
    assert fired > 0 and sizes[fired] > 100_000 and max(sizes[:fired]) <= 100_000
    # The trigger is the setting: set at that prompt's size, the clearing waits for a larger one.
    later, more = _first_firing("anthropic-context-editing", SONNET, 200_000, trigger_tokens=sizes[fired])
    assert later > fired and more[later] > sizes[fired] >= max(more[:later])
    # At a simulated 64,000-token window it keeps its share of Claude's 200,000: 32,000.
    _, scaled = window_and_trigger(preset, None, ContextWindows(overrides={"": 64_000}), "claude-sonnet-4-5", None)
    assert scaled.absolute == round(100_001 * 64_000 / 200_000)


def test_context_editing_keeps_exactly_the_newest_tool_uses() -> None:
    before, after = _uses(SONNET.messages), _uses(_edited().context.messages)
    assert len(before) == len(after) == 171
    assert [p for p, _ in after[-3:]] == [p for p, _ in before[-3:]], "the newest 3 tool uses keep their results"
    assert all(p.content == PLACEHOLDER for p, _ in after[:-3]), "every older result holds the placeholder"
    kept5 = _uses(_edited(keep=5).context.messages)
    assert [p for p, _ in kept5[-5:]] == [p for p, _ in before[-5:]] and kept5[-6][0].content == PLACEHOLDER


def test_context_editing_keeps_the_excluded_tools() -> None:
    tool = Counter(call.name for _, call in _uses(SONNET.messages) if call).most_common(1)[0][0]
    before, after = _uses(SONNET.messages), _uses(_edited(exclude_tools=(tool,)).context.messages)
    excluded = [(old, new) for (old, call), (new, _) in zip(before, after) if call and call.name == tool]
    assert len(excluded) > 10 and all(old == new for old, new in excluded), f"every {tool} result is kept"
    others = [new for (old, call), (new, _) in zip(before[:-3], after[:-3]) if not (call and call.name == tool)]
    assert others and all(p.content == PLACEHOLDER for p in others)


def test_context_editing_clears_inputs_only_when_asked() -> None:
    default = _uses(_edited().context.messages)
    assert [c for _, c in default] == [c for _, c in _uses(SONNET.messages)], "by default no call is touched"
    cleared = _uses(_edited(clear_tool_inputs=True).context.messages)
    assert all(c.arguments == "{}" for _, c in cleared[:-3] if c)
    assert [c for _, c in cleared[-3:]] == [c for _, c in _uses(SONNET.messages)[-3:]]


def test_context_editing_respects_clear_at_least() -> None:
    meter = Meter(SONNET, "tiktoken-o200k")
    cleared = meter.count(SONNET.messages) - meter.count(_edited().context.messages)
    assert cleared > 10_000
    assert _edited(clear_at_least=cleared).context.messages != SONNET.messages, "exactly clear_at_least: cleared"
    refused = _edited(clear_at_least=cleared + 1)
    assert refused.context.messages == SONNET.messages and "under clear_at_least" in refused.note


def test_context_editing_edits_in_place_and_breaks_the_cache_at_the_first_cleared_result() -> None:
    done, event = _first_compaction("anthropic-context-editing", SONNET)
    assert event is not None and event.messages_removed == 0 and event.messages_before == event.messages_after
    at = done.calls["compacted_before"].index(True)
    previous, prefix = done.calls["context_tokens"][at - 1], done.calls["prefix_tokens"][at]
    # Anthropic reads a prefix only up to a breakpoint before the change: the edit, far back in the
    # prompt, leaves the head the agent marks (the warm part the first call read), as a summary does
    # ("clearing invalidates the cached prompt prefix"; compactlab.replay.prompt_cache).
    warm = SONNET.calls[0].cache_read_tokens
    assert 0 < prefix == warm < previous
    summary, summarized = _first_compaction("anthropic-compaction", SONNET, trigger_tokens=event.tokens_before - 1)
    assert summarized is not None
    cut = summary.calls["compacted_before"].index(True)
    assert summary.calls["prefix_tokens"][cut] == warm


def test_the_provider_presets_have_no_guard_no_retry_and_pin_nothing() -> None:
    for name in PROVIDERS:
        harness = get_strategy(name).harness
        assert not (harness.loop_guard or harness.emergency or harness.pin_task), name
        assert harness.window == "scaled", name


def test_the_provider_presets_count_with_the_estimator_nearest_the_providers() -> None:
    for name in PROVIDERS:
        assert get_strategy(name).estimator == "tiktoken-o200k", name
    # The run counts these presets' prompts with it, whatever the run's own estimator.
    config, _ = resolve(RunConfig(datasets=(str(bundled("m-claude", "3af9b1a7")),), strategies=PROVIDERS))
    assert all(entry.estimator is None for entry in config.strategies)


# --- anthropic-compaction -----------------------------------------------------------------------


def test_server_compaction_fires_at_150000_and_not_below() -> None:
    preset = get_strategy("anthropic-compaction")
    assert preset.trigger.check(150_000, 200_000) is None and preset.trigger.check(150_001, 200_000) == "threshold"
    fired, sizes = _first_firing("anthropic-compaction", PI, 200_000)
    assert fired > 0 and sizes[fired] > 150_000 and max(sizes[:fired]) <= 150_000
    # Below the trigger nothing fires: on a session whose prompts stay under 150,000 (SONNET's, as counted).
    never, under = _first_firing("anthropic-compaction", SONNET, 200_000)
    assert never == -1 and 100_000 < max(under) <= 150_000


def test_a_server_compaction_trigger_below_50000_is_refused_naming_the_setting(tmp_path: Path) -> None:
    assert get_strategy("anthropic-compaction", trigger_tokens=50_000).trigger.absolute == 50_001
    with pytest.raises(ValueError, match=r"trigger_tokens = 49999 .*at least 50,000"):
        get_strategy("anthropic-compaction", trigger_tokens=49_999)
    # From a run configuration: the error names the file and the entry, before anything is replayed.
    config = tmp_path / "run.toml"
    config.write_text('[[strategy]]\nname = "anthropic-compaction"\nsettings = { trigger_tokens = 20000 }\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"run\.toml: \[\[strategy\]\] #1: anthropic-compaction: setting trigger_tokens = 20000"):
        load_config(config)
    assert setting_from({"name": "anthropic-compaction", "settings": {"trigger_tokens": 50_000}}, "x").settings


def test_server_compaction_drops_everything_before_its_block_and_keeps_the_system_prompt() -> None:
    result = _edited("anthropic-compaction")
    after = result.context.messages
    head = pinned_head(SONNET.messages, pin_task=False)
    assert after[:head] == SONNET.messages[:head], "the system prompt and instructions stay"
    assert len(after) == head + 1 and is_summary(after[-1]), "every message block before the compaction block is dropped"
    assert get_strategy("anthropic-compaction").strategy.template == "summary.j2"
    # A session with instructions (Codex's AGENTS.md messages): they stay before the summary, the rest goes.
    with_system = _edited("anthropic-compaction", CODEX, window=400_000).context.messages
    head = pinned_head(CODEX.messages, pin_task=False)
    assert head > 0 and with_system[:head] == CODEX.messages[:head] and len(with_system) == head + 1


def test_a_paused_compaction_keeps_what_the_client_re_appends() -> None:
    after = _edited("anthropic-compaction", keep_recent_tokens=8_000).context.messages
    summary = next(i for i, m in enumerate(after) if is_summary(m))
    tail = after[summary + 1 :]
    assert tail and tail == SONNET.messages[len(SONNET.messages) - len(tail) :], "the re-appended messages verbatim"


# --- openai-compaction --------------------------------------------------------------------------


def test_openai_compaction_fires_at_its_threshold_and_not_below() -> None:
    preset = get_strategy("openai-compaction")
    assert preset.trigger.check(200_000, 400_000) is None and preset.trigger.check(200_001, 400_000) == "threshold"
    never, sizes = _first_firing("openai-compaction", CODEX, 400_000)
    assert never == -1 and max(sizes) <= 200_000, "the session's prompts stay under the assumed 200,000"
    fired, sizes = _first_firing("openai-compaction", CODEX, 400_000, compact_threshold=150_000)
    assert fired > 0 and sizes[fired] > 150_000 and max(sizes[:fired]) <= 150_000


def test_openai_compaction_replaces_the_history_with_an_item_of_the_assumed_size() -> None:
    after = _edited("openai-compaction", CODEX, window=400_000).context.messages
    head = pinned_head(CODEX.messages, pin_task=False)
    assert after[:head] == CODEX.messages[:head] and len(after) == head + 1 and is_summary(after[-1])
    meter = Meter(CODEX, "tiktoken-o200k")
    item = meter.count(after[-1:]) - meter.count(())
    small = _edited("openai-compaction", CODEX, window=400_000, max_summary_tokens=100).context.messages[-1:]
    assert 0 < item <= 4_096 and meter.count(small) - meter.count(()) <= 100 + 20
    # The report shows each strategy's description: it says the item's size is assumed.
    assert "size is assumed" in strategy_about("openai-compaction")["description"]


def test_every_provider_preset_runs_on_a_bundled_session() -> None:
    for name in PROVIDERS:
        done = replay(SONNET, Setting(name, name), ContextWindows(overrides={"": 64_000}), strategy=get_strategy(name))
        assert done.compactions and all(row.event.failed is None for row in done.compactions), name
