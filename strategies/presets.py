"""Presets: named configurations that reproduce real compaction designs.

A preset is a strategy plus the trigger and token estimator its design uses, with the source it
was taken from. It compacts by delegating to its strategy, so anywhere a strategy is accepted a
preset is too, and `--strategy pi` runs pi's whole design. Where a design does something the
engine does not model, the preset says so rather than pretending.

Each preset's `rules` (`compactlab.strategies.seed_rules`, `compactlab.strategies.engine_rules`) hold
its design rule by rule: the source's file and line (or the seed document's section), what the
preset does, and why where it differs; `deviations` is made from them. Its `harness` sets the
engine's own policies (task pinning, the loop guard, the emergency path, how absolute sizes meet a
simulated window) as its source would. docs/preset-rules.md is the table of them all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from compactlab.contract import CompactionRequest, CompactionResult, Context, Harness, Strategy, Trigger, VersionReserve
from compactlab.strategies.engine_rules import ENGINES
from compactlab.strategies.provider_rules import PROVIDERS
from compactlab.strategies.rule import Rule
from compactlab.strategies.rules_2026 import RULES_2026
from compactlab.strategies.rules_today import RULES_TODAY
from compactlab.strategies.seed_rules import SEEDS as SEED_RULES

SEEDS = "../shared/seeds/"  # the seed documents, next to the repository (see their README.md)
# An engine that changed: its older preset's rules under its versioned name, the newest's under the name (issue 48).
OLDER_RULES = {
    "codex@0100b103": ENGINES["codex"],
    "claude-code@2026-06-07": ENGINES["claude-code"],
    "opencode@31e22f65": ENGINES["opencode"],
}
RULES: dict[str, tuple[Rule, ...]] = {**SEED_RULES, **ENGINES, **PROVIDERS, **RULES_2026, **OLDER_RULES, **RULES_TODAY}
# What every preset's source does about the harness's policies, unless its own says otherwise
# (each preset's rules give the source): nothing kept apart from the summary, no guard, pieces of
# the context (a kept tail) counted with the design's own estimator.
SOURCE_HARNESS = Harness(pin_task=False, loop_guard=False, emergency=False, pieces="estimator")


@dataclass(frozen=True)
class Preset:
    """A design: its strategy, trigger and estimator, where its rules come from (`source`), its rules
    one by one (`rules`: `RULES[name]`), the engine's policies as the design has them (`harness`), and
    the values the design leaves open with the one chosen (`choices`). `context_windows`: the design's
    own model → window table, which replaces compactlab's (a model it does not list gets
    `unknown_window`, else `UNKNOWN_WINDOW`, as in the design; a window recorded in the session and
    the user's overrides still win)."""

    name: str
    strategy: Strategy
    trigger: Trigger
    estimator: str
    source: str
    description: str
    choices: str = ""
    context_windows: tuple[tuple[str, int], ...] = ()
    unknown_window: int | None = None  # the design's window for a model its table does not list (None: UNKNOWN_WINDOW)
    harness: Harness = SOURCE_HARNESS
    # The strategy's setting that holds the size the prompt must exceed (a provider's documented
    # option, `compactlab.strategies.provider_presets`): the trigger follows it, so a setting the user
    # changes moves the trigger too ("": the trigger is the preset's own). `absolute` fires at its
    # size itself, so one more than the setting: "exceeds".
    trigger_setting: str = ""

    def __post_init__(self) -> None:
        if self.trigger_setting:
            tokens = getattr(self.strategy, self.trigger_setting)
            object.__setattr__(self, "trigger", replace(self.trigger, absolute=tokens + 1))

    @property
    def rules(self) -> tuple[Rule, ...]:
        return RULES[self.name]

    @property
    def deviations(self) -> str:
        """What the preset does otherwise than its source, and why: its rules that differ."""
        return "; ".join(f"{r.rule}: {r.does}, because {r.deviation}" for r in self.rules if not r.matches)

    def compact(self, context: Context, request: CompactionRequest) -> CompactionResult:
        return self.strategy.compact(context, request)


# Seed 000's "built-in mapping table" (Token Threshold > Context Window Sizes); unknown models: 128,000.
SEED_000_WINDOWS = (
    ("gpt-4o", 128_000),
    ("gpt-4o-mini", 128_000),
    ("gpt-4.1", 1_000_000),
    ("gpt-4.1-mini", 1_000_000),
    ("claude-sonnet-4-20250514", 200_000),
    ("claude-opus-4-20250514", 200_000),
    ("claude-haiku-3-20250307", 200_000),
)


def seed_000() -> Preset:
    """Seed 000 (main agent): at 80%, one summary replaces the session, which is archived; hybrid len/3.5 count."""
    from compactlab.strategies.archive import Archive
    from compactlab.strategies.summarize import Summarize

    summary_only = Summarize(keep_recent_tokens=0, track_files=False, append_last_request=False)
    return Preset(
        "seed-000",
        Archive(inner=summary_only),
        Trigger(fraction=0.8),
        "hybrid-chars/3.5",
        f"{SEEDS}000_c0c9f436ae78c850.txt: Trigger Strategy (lastPromptTokens + len/3.5 of new messages, > window × "
        "compactThreshold 0.8), Context Window Sizes (model table, unknown → 128,000), Compact Flow (the new session is "
        "the summary message alone, the old one archived), Archive Retrieval",
        seed_000.__doc__ or "",
        choices="tiktoken or len/3.5 for new messages: len/3.5",
        context_windows=SEED_000_WINDOWS,
        harness=replace(SOURCE_HARNESS, anchor_output=False),
    )


def seed_001() -> Preset:
    """Seed 001 (Go middleware): at 200,000 tokens, system prompt + summary + 'Last request from user was: …'."""
    from compactlab.strategies.summarize import Summarize

    return Preset(
        "seed-001",
        Summarize(keep_recent_tokens=0, template="seed_001.j2", track_files=False, append_last_request=True),
        Trigger(fraction=math.inf, absolute=200_000),
        "hybrid",
        f"{SEEDS}001_6f6926ea13a9a167.txt: 2 Trigger (DefaultCompactThreshold 200,000, ContextTokens = prompt + completion "
        "of the last call), 3 Compaction Process (history = [system, summary + last request]), 4 Summarization Prompt, "
        "6 Message Cleaning (missing tool results filled)",
        seed_001.__doc__ or "",
        choices="200,000 tokens under a simulated window: scaled by simulated ÷ the model's real window (harness window 'scaled')",
    )


def seed_002() -> Preset:
    """Seed 002 (RFC 007): at overflow, summarize; then prune old tool outputs beyond the newest 40,000 tokens."""
    from compactlab.strategies.pipeline import Pipeline
    from compactlab.strategies.prune import Prune
    from compactlab.strategies.summarize import Summarize

    prune = Prune(protect_turns=0, protected_prefixes=("tool-",), stop_at_pruned=False, max_part_tokens=50_000)
    summary = Summarize(keep_recent_tokens=40_000, track_files=False, append_last_request=False)
    return Preset(
        "seed-002",
        Pipeline(stages=(summary, prune), stop_when_under_target=False),
        Trigger(fraction=1.0),
        "hybrid",
        f"{SEEDS}002_7e9a5fe4ad2ef376.txt: Compaction (input + cache.read + output > limit; summary), Pruning "
        "(PRUNE_PROTECT 40,000, PRUNE_MINIMUM 20,000, MAX_TOKENS_PER_PART 50,000), Protected Tools (skill; 'tool-' "
        "prefix; compactedAt), Token Estimation (ceil(len/4))",
        seed_002.__doc__ or "",
        choices="the usable limit: the window (the RFC's example: 'exceeds 128k limit'); recent context kept beside the "
        "summary: the 40,000 protected tokens; the summary prompt (the RFC lists topics, not a prompt): summary.j2; an "
        "earlier summary at a later compaction (the RFC does not say): summarized again into the new one",
    )


def seed_003() -> Preset:
    """Seed 003 (glm-cli): WARNING at 75%, CRITICAL at 90% (target 60%); priority-ordered pruning; words count."""
    from compactlab.strategies.priority import PriorityPrune

    return Preset(
        "seed-003",
        PriorityPrune(),
        Trigger(warning=0.75, critical=0.9, target=0.6),
        "words",
        f"{SEEDS}003_4702767c5c832fea.txt: Warning Level (75%), Critical Level (90%, target 60% of max), Message "
        "Preservation Strategy (HistoryPruner's priority order; SummaryGenerator), Token Estimation Algorithm (+50)",
        seed_003.__doc__ or "",
        choices="WARNING's target (only CRITICAL's is stated): 70% of the window; max_context_tokens (default 8,000): the "
        "model's window",
    )


def seed_004() -> Preset:
    """Seed 004 (Opal): iterative merge, window/4 kept from a user message, split turns, file lists; emergency window/5 forced; hybrid count."""
    from compactlab.strategies.merge import IterativeMerge
    from compactlab.strategies.summarize import NOTE_FALLBACK

    return Preset(
        "seed-004",
        IterativeMerge(
            emergency_keep_share=0.2,
            force_on_overflow=True,
            fallback=NOTE_FALLBACK,
            tail_rule="user-after",
            append_last_request=False,
        ),
        Trigger(fraction=0.8),
        "hybrid",
        f"{SEEDS}004_23e9301035d8b3fa.txt: Auto-Compaction (80%, hybrid ~4 chars/token, keep_recent_tokens = window/4), "
        "Compaction Algorithm 1-5 (cut at a user boundary at or after the point, split turns of 5+ messages, :summarize / "
        ":truncate '[Compacted N messages: ...]', iterative update, cumulative file ops), Overflow Recovery (window/5, "
        "force: all but the last 2), Context Window Sizes (128k fallback)",
        seed_004.__doc__ or "",
        harness=replace(SOURCE_HARNESS, emergency=True, anchor_output=False),
    )


def pi() -> Preset:
    """pi: compact when context > window − 16,384; keep 20,000 recent tokens, cut mid-turn if need be; update the earlier summary."""
    from compactlab.strategies.merge import IterativeMerge

    return Preset(
        "pi",
        IterativeMerge(
            keep_recent_tokens=20_000,
            max_summary_tokens=13_107,
            split_turn_min_messages=1,
            append_last_request=False,
            drop_kept_tail=True,
            keep_all_without_cut=True,
        ),
        Trigger(fraction=1.0, reserve_tokens=16_384),
        "hybrid-pi",
        "badlogic/pi-mono packages/coding-agent/src/core/compaction/compaction.ts: DEFAULT_COMPACTION_SETTINGS "
        "(reserveTokens 16384, keepRecentTokens 20000), shouldCompact (contextTokens > contextWindow − reserveTokens), "
        "estimateTokens (chars/4) over the last usage (calculateContextTokens), findCutPoint (any user or assistant "
        "message; isSplitTurn when it is not a user message), generateSummary (maxTokens 0.8 × reserveTokens, "
        "UPDATE_SUMMARIZATION_PROMPT with the previous summary), extractFileOperations (read/modified files); "
        "agent-session.ts _checkCompaction (overflow: one compact-and-retry)",
        pi.__doc__ or "",
        # pi's code keeps 16,384 whatever the model's window (issue 42): a simulated window is run as a model of it.
        # It checks only between prompt runs (agent_end, before the next prompt), never inside a tool loop.
        harness=replace(SOURCE_HARNESS, emergency=True, window="as-is", checks="run-start"),
    )


def opencode() -> Preset:
    """opencode (V1, 31e22f65): prune old tool outputs, then always an anchored summary of all but the newest whole turns within
    clamp(window/4, 2,000, 15,000) tokens."""
    from compactlab.strategies.pipeline import Pipeline
    from compactlab.strategies.prune import Prune

    return Preset(
        "opencode@31e22f65",
        Pipeline(
            stages=(Prune(steps_as_turns=False, prune_errors=False, keep_small=False), opencode_summary()),
            stop_when_under_target=False,
        ),
        # isOverflow: tokenCount(the last reply's usage) >= usable, the messages since not counted.
        Trigger(fraction=1.0, reserve_tokens=52_000, reserve_inclusive=True),
        "usage",
        "sst/opencode packages/opencode/src/session/overflow.ts (usable = window − min(output, 32,000) − "
        "min(20,000, output); isOverflow) and packages/opencode/src/session/compaction.ts (prune: PRUNE_PROTECT 40000, PRUNE_MINIMUM 20000; select "
        "and splitTurn: whole turns within preserveRecentBudget clamp(usable·0.25, 2000, 15000); processCompaction); "
        "prompt compaction-suffix.ts",
        opencode.__doc__ or "",
        choices="output limit: 32,000 (ProviderTransform.maxOutputTokens' OUTPUT_TOKEN_MAX), so 52,000 reserved, scaled "
        "by simulated ÷ the model's real window (a listed deviation); compaction.prune: on; summary output budget: 4,096",
        harness=replace(SOURCE_HARNESS, emergency=True),
    )


def opencode_summary():
    """opencode's summary stage: anchored summary prompt over all but the newest whole turns within
    clamp(window/4, 2,000, 15,000) tokens (a split turn folded into the one summary), prior summary updated."""
    from compactlab.strategies.merge import one_prompt_merge

    return one_prompt_merge(
        "opencode.j2",
        keep_recent_tokens=None,
        keep_recent_min=2_000,
        keep_recent_max=15_000,
        tail_rule="within",
        track_files=False,
    )


def codex() -> Preset:
    """Codex CLI (0100b103): at 90% of the window, a handoff summary replaces the history, after up to 20,000 tokens of user messages."""
    from compactlab.strategies.summarize import Summarize

    return Preset(
        "codex@0100b103",
        Summarize(
            keep_recent_tokens=0,
            keep_user_message_tokens=20_000,
            template="codex.j2",
            track_files=False,
            append_last_request=False,
        ),
        Trigger(fraction=0.9),
        "hybrid",
        "openai/codex codex-rs/core/src/compact.rs: run_compact_task_inner (the whole history summarized), "
        "collect_user_messages and build_compacted_history_with_limit (COMPACT_USER_MESSAGE_MAX_TOKENS 20,000 of the "
        "newest user messages, the one over the budget truncated, then the summary, SUMMARY_PREFIX), "
        "templates/compact/prompt.md; codex-rs/protocol/src/openai_models.rs ModelInfo::auto_compact_token_limit "
        "((context_window * 9) / 10); codex.rs (auto_compact_recently_attempted; ContextWindowExceeded ends the turn)",
        codex.__doc__ or "",
        choices="the window 0.9 applies to: the recorded (raw) one",
        harness=replace(SOURCE_HARNESS, loop_guard=True),
    )


# Claude Code compacts when its count of the context (the last prompt, its output and an estimate of
# the messages since) exceeds its window less a reserve, and the reserve changed between versions.
# Its /context shows the reserve as "Autocompact buffer": the model's output limit plus 13,000
# (anthropics/claude-code#12004) in 2.0.x ("77.0k" for claude-opus-4-5 in 2.0.57, its 64,000-token
# limit), 33k in later 2.1.x (#23409: min(output limit, 20,000) + 13,000; "assumes 200,000 tokens and
# compacts near 167K" for a model it does not know, tale-project/tale#3398). Claude Code gives every
# model it does not know its 200,000 default window (GLM, MiMo, Qwen run through it too).
#
# The reserves per version range below are chosen from the real automatic compactions
# (`python -m tests.scripts.trigger_choice`, docs/preset-rules.md): per version, the reserve the
# preset's trigger fires within ±2 calls of the most real compactions with, neighbouring versions
# merged while one reserve does as well. Evidence (distinct automatic compactions, repositories):
# 2.0.31 2 (1), 2.0.57 6 (1, all claude-opus-4-5 at 123-128k), 2.0.74-2.0.76 13 (1, claude-opus-4-5 at
# 155-172k: like Sonnet), 2.1.5 1, 2.1.19 2 (GLM), 2.1.53-2.1.167 27 (7, 167-188k). A reserve above
# 33,000 in 2.1.x makes up for the estimate of the messages since the last call, which comes out up
# to ~1,000 below Claude Code's own count. A version no range covers has no evidence: it keeps the
# documented rule, the output limit (32,000; 64,000 for claude-opus-4-5) + 13,000.
CLAUDE_CODE_BUFFER = 13_000
CLAUDE_CODE_WINDOW = 200_000  # Claude Code's window for every model, one it does not know too (GLM, Qwen, ...)
CLAUDE_CODE_OUTPUT = 32_000
CLAUDE_CODE_OUTPUT_BY_MODEL = (("claude-opus-4-5", 64_000),)
CLAUDE_CODE_BY_VERSION = (
    VersionReserve("2.0.31", "2.0.57", 45_000, (("claude-opus-4-5", 77_000),)),
    VersionReserve("2.0.74", "2.1.19", 45_000),  # claude-opus-4-5 too
    VersionReserve("2.1.53", "2.1.81", 34_000),
    VersionReserve("2.1.83", "2.1.87", 36_000),
    VersionReserve("2.1.88", "2.1.88", 33_000),
    VersionReserve("2.1.92", "2.1.167", 36_000),
)


def claude_code() -> Preset:
    """Claude Code 2.0.x to 2.1.x as recorded up to 2026-06-07: when the context exceeds the window (200,000 for every model) less the reserve
    of the session's Claude Code version (33,000-45,000; 77,000 for claude-opus-4-5 up to 2.0.57), a nine-section
    summary replaces the history; the newest files read or written, the todo list and the plan file are re-attached
    after it (`compactlab.strategies.reattach`)."""
    from compactlab.strategies.reattach import WithReattachments
    from compactlab.strategies.summarize import Summarize

    return Preset(
        "claude-code@2026-06-07",
        WithReattachments(
            Summarize(keep_recent_tokens=0, template="claude_code.j2", track_files=False, append_last_request=False)
        ),
        Trigger(
            fraction=math.inf,
            reserve_tokens=CLAUDE_CODE_OUTPUT + CLAUDE_CODE_BUFFER,
            reserve_by_model=tuple((model, output + CLAUDE_CODE_BUFFER) for model, output in CLAUDE_CODE_OUTPUT_BY_MODEL),
            reserve_by_version=CLAUDE_CODE_BY_VERSION,
        ),
        "hybrid",
        'the real compactions and /context readings ("Autocompact buffer") of Claude Code sessions (datasets/m-claude, '
        "../shared/transcripts/pai-claude and the development set: threshold = 200,000 − the version's reserve, see "
        "CLAUDE_CODE_BY_VERSION; anthropics/claude-code#12004, #23409); summary sections from real "
        "compact summaries in datasets/m-claude and public prompt copies",
        claude_code.__doc__ or "",
        choices="the output limit: the model's default (a user's CLAUDE_CODE_MAX_OUTPUT_TOKENS moves the threshold); "
        "the reserve per Claude Code version: chosen on real automatic compactions (CLAUDE_CODE_BY_VERSION), a version "
        "without evidence (or a session that records none) keeps window − output limit − 13,000 (45,000; 77,000 for "
        "claude-opus-4-5); reserved under a simulated window: scaled by simulated ÷ the model's real window",
        context_windows=(("claude", CLAUDE_CODE_WINDOW),),
        unknown_window=CLAUDE_CODE_WINDOW,
        harness=Harness(pin_task=False),
    )


def openhands() -> Preset:
    """OpenHands LLM-summarizing condenser: keep the first event, summarize the middle, keep a recent tail."""
    from compactlab.strategies.merge import IterativeMerge

    return Preset(
        "openhands",
        IterativeMerge(template="openhands.j2", update_template="openhands.j2", track_files=False, append_last_request=False),
        Trigger(fraction=0.8),
        "hybrid",
        "All-Hands-AI/OpenHands openhands/memory/condenser/impl/llm_summarizing_condenser.py: condense (over max_size "
        "events: keep_first events, the summary event, the newest max_size // 2 − keep_first events; the earlier "
        "summary and the forgotten events summarized together), the STATE/TESTS/CHANGES/DEPS/INTENT prompt; "
        "openhands/core/config/condenser_config.py (keep_first 1, max_size 100); "
        "openhands/controller/agent_controller.py (a condensation request on ContextWindowExceededError)",
        openhands.__doc__ or "",
        choices="the event-count trigger and tail in tokens: trigger 0.8 of the window, a quarter of the window kept",
        harness=replace(SOURCE_HARNESS, emergency=True),
    )


GEMINI_WINDOW = 1_048_576  # tokenLimits.ts:20-38: every model, a Gemini one or not (DEFAULT_TOKEN_LIMIT)


def gemini_cli() -> Preset:
    """Gemini CLI: when the last prompt reaches half the model's limit (1,048,576 for every model), tool outputs past the
    newest 50,000 tokens are cut and the history up to the first user message after 70% of its characters becomes a
    <state_snapshot>; then bulky tool outputs past the newest 50,000 tool tokens are masked."""
    from compactlab.strategies.gemini import GEMINI_COMMIT, GEMINI_DATE, GeminiCompression, GeminiMasking
    from compactlab.strategies.pipeline import Pipeline

    return Preset(
        "gemini-cli",
        Pipeline(stages=(GeminiCompression(), GeminiMasking()), stop_when_under_target=False),
        Trigger(fraction=0.5),
        "hybrid",
        f"google-gemini/gemini-cli at {GEMINI_COMMIT[:8]} ({GEMINI_DATE}), Apache-2.0: packages/core/src/context/"
        "chatCompressionService.ts (DEFAULT_COMPRESSION_TOKEN_THRESHOLD 0.5 of tokenLimit, COMPRESSION_PRESERVE_THRESHOLD "
        "0.3, findCompressSplitPoint, truncateHistoryToBudget 50,000, the <state_snapshot> turn), "
        "toolOutputMaskingService.ts (50,000 protected, 30,000 prunable, head-and-tail preview), core/client.ts "
        "processTurn (compress, then mask, before every model call), core/tokenLimits.ts, utils/tokenCalculation.ts, "
        "prompts/snippets.ts getCompressionPrompt",
        gemini_cli.__doc__ or "",
        choices="the summary's output budget (Gemini sets none): 8,192",
        context_windows=(("gemini", GEMINI_WINDOW),),
        unknown_window=GEMINI_WINDOW,
        harness=replace(SOURCE_HARNESS, loop_guard=False, emergency=False, anchor_output=False),
    )


def masking() -> Preset:
    """Observation masking (JetBrains 'The Complexity Trap', 2025): keep the last 10 tool outputs."""
    from compactlab.strategies.masking import ObservationMasking

    return Preset(
        "jetbrains-masking",
        ObservationMasking(keep_last=10),
        Trigger(fraction=0.8),
        "hybrid",
        "Lindenbauer et al., 'The Complexity Trap' (arXiv 2508.21433), section 3 (observation masking: the last 10 "
        "observations kept, older ones replaced by a placeholder); its config default_no_demo_N=1_M=10.yaml "
        "(history_processors: last_n_observations, n 10); SWE-agent sweagent/agent/history_processors.py "
        "(LastNObservations: 'Old environment output: (N lines omitted)')",
        masking.__doc__ or "",
    )
