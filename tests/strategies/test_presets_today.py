"""The newest versions of presets whose engines changed (issue 48): Codex at e06dd0e5 and Claude Code 2.1,
one test per changed rule, on real bundled sessions; the older versions stay under their versioned names."""

from __future__ import annotations

from dataclasses import replace

import pytest

from compactlab.contract import Context
from compactlab.sessions.messages import is_instruction, is_summary, is_user_turn_start
from compactlab.strategies.preset_versions import run_versions
from compactlab.strategies.registry import describe_all, get_strategy
from tests.strategies.test_seed_rules import LONG_CODEX, request

# LONG_CODEX (Monotoba__OpenPrintKit, a real Codex CLI rollout) ends with a user's new prompt: a turn starts there.
TURN_STARTS = [i for i, m in enumerate(LONG_CODEX.messages) if is_user_turn_start(m)]
INSTRUCTIONS = [m for m in LONG_CODEX.messages if is_instruction(m)]


def compacted(messages):
    codex = get_strategy("codex")
    session = replace(LONG_CODEX, messages=tuple(messages))
    return codex.compact(Context(messages=tuple(messages)), request(session, window=272_000))


def test_codex_before_a_turn_puts_the_initial_context_and_the_prompt_after_the_summary() -> None:
    messages = LONG_CODEX.messages
    assert is_user_turn_start(messages[-1]) and INSTRUCTIONS
    result = compacted(messages)
    after = result.context.messages
    summary = next(i for i, m in enumerate(after) if is_summary(m))
    # users, the summary, the initial context re-injected, then the new prompt: neither summarized nor kept before it.
    assert after[-1] is messages[-1] and list(after[summary + 1 : -1]) == INSTRUCTIONS
    users = after[:summary]
    assert users and all(is_user_turn_start(m) for m in users) and messages[-1] not in users
    assert list(users) == [messages[i] for i in TURN_STARTS[:-1]]  # this session's ~5,400 tokens of users fit 20,000
    assert "pre-turn" in result.note


def test_codex_within_a_turn_puts_the_initial_context_before_the_last_user_message() -> None:
    # The stretch up to the last tool result before the second turn starts: a tool loop in progress.
    end = max(i for i in range(TURN_STARTS[1]) if LONG_CODEX.messages[i].role == "tool") + 1
    messages = LONG_CODEX.messages[:end]
    assert not is_user_turn_start(messages[-1])
    result = compacted(messages)
    after = result.context.messages
    assert is_summary(after[-1]), "mid-turn the summary stays last"
    last_user = max(i for i, m in enumerate(after) if is_user_turn_start(m))
    assert list(after[last_user - len(INSTRUCTIONS) : last_user]) == INSTRUCTIONS
    assert after[last_user] is messages[TURN_STARTS[0]] and "mid-turn" in result.note


def test_codex_summarizes_the_whole_history() -> None:
    end = TURN_STARTS[3]
    result = compacted(LONG_CODEX.messages[:end])
    summarized = sum(1 for m in LONG_CODEX.messages[: end - 1] if not is_instruction(m))
    assert result.note.startswith(f"summarized {summarized} messages") and ", kept 0" in result.note


def test_the_older_codex_keeps_the_initial_context_in_front_and_the_summary_last() -> None:
    older = get_strategy("codex@0100b103")
    after = older.compact(Context(messages=LONG_CODEX.messages), request(LONG_CODEX, window=272_000)).context.messages
    assert list(after[: len(INSTRUCTIONS)]) == INSTRUCTIONS and is_summary(after[-1])


@pytest.mark.parametrize(
    ("version", "model", "fires_from"),
    [
        ("2.1.19", "claude-sonnet-4-6", 167_001),
        ("2.1.167", "claude-opus-4-6", 167_001),
        (None, "claude-sonnet-4-6", 167_001),  # a session that records no version: 2.1's reserve
        ("2.1.5", "claude-sonnet-4-5", 155_001),
        ("2.0.76", "claude-opus-4-5-20251101", 155_001),
        ("2.0.57", "claude-opus-4-5-20251101", 123_001),
    ],
)
def test_claude_code_2_1_reserves_33000_from_2_1_19(version, model, fires_from) -> None:
    trigger = get_strategy("claude-code").trigger.for_session(model, version)
    assert trigger.fires_from(200_000) == fires_from


def test_the_older_claude_code_keeps_its_per_version_table() -> None:
    older = get_strategy("claude-code@2026-06-07").trigger
    assert older.for_session("claude-sonnet-4-6", "2.1.83").fires_from(200_000) == 164_001  # 36,000 there
    assert older.for_session("claude-sonnet-4-6", None).fires_from(200_000) == 155_001


def test_older_versions_are_listed_and_recorded_by_their_names() -> None:
    names = [row["name"] for row in describe_all()]
    assert names.index("codex@0100b103") == names.index("codex") + 1
    assert names.index("claude-code@2026-06-07") == names.index("claude-code") + 1
    assert run_versions(["codex", "codex@0100b103", "claude-code@2.1"]) == {
        "claude-code@2.1": "Claude Code 2.1 (anthropics/claude-code#23409; the CHANGELOG to 2.1.240, read 2026-12-02), "
        "undated: a release line, not a commit",
        "codex": "openai/codex e06dd0e5 (codex-rs/core/src/compact.rs, as the search index stores it), date unknown: "
        "the repository is over the snapshot fetch limit, so the commit could not be read",
        "codex@0100b103": "openai/codex 0100b103, date unknown: the repository is over the snapshot fetch limit, so "
        "the commit could not be read",
    }
    with pytest.raises(KeyError, match=r"its versions: codex@e06dd0e5 .*codex@0100b103"):
        get_strategy("codex@deadbeef")


# --- opencode V2 (anomalyco/opencode 031a4a9c packages/core/src/session/compaction.ts) ---------------------


def checkpointed(messages, keep=15_000):
    opencode = get_strategy("opencode", keep_recent_tokens=keep)
    return opencode.compact(Context(messages=tuple(messages)), unpinned(messages))


def unpinned(messages):
    """The request as the preset's harness makes it: the task not pinned (opencode summarizes it like any other)."""
    return replace(request(replace(LONG_CODEX, messages=tuple(messages)), window=272_000), pin_task=False)


def recent_part(text):
    return text.split("<recent-context>\n", 1)[1].removesuffix("\n</recent-context>") if "<recent-context>" in text else ""


def test_opencode_v2_compacts_at_the_window_less_32000() -> None:
    preset = get_strategy("opencode")
    assert preset.trigger.check(200_000 - 32_000, 200_000) == "threshold"  # required(): estimate >= the ceiling itself
    assert preset.trigger.check(200_000 - 32_001, 200_000) is None
    assert preset.estimator == "hybrid" and get_strategy("opencode@31e22f65").trigger.reserve_tokens == 52_000


def test_opencode_v2_keeps_the_newest_15000_tokens_serialized_from_a_user_message() -> None:
    result = checkpointed(LONG_CODEX.messages[: TURN_STARTS[20]])
    after = result.context.messages
    assert is_summary(after[-1]) and not any(is_user_turn_start(m) for m in after), "one checkpoint, no message kept verbatim"
    recent = recent_part(after[-1].text())
    assert recent.startswith("[User]: "), "the serialized tail starts at a user message"
    # Every tool result cut to 2,000 characters: this stretch has longer ones.
    results = [line for line in recent.split("\n[Tool result]: ")[1:]]
    longest = max(len(p.content) for m in LONG_CODEX.messages[: TURN_STARTS[20]] for p in m.parts if hasattr(p, "content"))
    assert longest > 2_000 and "\n[truncated]" in recent and results
    tokens = len(recent) / 4
    assert 5_000 < tokens < 15_000 + 6_000, "about the 15,000 allowance, extended back to the user message"


def test_opencode_v2_keeps_only_the_latest_exchange_when_everything_fits() -> None:
    messages = LONG_CODEX.messages[: TURN_STARTS[3]]
    result = checkpointed(messages, keep=10**9)
    recent = recent_part(result.context.messages[-1].text())
    latest_user = messages[TURN_STARTS[2]]
    assert recent.startswith(f"[User]: {latest_user.text()}") and f"[User]: {messages[TURN_STARTS[1]].text()}" not in recent


def test_opencode_v2_updates_its_earlier_checkpoint() -> None:
    first = checkpointed(LONG_CODEX.messages[: TURN_STARTS[10]]).context
    grown = replace(first, messages=(*first.messages, *LONG_CODEX.messages[TURN_STARTS[10] : TURN_STARTS[20]]))
    opencode = get_strategy("opencode")
    again = opencode.compact(grown, unpinned(grown.messages))
    checkpoints = [m for m in again.context.messages if is_summary(m)]
    assert len(checkpoints) == 1 and again.messages_removed > 0
    # The first request, only in the earlier checkpoint, is carried into the update; a fresh summary of the
    # history since has no trace of it.
    since = LONG_CODEX.messages[TURN_STARTS[10] : TURN_STARTS[20]]
    fresh = opencode.compact(Context(messages=since), unpinned(since)).context.messages[-1].text()
    task = LONG_CODEX.messages[TURN_STARTS[0]].text()[:60]
    assert task in checkpoints[0].text() and task not in fresh
