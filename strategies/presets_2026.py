"""The presets of the engines read as they compact in 2026 (issue 48): Cline's SDK, goose and the OpenHands SDK, beside
`compactlab.strategies.presets`, whose module holds the older ones; their rules are in
`compactlab.strategies.rules_2026`. Each names the commit it was read at."""

from __future__ import annotations

from dataclasses import replace

from compactlab.contract import Trigger
from compactlab.strategies.presets import SOURCE_HARNESS, Preset

CLINE_COMMIT = "21cb8d2525bcedf1f4b6890b27a74a14fe7451e4"  # cline/cline, 2026-08-22 (chore(sdk): release v0.0.78)
CLINE_DATE = "2026-08-22"
CLINE = "cline/cline sdk/packages/core/src/extensions/context/"
# goose's repository is over the snapshot fetch limit: its files were read as the search index stores them.
GOOSE = "block/goose crates/goose/src/context_mgmt/mod.rs"
OH_SDK_COMMIT = "611629e6999ad398dc49c761721eefe18d5e6bd9"  # OpenHands/software-agent-sdk, 2026-08-22
OH_SDK_DATE = "2026-08-22"


def cline() -> Preset:
    """Cline (SDK): when the request reaches 0.9 of the model's input limit, everything before the newest 20,000
    tokens (never the latest typed prompt's turn) is summarized into the earlier summary."""
    from compactlab.strategies.merge import one_prompt_merge

    return Preset(
        "cline",
        one_prompt_merge("cline.j2", keep_recent_tokens=20_000, tail_rule="latest-turn", track_files=True),
        Trigger(fraction=0.9),
        "hybrid",
        f"{CLINE} at {CLINE_COMMIT[:8]} ({CLINE_DATE}): compaction.ts createContextCompactionPrepareTurn (requestInputTokens "
        ">= maxInputTokens × COMPACTION_TRIGGER_RATIO 0.9; agentic by default, basic on overflow recovery), "
        "compaction-shared.ts (resolveEffectiveMaxInputTokens: the model's maxInputTokens, else 0.9 × contextWindow; "
        "DEFAULT_PRESERVE_RECENT_TOKENS 20,000; findCutIndex; TOOL_RESULT_CHAR_LIMIT and FILE_CONTENT_CHAR_LIMIT 2,000; "
        "buildSummaryRequest; DEFAULT_SUMMARY_MAX_OUTPUT_TOKENS 4,096; buildSummaryMessage 'Context summary:'), "
        "agentic-compaction.ts runAgenticCompaction (the previous summary and the messages since, folded into one)",
        cline.__doc__ or "",
        choices="compaction enabled (the SDK's default is off: compaction.enabled must be true); the model's input "
        "limit: the window (the catalog's maxInputTokens for Claude and GPT models equals their context window), so "
        "0.9 of it; a model with a window alone would compact at 0.81",
        harness=replace(SOURCE_HARNESS, emergency=True),
    )


def goose() -> Preset:
    """goose: above 0.8 of the window, the whole history is summarized; goose's continuation message and the latest
    user text follow the summary."""
    from compactlab.strategies.goose import GooseCompaction

    return Preset(
        "goose",
        GooseCompaction(max_summary_tokens=4_096),
        Trigger(fraction=0.8),
        "usage",
        f"{GOOSE} (as the search index stores it; the commit named by issue 48, 006bd233, could not be fetched: the "
        "repository is over the snapshot limit): DEFAULT_COMPACTION_THRESHOLD 0.8, check_if_compaction_needed "
        "(session total_tokens / context_limit > threshold), compact_messages (every message summarized; the latest "
        "user text message re-appended; CONVERSATION_ and TOOL_LOOP_CONTINUATION_TEXT), do_compact (middle-out removal "
        "of tool responses 0/10/20/50/100% on ContextLengthExceeded), tool_ids_to_summarize and "
        "compute_tool_call_cutoff (TOOLCALL_SUMMARIZATION_BATCH_SIZE 10, GOOSE_TOOL_PAIR_SUMMARIZATION default true); "
        "crates/goose/src/prompts/compaction.md",
        goose.__doc__ or "",
        choices="the summary's output budget (goose sets none): 4,096",
        # agent.rs reply: checked once the user's message is added, before the tool loop, not inside it.
        harness=replace(SOURCE_HARNESS, emergency=True, checks="run-start"),
    )


def openhands_sdk() -> Preset:
    """OpenHands SDK (default condenser): over the model's input limit, the events after the system prompt and the task
    are forgotten until the rest fits half of it, and summarized with any earlier summary; none when under a tenth
    would be forgotten."""
    from compactlab.strategies.openhands_sdk import SdkCondenser

    return Preset(
        "openhands-sdk",
        SdkCondenser(max_summary_tokens=4_096),
        Trigger(fraction=1.0),
        "hybrid",
        f"OpenHands/software-agent-sdk at {OH_SDK_COMMIT[:8]} ({OH_SDK_DATE}): openhands-sdk/openhands/sdk/context/"
        "condenser/llm_summarizing_condenser.py (get_condensation_reasons: tokens over the agent LLM's "
        "effective_max_input_tokens, or more than max_size events; _get_forgotten_events: forget until max_tokens // 2, "
        "from keep_first, to the next manipulation index; minimum_progress 0.1; default_condenser: max_size 80, "
        "keep_first 4), condenser/utils.py get_suffix_length_for_token_reduction, prompts/summarizing_prompt.j2; "
        "llm/llm.py _init_model_info_and_caps (the input limit: max_input_tokens, else litellm's); agent/agent.py "
        "(a condensation request when the context window is exceeded). The successor of OpenHands V0's condenser "
        "(the openhands preset: keep_first 1, max_size 100), kept beside it",
        openhands_sdk.__doc__ or "",
        choices="the summary's output budget (the SDK sets none for the condenser's LLM): 4,096; the input limit: the window",
        # keep_first 4: the system prompt and the user's first message are among the first events (pin_task on).
        harness=replace(SOURCE_HARNESS, pin_task=True, emergency=True),
    )
