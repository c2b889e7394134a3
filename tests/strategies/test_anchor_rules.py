"""The anchor presets' rules (pi, opencode, Codex, Claude Code, OpenHands, JetBrains masking), one test
per rule, on a real session where the rule acts. Each preset's `source` names the file the rule is from."""

from __future__ import annotations

import pytest

from compactlab.sessions.importers import load_file
from compactlab.sessions.messages import is_summary, is_user_turn_start, pinned_head
from compactlab.sessions.model import ToolResultPart
from compactlab.strategies.registry import get_strategy
from compactlab.strategies.summarize import choose_cut
from compactlab.tokens.metering import Meter
from tests.conftest import bundled
from tests.strategies.test_seed_rules import LONG_CODEX, MANIFEST, ME_NEXT, compact

SHORT_TURNS = load_file(bundled("codex-rollouts", "Hoper-J__cpolar-connect"))[0]  # turns of a few messages


def test_pi_compacts_when_the_context_leaves_less_than_16384_tokens() -> None:
    trigger = get_strategy("pi").trigger
    assert trigger.check(200_000 - 16_384, 200_000) is None and trigger.check(200_000 - 16_383, 200_000) == "threshold"


def test_pi_cuts_mid_turn_where_seed_004_keeps_a_short_turn_whole() -> None:
    # pi's findCutPoint cuts at any user or assistant message and splits the turn whenever the cut is
    # not a user message; seed 004 keeps turns under 5 messages whole.
    count = Meter(SHORT_TURNS, "chars/4").count
    history = SHORT_TURNS.messages
    differing = [
        keep for keep in range(1_000, 30_000, 1_000) if choose_cut(history, keep, count, 1) != choose_cut(history, keep, count, 5)
    ]
    assert differing, "somewhere on this session pi splits a turn seed 004 keeps whole"
    cut, split = choose_cut(history, differing[0], count, get_strategy("pi").strategy.split_turn_min_messages)
    assert split is not None and not is_user_turn_start(history[cut])


def test_pi_keeps_20000_recent_tokens_and_updates_the_summary() -> None:
    preset = get_strategy("pi")
    result = compact(preset, MANIFEST, window=200_000)
    after = result.context.messages
    start = next(i for i, m in enumerate(after) if is_summary(m)) + 1
    kept = Meter(MANIFEST, "chars/4").count(after[start:])
    # About 20,000: the walk stops at 20,000, then the cut moves to the next message a turn may start at.
    assert 15_000 < kept < 25_000 and preset.strategy.iterative and preset.strategy.max_summary_tokens == int(0.8 * 16_384)


def users_before_summary(after):
    """The user messages a Codex compaction keeps before its summary: its pinned head (the task, which the
    test's request pins) and its initial context left out (the older version keeps it in front, the
    newest after the summary or before the last user message)."""
    summary = next(i for i, m in enumerate(after) if is_summary(m))
    return [m for m in after[pinned_head(after) : summary] if not m.instruction]


@pytest.mark.parametrize("name", ["codex@0100b103", "codex"])
def test_codex_keeps_the_newest_user_messages_then_the_summary_alone(name) -> None:
    result = compact(name, LONG_CODEX, window=272_000)
    after = result.context.messages
    summary = next(i for i, m in enumerate(after) if is_summary(m))
    # Nothing of the recent turn is kept after the summary (the newest version: the initial context and the new prompt).
    instructions = tuple(m for m in LONG_CODEX.messages if m.instruction)
    assert after[summary + 1 :] == (() if name == "codex@0100b103" else (*instructions, LONG_CODEX.messages[-1]))
    users = users_before_summary(after)
    assert users and all(m.role == "user" and not any(isinstance(p, ToolResultPart) for p in m.parts) for m in users)
    originals = [m for m in LONG_CODEX.messages if is_user_turn_start(m)][1:]  # the first, the task, is pinned
    count = Meter(LONG_CODEX, "chars/4").count
    # This session's user messages (about 5,400 tokens) fit the 20,000: every one is kept, in order (the
    # newest version: but the new prompt, which follows the summary).
    assert sum(count([m]) for m in originals) <= 20_000
    assert users == originals[: -1 if name == "codex" else None]


@pytest.mark.parametrize("name", ["codex@0100b103", "codex"])
def test_codex_cuts_the_user_message_that_crosses_the_budget(name) -> None:
    codex = get_strategy(name, keep_user_message_tokens=300)
    after = compact(codex, LONG_CODEX, window=272_000).context.messages
    users = users_before_summary(after)
    assert "tokens truncated" in users[0].text() and "tokens truncated" not in "".join(m.text() for m in users[1:])


def test_opencode_prunes_outputs_beyond_40000_tokens_before_summarizing() -> None:
    preset = get_strategy("opencode@31e22f65")  # V1 prunes; V2 has no Prune stage
    result = compact(preset, LONG_CODEX, window=272_000, target=1)
    assert result.note.startswith("prune: cleared") and "iterative-merge: summarized" in result.note
    summary = get_strategy("opencode-summary")
    assert preset.trigger.reserve_tokens == 52_000 and (summary.keep_recent_min, summary.keep_recent_max) == (2_000, 15_000)


@pytest.mark.parametrize("name", ["claude-code@2026-06-07", "claude-code"])
def test_claude_code_replaces_the_whole_history_with_its_summary_past_its_output_limit_and_buffer(name) -> None:
    preset = get_strategy(name)
    # 2.0.57: window − 32,000 (the default output limit) − 13,000; Claude Opus 4.5: its 64,000 output limit.
    sonnet = preset.trigger.for_session("claude-sonnet-4-5", "2.0.57")
    opus = preset.trigger.for_session("claude-opus-4-5-20251101", "2.0.57")
    assert sonnet.check(155_001, 200_000) == "threshold" and sonnet.check(155_000, 200_000) is None
    assert opus.check(123_001, 200_000) == "threshold" and opus.check(123_000, 200_000) is None
    after = compact(preset, ME_NEXT).context.messages
    head = pinned_head(ME_NEXT.messages)
    assert is_summary(after[head]) and all(m in ME_NEXT.messages[:head] or is_summary(m) or m.role == "user" for m in after)


def test_openhands_keeps_the_first_event_and_merges_the_earlier_summary() -> None:
    preset = get_strategy("openhands")
    first = compact(preset, MANIFEST, window=60_000)
    after = first.context.messages
    assert after[0] == MANIFEST.messages[0] and preset.strategy.iterative and preset.strategy.template == "openhands.j2"


def test_jetbrains_masking_keeps_the_last_10_observations() -> None:
    result = compact("jetbrains-masking", MANIFEST)
    outputs = [p for m in result.context.messages for p in m.parts if isinstance(p, ToolResultPart)]
    originals = [p for m in MANIFEST.messages for p in m.parts if isinstance(p, ToolResultPart)]
    assert outputs[-10:] == originals[-10:] and any(p.content.startswith("Old environment output:") for p in outputs[:-10])


def test_anchor_presets_name_their_source_files() -> None:
    expected = {
        "pi": "packages/coding-agent/src/core/compaction/compaction.ts",
        "opencode": "packages/core/src/session/compaction.ts",
        "opencode@31e22f65": "packages/opencode/src/session/compaction.ts",
        "codex": "codex-rs/core/src/compact.rs",
        "openhands": "openhands/memory/condenser/impl/llm_summarizing_condenser.py",
        "jetbrains-masking": "arXiv 2508.21433",
        "claude-code": "Autocompact buffer",
    }
    for name, where in expected.items():
        assert where in get_strategy(name).source, name
