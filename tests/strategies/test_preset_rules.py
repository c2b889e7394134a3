"""The presets' rules table and the rules issue 29 added, each on a real session: the harness
policies a preset sets as its source (task pinning, the loop guard, the emergency path, absolute
sizes under a simulated window), and the opencode and seed 004 rules its table names."""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path

import pytest

from compactlab.compaction.engine import Engine
from compactlab.contract import CompactionRequest, Context, Harness
from compactlab.replay.replay import replay, replay_plain
from compactlab.replay.setting import Setting, window_and_trigger
from compactlab.replay.uncompacted import uncompacted
from compactlab.report.run_data import load_run
from compactlab.report.run_report import metadata_context
from compactlab.runs import runs
from compactlab.runs.run_config import RunConfig, setting_from
from compactlab.runs.run_summary import write_summary
from compactlab.sessions.importers import load_file
from compactlab.sessions.messages import is_summary, is_user_turn_start, safe_cut_points, task_index
from compactlab.strategies.presets import RULES
from compactlab.strategies.prune import Prune
from compactlab.strategies.registry import get_strategy
from compactlab.strategies.summarize import TURN_SEPARATOR, choose_cut
from compactlab.tokens.context_windows import ContextWindows
from compactlab.tokens.metering import Meter
from tests.conftest import bundled
from tests.scripts import preset_table
from tests.strategies.test_seed_rules import GPT5_MINI, LONG_CODEX, MANIFEST, compact, request

ROOT = Path(__file__).resolve().parents[2]
OVERFLOWING = load_file(bundled("m-claude", "agent-abc3cb6"), lenient=True)[0]  # one prompt jumps over a 64k window
SUMMARIZING = ("seed-000", "seed-001", "seed-002", "seed-004", "pi", "opencode", "claude-code", "openhands", "cline", "goose")


# --- the table ----------------------------------------------------------------------------------


def test_the_rules_table_in_docs_is_up_to_date() -> None:
    committed = (ROOT / "docs" / "preset-rules.md").read_text(encoding="utf-8")
    assert committed == preset_table.render(), "run: python -m tests.scripts.preset_table"


def test_the_strategies_page_shows_each_presets_counts() -> None:
    assert preset_table.counts_table() in (ROOT / "docs" / "strategies.md").read_text(encoding="utf-8")


def test_every_rule_has_a_test_that_exists_and_every_deviation_says_why() -> None:
    defined: dict[str, set[str]] = {}
    for rules in RULES.values():
        for rule in rules:
            assert rule.rule and rule.source and rule.does, rule
            assert rule.matches or len(rule.deviation) > 20, rule  # a reason, not a word
            assert rule.test, f"no test on a real session for {rule.rule!r}"
            path, name = rule.test.split("::")
            if path not in defined:
                tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
                defined[path] = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
            assert name in defined[path], rule.test
    for name in RULES:  # a preset's deviations are its differing rules, nothing else
        preset = get_strategy(name)
        assert preset.deviations.count("because") == sum(not r.matches for r in preset.rules)


# --- the harness: task pinning, the loop guard, the emergency path, the window --------------------


def _first_compaction(name: str, session, window: int, **harness: object):
    preset = get_strategy(name)
    if harness:
        preset = replace(preset, harness=replace(preset.harness, **harness))
    done = replay(session, Setting(name, name), ContextWindows(overrides={"": window}), strategy=preset)
    return done.compacted[0]


def test_presets_do_not_pin_the_task() -> None:
    task = MANIFEST.messages[task_index(MANIFEST.messages)]
    for name in SUMMARIZING:
        assert not get_strategy(name).harness.pin_task, name
        assert task not in _first_compaction(name, MANIFEST, 40_000), name
    # The harness's default keeps it (the check can fail): a plain strategy, and a preset told to pin.
    assert task in replay(MANIFEST, Setting("s", "summarize"), ContextWindows(overrides={"": 40_000})).compacted[0]
    assert task in _first_compaction("pi", MANIFEST, 40_000, pin_task=True)


def test_without_the_loop_guard_the_trigger_is_obeyed_again() -> None:
    # Observation masking on a context with fewer than 10 tool outputs has nothing to mask.
    context = Context(messages=MANIFEST.messages[:12])
    meter = Meter(MANIFEST, "chars/4")
    attempts = {}
    for guard in (True, False):
        engine = Engine(get_strategy("jetbrains-masking"), 1_000, meter, meter.count, harness=Harness(loop_guard=guard))
        events = [engine.before_call(context)[1] for _ in range(3)]
        attempts[guard] = sum(event is not None for event in events)
        assert all(event is None or not event.changed for event in events)
    assert attempts == {True: 1, False: 3}
    assert {name for name in RULES if get_strategy(name).harness.loop_guard} == {
        "codex",
        "claude-code",
        "codex@0100b103",
        "claude-code@2026-06-07",
    }


def test_presets_set_the_emergency_path_as_their_sources() -> None:
    expected = {
        "seed-004",
        "pi",
        "opencode",
        "opencode@31e22f65",
        "openhands",
        "claude-code",
        "claude-code@2026-06-07",
        "cline",
        "goose",
        "openhands-sdk",
    }
    assert {name for name in RULES if get_strategy(name).harness.emergency} == expected
    # seed 001 has no overflow path: the prompt that jumps over the window stays over it.
    windows = ContextWindows(overrides={"": 64_000})
    own = replay(OVERFLOWING, Setting("s", "seed-001"), windows)
    preset = get_strategy("seed-001")
    with_path = replay(OVERFLOWING, Setting("s", "seed-001"), windows, strategy=replace(preset, harness=Harness(pin_task=False)))
    assert sum(own.calls["over_window"]) >= 1 and not any(c.event.reason == "silent_overflow" for c in own.compactions)
    assert any(c.event.reason == "silent_overflow" for c in with_path.compactions)
    assert sum(with_path.calls["over_window"]) < sum(own.calls["over_window"])


def test_absolute_sizes_scale_with_a_simulated_window() -> None:
    preset = get_strategy("seed-001")
    real = LONG_CODEX.context_window
    window, trigger = window_and_trigger(preset, None, ContextWindows(overrides={"": 64_000}), "gpt-5", real)
    assert (window, trigger.absolute) == (64_000, round(200_000 * 64_000 / real))
    scaled = replay(LONG_CODEX, Setting("s", "seed-001"), ContextWindows(overrides={"": 64_000}))
    first = scaled.compactions[0]
    assert first.event.reason == "threshold" and first.event.tokens_before >= trigger.absolute
    # "real": the preset runs at the model's window whatever the run simulates.
    at_real = replace(preset, harness=replace(preset.harness, window="real"))
    done = replay(LONG_CODEX, Setting("s", "seed-001"), ContextWindows(overrides={"": 64_000}), strategy=at_real)
    assert set(done.calls["window"]) == {real}
    # A trigger the user sets is taken as written.
    assert window_and_trigger(preset, trigger, ContextWindows(overrides={"": 64_000}), "gpt-5", real)[1] == trigger


# --- opencode ----------------------------------------------------------------------------------


def test_opencode_always_summarizes() -> None:
    # A target pruning alone reaches: opencode's processCompaction summarizes anyway.
    result = compact("opencode@31e22f65", LONG_CODEX, window=272_000, target=10**9)
    assert result.note.startswith("prune: cleared") and "iterative-merge: summarized" in result.note


def test_opencode_never_prunes_a_single_prompt_session() -> None:
    small = {"protect_tokens": 2_000, "minimum_tokens": 1_000}
    opencode_prune = get_strategy("opencode@31e22f65").strategy.stages[0]
    assert opencode_prune.steps_as_turns is False
    assert compact(replace(opencode_prune, **small), GPT5_MINI).note.startswith("nothing to do")
    assert "cleared" in compact(Prune(**small), GPT5_MINI).note  # steps as turns: the session is pruned


def test_opencode_keeps_whole_turns_within_the_budget() -> None:
    summary = get_strategy("opencode-summary")
    count = Meter(LONG_CODEX, "chars/4").count
    for window in (20_000, 40_000, 100_000):
        budget = min(max(window // 4, 2_000), 15_000)
        result = summary.compact(Context(messages=LONG_CODEX.messages), request(LONG_CODEX, window=window))
        after = result.context.messages
        at = next(i for i, m in enumerate(after) if is_summary(m))
        tail = after[at + 1 :]
        kept = count(tail)
        assert kept <= budget and TURN_SEPARATOR not in after[at].text()  # a split turn joins the one summary
        # The longest tail within the budget: from the cut point before it, the tail would not fit.
        start = len(LONG_CODEX.messages) - len(tail)
        earlier = max(i for i in safe_cut_points(LONG_CODEX.messages) if i < start)
        assert count(LONG_CODEX.messages[earlier:]) > budget


def test_opencode_summarizes_everything_when_no_tail_fits() -> None:
    summary = get_strategy("opencode-summary")
    messages = LONG_CODEX.messages
    for tiny in (replace(summary, keep_recent_tokens=1), replace(summary, keep_recent_tokens=10**9)):
        # Nothing fits a 1-token budget; everything fits a huge one: opencode summarizes all either way.
        result = tiny.compact(Context(messages=messages), request(LONG_CODEX))
        assert is_summary(result.context.messages[-1]) and result.note.endswith("kept 0")
    usual = get_strategy("summarize", keep_recent_tokens=10**9)
    assert usual.compact(Context(messages=messages), request(LONG_CODEX)).note == "nothing old enough to summarize"


# --- seed 004, and what a summary carries ---------------------------------------------------------


def test_seed_004_cuts_at_the_user_message_after_the_point() -> None:
    history = MANIFEST.messages
    count = Meter(MANIFEST, "chars/4").count
    differing = 0
    for keep in range(2_000, 40_000, 2_000):
        after, split = choose_cut(history, keep, count, 5, "user-after")
        before, _ = choose_cut(history, keep, count, 5, "turn-before")
        if split is None and after:
            # A clean cut at a user message, keeping at most the budget (the point is at or before it).
            assert is_user_turn_start(history[after]) and count(history[after:]) <= keep + count([history[after - 1]])
        differing += after != before
    assert differing
    assert get_strategy("seed-004").strategy.tail_rule == "user-after"


def test_presets_append_only_what_their_sources_append() -> None:
    def summary_text(name: str) -> str:
        after = compact(name, MANIFEST, window=60_000).context.messages
        return next(m for m in after if is_summary(m)).text()

    for name in ("pi", "seed-004", "opencode-summary", "openhands", "claude-code"):
        assert "Last request from user was:" not in summary_text(name), name
    assert "Last request from user was:" in summary_text("seed-001")
    for name in ("opencode-summary", "openhands", "claude-code"):
        assert "<read-files>" not in summary_text(name) and "<modified-files>" not in summary_text(name), name
    assert "<read-files>" in summary_text("pi") and "<read-files>" in summary_text("seed-004")


def test_an_engine_request_carries_the_harness_pinning() -> None:
    seen: list[CompactionRequest] = []

    class Spy:
        name = "spy"

        def compact(self, context, request):
            seen.append(request)
            return get_strategy("truncate").compact(context, request)

    meter = Meter(MANIFEST, "chars/4")
    for pin in (True, False):
        Engine(Spy(), 10_000, meter, meter.count, harness=Harness(pin_task=pin)).before_call(Context(MANIFEST.messages))
    assert [r.pin_task for r in seen] == [True, False]


def test_seed_000_and_seed_004_anchor_on_the_prompt_alone() -> None:
    # Seed 000 counts lastPromptTokens (usage.promptTokens) and seed 004 last_prompt_tokens, then
    # estimate what came since, the reply included; the others add the reply's output tokens.
    # Gemini CLI compares the last prompt alone (geminiChat.ts lastPromptTokenCount).
    assert {name for name in RULES if not get_strategy(name).harness.anchor_output} == {"seed-000", "seed-004", "gemini-cli"}
    meter = Meter(MANIFEST, "hybrid")
    with_output, prompt_only = uncompacted(meter, 64_000, True), uncompacted(meter, 64_000, False)
    positions, outputs = with_output.positions, with_output.columns["output_tokens"]
    differences = [
        with_output.trigger_tokens[k]
        - prompt_only.trigger_tokens[k]
        - (outputs[k - 1] - meter.message_tokens(MANIFEST.messages[positions[k - 1]]))
        for k in range(1, len(positions))
    ]
    assert max(abs(d) for d in differences) <= 1  # rounding: one whole token each way
    assert any(
        abs(outputs[k - 1] - meter.message_tokens(MANIFEST.messages[positions[k - 1]])) > 50 for k in range(1, len(positions))
    )
    # The fast replay rows the same calls as the plain one with either anchor.
    preset = get_strategy("seed-004")
    windows = ContextWindows(overrides={"": 40_000})
    fast = replay(MANIFEST, Setting("s", "seed-004"), windows, strategy=preset)
    plain = replay_plain(MANIFEST, Setting("s", "seed-004"), windows, strategy=preset)
    assert fast.calls == plain.calls and [c.call for c in fast.compactions] == [c.call for c in plain.compactions]
    other = replay(MANIFEST, Setting("s", "seed-004"), windows, strategy=replace(preset, harness=Harness()))
    assert [c.call for c in other.compactions] != [c.call for c in fast.compactions]


@pytest.mark.parametrize("name", ["codex@0100b103", "codex"])
def test_codex_keeps_no_earlier_summary_among_the_user_messages(name) -> None:
    codex = get_strategy(name)
    half = len(LONG_CODEX.messages) // 2
    first = codex.compact(Context(messages=LONG_CODEX.messages[:half]), request(LONG_CODEX, window=272_000)).context
    grown = replace(first, messages=(*first.messages, *LONG_CODEX.messages[half:]))
    after = codex.compact(grown, request(LONG_CODEX, window=272_000)).context.messages
    # One summary (the older version: the last message): the first one was summarized, not kept as a user message.
    summaries = [i for i, m in enumerate(after) if is_summary(m)]
    assert len(summaries) == 1 and (name == "codex" or summaries == [len(after) - 1])
    assert sum(is_user_turn_start(m) for m in after) > 1  # user messages of both halves were kept


def test_the_report_says_which_window_each_preset_ran_at_and_where_it_cannot_fire(tmp_path: Path) -> None:
    # A DeepSeek session (128k window) at a 64k simulated window: seed 001's 200,000 scales to 100,000,
    # above the window, so it never fires there; pi's reserve is scaled; a plain strategy's is not.
    session = bundled("mini-swe-agent-pr816", "deepseek_chat_dev_rerun_pylint-dev__astroid-1333")
    config = replace(
        RunConfig(),
        datasets=(str(session),),
        window=64_000,
        strategies=tuple(setting_from(name, "test") for name in ("seed-001", "pi", "summarize")),
    )
    write_summary(runs.run(config, tmp_path / "run", progress=False), config)  # (the report reads summary.json)
    shown = {s["label"]: s["window"] for s in metadata_context(load_run(tmp_path / "run"))["strategies"]}
    scaled = "64,000 (the preset's absolute sizes scaled by 64,000 ÷ the model's real window)"
    assert shown["seed-001"] == f"{scaled}; its trigger lies above the window in 1 session: it never fires there"
    assert shown["pi"] == scaled and shown["summarize"] == "64,000"
