"""The newest versions of presets whose engines changed since they were first read (issue 48): Codex at
e06dd0e5 (mid-turn compaction) and Claude Code 2.1 (one reserve from 2.1.19 on). The versions before
stay in `compactlab.strategies.presets`, named `codex@0100b103` and `claude-code@2026-06-07`
(`compactlab.strategies.preset_versions.OLDER`); their rules are in `compactlab.strategies.rules_today`."""

from __future__ import annotations

import math
from dataclasses import replace

from compactlab.contract import Trigger, VersionReserve
from compactlab.strategies.presets import CLAUDE_CODE_BUFFER, Preset
from compactlab.strategies.presets import claude_code as claude_code_2026_06
from compactlab.strategies.presets import codex as codex_0100b103

CODEX_COMMIT = "e06dd0e5d5694c24968bf49b62466cdedae04aaa"  # openai/codex, as the search index stores it
CLAUDE_CODE_21_RESERVE = 20_000 + CLAUDE_CODE_BUFFER  # min(output limit, 20,000) + 13,000 (anthropics/claude-code#23409)
CLAUDE_CODE_21_FROM = (
    "2.1.19"  # the first version whose real compactions show it (python -m tests.scripts.claude_code_generations)
)
OPUS_45 = "claude-opus-4-5"
CLAUDE_CODE_21_BY_VERSION = (
    # The first range that covers a version is its own (Trigger.for_session): 2.1.19 on before 2.0.58 on.
    VersionReserve("0", "2.0.57", 45_000, ((OPUS_45, 77_000),)),  # the output limit + 13,000; opus-4-5's was 64,000
    VersionReserve(CLAUDE_CODE_21_FROM, "9999", CLAUDE_CODE_21_RESERVE),
    VersionReserve("2.0.58", "9999", 45_000),
)


def codex() -> Preset:
    """Codex CLI (e06dd0e5): at 90% of the window, a handoff summary replaces the history after up to 20,000 tokens of
    user messages; before a turn the initial context and the new prompt follow the summary, within one the initial
    context goes above the last user message and the summary stays last."""
    from compactlab.strategies.codex import CodexCompaction

    older = codex_0100b103()
    return replace(
        older,
        name="codex",
        strategy=CodexCompaction(
            keep_recent_tokens=0,
            keep_user_message_tokens=20_000,
            template="codex.j2",
            track_files=False,
            append_last_request=False,
        ),
        source=f"openai/codex at {CODEX_COMMIT[:8]} (as the search index stores it): codex-rs/core/src/compact.rs "
        "(run_compact_task_inner; InitialContextInjection DoNotInject pre-turn, BeforeLastUserMessage mid-turn; "
        "insert_initial_context_before_last_real_user_or_summary; build_compacted_history_with_limit, "
        "COMPACT_USER_MESSAGE_MAX_TOKENS 20,000; on ContextWindowExceeded remove_first_item and retry; "
        "should_use_remote_compact_task: every OpenAI provider), codex.rs run_pre_sampling_compact (PreTurn) and "
        "run_turn (MidTurn after a sampling request that needs a follow-up), protocol openai_models.rs "
        "auto_compact_token_limit (min(config limit, 0.9 × window)), templates/compact/prompt.md",
        description=codex.__doc__ or "",
        choices="the window 0.9 applies to: the recorded (raw) one; a configured lower limit: none",
    )


def claude_code() -> Preset:
    """Claude Code 2.1: when the context exceeds the window (200,000 for every model) less 33,000 (from 2.1.19; 45,000
    before, 77,000 for claude-opus-4-5 up to 2.0.57), a nine-section summary replaces the history; the newest files
    read or written, the todo list and the plan file are re-attached after it."""
    older = claude_code_2026_06()
    return replace(
        older,
        name="claude-code",
        trigger=Trigger(fraction=math.inf, reserve_tokens=CLAUDE_CODE_21_RESERVE, reserve_by_version=CLAUDE_CODE_21_BY_VERSION),
        source='Claude Code 2.1: /context readings ("Autocompact buffer") and anthropics/claude-code#23409 (the reserve: min(output limit, 20,000) + 13,000), #12004 '
        "(2.0.x: the output limit + 13,000), CHANGELOG.md to 2.1.240 (2.1.51 tool results over 50,000 characters "
        "persisted; 2.1.76 circuit breaker after 3 failed compactions; 2.1.89 thrash detection); the version the "
        "reserve changed at from the real automatic compactions (python -m tests.scripts.claude_code_generations); "
        "summary sections from real compact summaries in datasets/m-claude and public prompt copies",
        description=claude_code.__doc__ or "",
        choices="the output limit: the model's default (a user's CLAUDE_CODE_MAX_OUTPUT_TOKENS moves the threshold); "
        "the version the 33,000 reserve starts at: 2.1.19 (the first whose compactions show it); a session that records "
        "no version: 2.1's 33,000; reserved under a simulated window: scaled by simulated ÷ the model's real window",
    )
