"""Presets: named configurations that reproduce real compaction designs.

A preset is a strategy plus the trigger and token estimator its design uses, with the source it
was taken from. It compacts by delegating to its strategy, so anywhere a strategy is accepted a
preset is too, and `--strategy pi` runs pi's whole design. Where a design does something the
engine does not model, the preset says so in `deviations` rather than pretending.

Sources were read in the agents' public code (paths below); the seed designs come from the
project's design issues.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.engine import Trigger
from strategies.base import CompactionRequest, CompactionResult, Context, Strategy


@dataclass(frozen=True)
class Preset:
    name: str
    strategy: Strategy
    trigger: Trigger
    estimator: str
    source: str
    description: str
    deviations: str = ""

    def compact(self, context: Context, request: CompactionRequest) -> CompactionResult:
        return self.strategy.compact(context, request)


def seed_000() -> Preset:
    """Seed 000 (main agent): summarize with the full history archived; chars/3.5 counts."""
    from strategies.archive import Archive

    return Preset(
        "seed-000", Archive(inner="summarize"), Trigger(fraction=0.8), "chars/3.5",
        "seed 000 (main agent): archive + chars/3.5 estimate + model context-window table",
        seed_000.__doc__, "trigger fraction not stated by the seed: the engine default 0.8",
    )


def seed_001() -> Preset:
    """Seed 001 (Go middleware): clean messages, summarize, append the last user request."""
    from strategies.summarize import Summarize

    return Preset(
        "seed-001", Summarize(append_last_request=True), Trigger(fraction=0.8), "chars/4",
        "seed 001 (Go middleware): missing tool results filled, 'Last request from user was: …' appended",
        seed_001.__doc__, "trigger and estimator not stated by the seed: 0.8 and chars/4",
    )


def seed_002() -> Preset:
    """Seed 002 (RFC 007): prune old tool outputs, protecting the newest 40k tokens."""
    from strategies.prune import Prune

    return Preset(
        "seed-002", Prune(), Trigger(fraction=0.8), "chars/4",
        "seed 002 (RFC 007): prune with protect 40,000 / minimum 20,000 tokens, chars/4 (as opencode)",
        seed_002.__doc__,
    )


def seed_003() -> Preset:
    """Seed 003 (glm-cli): two-level trigger (warning 75%, critical 90%, target 60%) and the word heuristic."""
    from strategies.summarize import Summarize

    return Preset(
        "seed-003", Summarize(), Trigger(warning=0.75, critical=0.9, target=0.6), "words",
        "seed 003 (glm-cli): WARNING at 75%, CRITICAL at 90%, 60% target; words estimator",
        seed_003.__doc__, "both levels run the same summarize strategy",
    )


def seed_004() -> Preset:
    """Seed 004 (Opal): iterative merge, window/4 kept, split turns, file lists, truncate fallback; hybrid count."""
    from strategies.merge import IterativeMerge

    return Preset(
        "seed-004", IterativeMerge(), Trigger(fraction=0.8), "hybrid",
        "seed 004 (Opal): keep window/4, turn-prefix summary for long turns, cumulative file lists, truncate fallback",
        seed_004.__doc__,
    )


def pi() -> Preset:
    """pi: compact when context > window − 16,384; keep 20,000 recent tokens; update the earlier summary."""
    from strategies.merge import IterativeMerge

    return Preset(
        "pi", IterativeMerge(keep_recent_tokens=20_000, max_summary_tokens=13_107), Trigger(fraction=1.0, reserve_tokens=16_384),
        "hybrid",
        "badlogic/pi-mono packages/coding-agent/src/core/compaction/compaction.ts (reserveTokens 16384, keepRecentTokens 20000, "
        "summary maxTokens 0.8·reserve, usage + chars/4 estimate)",
        pi.__doc__,
    )


def opencode() -> Preset:
    """opencode: prune old tool outputs, then an anchored summary keeping ≤15k recent tokens."""
    from strategies.pipeline import Pipeline

    return Preset(
        "opencode", Pipeline(stages=("prune", "opencode-summary")), Trigger(fraction=1.0, reserve_tokens=52_000), "hybrid",
        "sst/opencode packages/opencode/src/session/compaction.ts and overflow.ts (PRUNE_PROTECT 40000, PRUNE_MINIMUM 20000, "
        "reserved min(20000, max output), preserve_recent clamp(usable·0.25, 2000, 15000)); prompt compaction-suffix.ts",
        opencode.__doc__,
        "reserve assumes a 32,000-token max output (+20,000 reserved); prune is opt-in in recent opencode versions",
    )


def opencode_summary():
    """opencode's summary stage: anchored summary prompt, 15,000 recent tokens kept, prior summary updated."""
    from strategies.merge import IterativeMerge

    return IterativeMerge(keep_recent_tokens=15_000, template="opencode.j2", update_template="opencode.j2", max_summary_tokens=4_096)


def codex() -> Preset:
    """Codex CLI: at 90% of the window, a handoff summary of the whole history ("context checkpoint")."""
    from strategies.summarize import Summarize

    return Preset(
        "codex", Summarize(keep_recent_tokens=0, template="codex.j2", track_files=False),
        Trigger(fraction=0.9), "hybrid",
        "openai/codex codex-rs/core/src/compact.rs, templates/compact/prompt.md; auto_compact_token_limit = 90% of the window",
        codex.__doc__,
        "Codex keeps up to 20,000 tokens of recent user messages (not the whole recent turn) beside the summary; "
        "here the current turn is kept instead",
    )


def claude_code() -> Preset:
    """Claude Code (public facts only): at ~95% of the window, a nine-section summary replaces the history;
    the newest files read, the todo list and the plan file are re-attached after it (`strategies.reattach`)."""
    from strategies.reattach import WithReattachments
    from strategies.summarize import Summarize

    return Preset(
        "claude-code", WithReattachments(Summarize(keep_recent_tokens=0, template="claude_code.j2")),
        Trigger(fraction=0.95), "hybrid",
        "Claude Code docs (CLAUDE_AUTOCOMPACT_PCT_OVERRIDE: 'approximately 95% capacity'); summary sections from real "
        "compact summaries in datasets/m-claude and public prompt copies",
        claude_code.__doc__,
        "closed source: microcompaction is not modelled; re-attached files are their last content in the transcript, "
        "not the disk's, and files the session only created are not re-attached (see strategies/reattach.py)",
    )


def openhands() -> Preset:
    """OpenHands LLM-summarizing condenser: keep the first event, summarize the middle, keep a recent tail."""
    from strategies.merge import IterativeMerge

    return Preset(
        "openhands", IterativeMerge(template="openhands.j2", update_template="openhands.j2"),
        Trigger(fraction=0.8), "hybrid",
        "All-Hands-AI/OpenHands openhands/memory/condenser/impl/llm_summarizing_condenser.py (keep_first 1, max_size 100-120 events)",
        openhands.__doc__,
        "OpenHands triggers on event count (max_size), not tokens; here the token trigger 0.8 is used",
    )


def masking() -> Preset:
    """Observation masking (JetBrains 'The Complexity Trap', 2025): keep the last 10 tool outputs."""
    from strategies.masking import ObservationMasking

    return Preset(
        "jetbrains-masking", ObservationMasking(keep_last=10), Trigger(fraction=0.8), "hybrid",
        "Lindenbauer et al., 'The Complexity Trap' (arXiv 2508.21433): SWE-agent last_n_observations, n=10",
        masking.__doc__,
    )
