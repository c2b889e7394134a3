"""The newest versions of presets whose engines changed since they were first read (issue 48): Codex at
e06dd0e5 (mid-turn compaction), Claude Code 2.1 (one reserve from 2.1.19 on) and opencode V2 (a checkpoint
with a serialized tail). The versions before stay in `compactlab.strategies.presets`, named
`codex@0100b103`, `claude-code@2026-06-07` and `opencode@31e22f65`
(`compactlab.strategies.preset_versions.OLDER`); their rules are in `compactlab.strategies.rules_today`."""

from __future__ import annotations

import math
from dataclasses import replace

from compactlab.contract import Trigger, VersionReserve
from compactlab.strategies.presets import CLAUDE_CODE_BUFFER, Preset
from compactlab.strategies.presets import claude_code as claude_code_2026_06
from compactlab.strategies.presets import codex as codex_0100b103
from compactlab.strategies.presets import opencode as opencode_v1

OPENCODE_COMMIT = "031a4a9cf65fb42437571d5aa5962ceb2247ab51"  # anomalyco/opencode, as the search index stores it
CODEX_COMMIT = "e06dd0e5d5694c24968bf49b62466cdedae04aaa"  # openai/codex, as the search index stores it
CLAUDE_CODE_21_RESERVE = 20_000 + CLAUDE_CODE_BUFFER  # min(output limit, 20,000) + 13,000 (anthropics/claude-code#23409)
CLAUDE_CODE_21_FROM = (
    "2.1.19"  # the first version whose real compactions show it (python -m tests.scripts.claude_code_generations)
)
OPUS_45 = "claude-opus-4-5"


def claude_code_21_trigger(first: str = CLAUDE_CODE_21_FROM, reserve: int = CLAUDE_CODE_21_RESERVE) -> Trigger:
    """Claude Code's trigger by generation: `reserve` from version `first` on (and for a session that records no
    version), 45,000 from 2.0.58, the output limit + 13,000 before (45,000; 77,000 for claude-opus-4-5, whose limit
    was 64,000). The preset's, and the rule `tests.scripts.claude_code_generations` chooses `first` and `reserve` of."""
    return Trigger(
        fraction=math.inf,
        reserve_tokens=reserve,
        reserve_by_version=(
            # The first range that covers a version is its own (Trigger.for_session): `first` on before 2.0.58 on.
            VersionReserve("0", "2.0.57", 45_000, ((OPUS_45, 77_000),)),
            VersionReserve(first, "9999", reserve),
            VersionReserve("2.0.58", "9999", 45_000),
        ),
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
        trigger=claude_code_21_trigger(),
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


def opencode() -> Preset:
    """opencode V2: when the estimate reaches the window less 32,000 (the output limit, at most 32,000, or the 20,000
    buffer), a checkpoint replaces the history: the summary of all but the newest ~15,000 tokens, which follow it
    serialized, each tool result cut to 2,000 characters; a later compaction updates the checkpoint."""
    from compactlab.strategies.opencode_v2 import OpencodeCheckpoint

    # The harness's policies are V1's: an over-window request compacted, no guard, the task not pinned.
    return replace(
        opencode_v1(),
        name="opencode",
        strategy=OpencodeCheckpoint(max_summary_tokens=4_096),
        trigger=Trigger(fraction=1.0, reserve_tokens=32_000, reserve_inclusive=True),
        estimator="hybrid",
        source=f"anomalyco/opencode at {OPENCODE_COMMIT[:8]} (as the search index stores it; opencode V2, PR #30986 'compact v2 "
        "session context'): packages/core/src/session/compaction.ts (DEFAULT_BUFFER 20,000, DEFAULT_KEEP_TOKENS 15,000, "
        "OUTPUT_TOKEN_MAX 32,000, TOOL_OUTPUT_MAX_CHARS 2,000; required(): estimate >= min(input - buffer, context - "
        "max(output, buffer)); estimateTokens(); findTailStart(), serializeRecentMessage(), truncateToolOutput(); "
        "buildPrompt() with its update mode; SUMMARY_TEMPLATE, SUMMARY_RULES); opencode.ai/docs/compaction (keep.tokens "
        "15,000; later compactions update the summary)",
        description=opencode.__doc__ or "",
        choices="the output limit: 32,000 or more (so 32,000 reserved), scaled by simulated ÷ the model's real window; the "
        "summary's output budget (V2 sets none): 4,096",
    )
