"""The rules of the presets read in 2026 (`compactlab.strategies.presets_2026`: cline, goose, openhands-sdk), each
against the engine's own code, as `compactlab.strategies.engine_rules` holds the older presets'.
Sources, read for this table:
- cline/cline at 21cb8d25 (2026-08-22): sdk/packages/core/src/extensions/context/ ("compaction.ts",
  "compaction-shared.ts", "agentic-compaction.ts", "basic-compaction.ts");
- block/goose crates/goose/src/context_mgmt/mod.rs ("mod.rs") and crates/goose/src/agents/agent.rs
  ("agent.rs"), as the search index stores them (the snapshot is over the fetch limit, so issue 48's
  commit 006bd233 could not be read; the line numbers are those of the stored version with tool-pair
  summarization on by default);
- OpenHands/software-agent-sdk at 611629e6 (2026-08-22): openhands-sdk/openhands/sdk/context/condenser/
  llm_summarizing_condenser.py ("condenser.py"), utils.py, prompts/summarizing_prompt.j2, and
  openhands-sdk/openhands/sdk/llm/llm.py, agent/agent.py.
"""

from __future__ import annotations

from compactlab.strategies.rule import CHECKS, PRESET, Rule, harness_rules, llm_summary

R26 = "tests/strategies/test_rules_2026.py::"
CL = "cline compaction/"  # sdk/packages/core/src/extensions/context/ at 21cb8d25
GS = "goose mod.rs"
OS = "openhands-sdk context/condenser/"  # openhands-sdk/openhands/sdk/context/condenser/ at 611629e6

CLINE_RULES: tuple[Rule, ...] = (
    Rule(
        "compact before a model request when requestInputTokens >= maxInputTokens × COMPACTION_TRIGGER_RATIO (0.9)",
        f"{CL}compaction-shared.ts:17; compaction.ts:313-323, 344",
        "Trigger(fraction=0.9)",
        test=f"{CHECKS}test_thresholds_fire_at_their_share_of_the_window",
    ),
    Rule(
        "maxInputTokens: the model's reported input limit (capped by its window), else 0.9 × the window",
        f"{CL}compaction-shared.ts:13-15, 51-70; llms catalog.generated.ts (claude-opus-4-5, claude-sonnet-4-5: "
        "maxInputTokens 200,000 = contextWindow)",
        "the window (the catalog's input limit for Claude and GPT models), so 0.9 of the window",
        test=f"{CHECKS}test_thresholds_fire_at_their_share_of_the_window",
    ),
    Rule(
        "the request is counted by estimateRequestInputTokens: chars/4 of the system prompt, the messages (as JSON) "
        "and the tools, not the provider's usage",
        f"{CL}compaction.ts:296-312; compaction-shared.ts:184-202",
        "hybrid: the last recorded prompt and its output, plus chars/4 of the messages since",
        "the recorded sessions hold neither Cline's JSON nor the tool schemas, so chars/4 of the messages' text "
        "undercounts what Cline estimates; measured on the bundled Codex session Monotoba__OpenPrintKit at a 64,000 "
        "window, chars/4 of the text read 55,812 where the real prompt was already over the window (every compaction "
        "then an emergency); the last recorded prompt counts the system prompt and the tools as the provider did",
        test=f"{CHECKS}test_hybrid_presets_add_new_messages_as_chars_over_4",
    ),
    Rule(
        "asked before every model request of the agent loop (a tool loop's too)",
        f"{CL}compaction.ts:242-256, 292",
        "the engine asks before each recorded call",
        test=f"{CHECKS}test_presets_are_asked_before_every_recorded_call",
    ),
    Rule(
        "keep the newest messages until they hold preserveRecentTokens = min(20,000, the messages' target); the rest "
        "is summarized",
        f"{CL}compaction-shared.ts:19, 331-348; compaction.ts:168-171, 199-217",
        "IterativeMerge(keep_recent_tokens=20,000, tail_rule 'latest-turn')",
        "the target (0.7 × the trigger less the request overhead, compaction.ts:199-217) is below 20,000 only under a "
        "window of about 35,000 tokens; compactlab keeps 20,000 there too",
        test=f"{R26}test_cline_keeps_the_newest_20000_tokens_from_a_safe_cut",
    ),
    Rule(
        "the latest typed user prompt is never summarized: the cut moves back to its turn's start (unless that turn "
        "opens the history)",
        f"{CL}compaction-shared.ts:350-359",
        "tail_rule 'latest-turn'",
        test=f"{R26}test_cline_never_summarizes_the_latest_prompt",
    ),
    Rule(
        "the cut moves back to an assistant message or a typed user message, never splitting a tool call from its result",
        f"{CL}compaction-shared.ts:317-329, 360-362",
        "tail_rule 'latest-turn': back to the nearest safe cut (no tool result loses its call)",
        test=f"{R26}test_cline_keeps_the_newest_20000_tokens_from_a_safe_cut",
    ),
    Rule(
        "a later compaction folds the previous summary and the messages since into one summary (Previous summary: ...)",
        f"agentic-compaction.ts:138-152, 227-231; {CL}compaction-shared.ts:657-691",
        "IterativeMerge with cline.j2 as its update template",
        test=f"{R26}test_cline_folds_the_previous_summary_into_the_next",
    ),
    llm_summary(
        "the summary is written by an LLM with buildSummaryRequest's Goal / State / Highlights / Next / Files sections",
        f"agentic-compaction.ts:70-106; {CL}compaction-shared.ts:657-691",
    ),
    Rule(
        "tool results, thinking and file contents cut to 2,000 characters in the summarizer's input",
        f"{CL}compaction-shared.ts:21-22, 72-126, 146-164",
        "the summarizer's input cuts each tool result at 2,000 characters (compactlab.strategies.prompting "
        "TOOL_RESULT_MAX_CHARS)",
        test=f"{R26}test_cline_asks_for_4096_tokens_with_tool_results_cut_at_2000",
    ),
    Rule(
        "the summary's output budget: 4,096 tokens (the model's maxTokens only lowers it)",
        f"{CL}compaction-shared.ts:20, 700-714",
        "max_summary_tokens 4,096",
        test=f"{R26}test_cline_asks_for_4096_tokens_with_tool_results_cut_at_2000",
    ),
    Rule(
        "the summary replaces the summarized messages as one user message, 'Context summary:', ending with a ## Files "
        "section of the files read and modified (added when the LLM left it out)",
        f"{CL}compaction-shared.ts:412-449, 635-655, 756-779; agentic-compaction.ts:278-291",
        "one user summary message ending with the cumulative <read-files> / <modified-files> lists",
        "compactlab carries the file lists from one summary to the next by their tags (files.j2), where Cline keeps "
        "them in the summary message's metadata; the files come from compactlab's file activity (every agent's read "
        "and edit tools), where Cline reads its own tools' names (read_files, editor, apply_patch)",
        test=f"{R26}test_cline_summary_ends_with_the_files",
    ),
    Rule(
        "on overflow recovery, basic compaction instead: deterministic, no LLM, the 3 most recent assistant texts kept",
        f"{CL}compaction.ts:435-498; basic-compaction.ts:59-61, 140-160",
        "the same agentic summary, on the harness's emergency path",
        "compactlab's emergency path compacts with the preset's own strategy; basic compaction's projection "
        "(basic-compaction.ts, 711 lines) is not reproduced",
        test=f"{PRESET}test_presets_set_the_emergency_path_as_their_sources",
    ),
    *harness_rules(
        f"{CL}compaction-shared.ts:331-364 (the first message is cut like any other)",
        f"{CL}compaction.ts:344-346 (every request over the trigger compacts)",
        f"{CL}compaction.ts:44-51, 435-498 (overflowRecovery forces a compaction)",
        True,
    ),
)

GOOSE_RULES: tuple[Rule, ...] = (
    Rule(
        "compact when the session's total tokens / context_limit > DEFAULT_COMPACTION_THRESHOLD (0.8)",
        f"{GS}:21, check_if_compaction_needed (usage_ratio > threshold)",
        "Trigger(fraction=0.8)",
        "compactlab's trigger fires at the share itself (≥), goose over it (>): one token apart",
        test=f"{R26}test_goose_checks_its_last_usage_at_each_prompt",
    ),
    Rule(
        "the count is the session's total_tokens, the last reply's usage (estimated from the messages only when "
        "no usage is recorded)",
        f"{GS} check_if_compaction_needed (session.usage.total_tokens)",
        "the usage estimator: the last recorded call's prompt and output",
        test=f"{R26}test_goose_checks_its_last_usage_at_each_prompt",
    ),
    Rule(
        "checked once per reply, after the user's message is added, not inside the tool loop",
        "goose agent.rs reply (needs_auto_compact = check_if_compaction_needed(...) before the loop)",
        "harness checks 'run-start'",
        test=f"{R26}test_goose_checks_its_last_usage_at_each_prompt",
    ),
    Rule(
        "every message is summarized: no tail is kept",
        f"{GS} compact_messages (messages_to_compact = messages.as_slice())",
        "GooseCompaction (keep_recent_tokens 0)",
        test=f"{R26}test_goose_summarizes_everything_then_continues_and_repeats_the_request",
    ),
    Rule(
        "after the summary, an assistant message: continue the conversation (the latest user text is the last message) "
        "or continue calling tools (a tool loop)",
        f"{GS}:29-38, compact_messages (continuation_text)",
        "GooseCompaction's continuation message, goose's text",
        test=f"{R26}test_goose_summarizes_everything_then_continues_and_repeats_the_request",
    ),
    Rule(
        "the latest user text message is re-appended after the summary",
        f"{GS} compact_messages (preserved_user_message, has_text_only)",
        "GooseCompaction: a user message with the latest user text",
        test=f"{R26}test_goose_summarizes_everything_then_continues_and_repeats_the_request",
    ),
    llm_summary(
        "the summary is written by an LLM with compaction.md (Goal, Constraints & Preferences, Progress, Key Decisions, "
        "Next Steps, Critical Context)",
        f"{GS} do_compact; crates/goose/src/prompts/compaction.md",
    ),
    Rule(
        "when the summarizer's request is too long, tool responses are removed from the middle out (10, 20, 50, "
        "100%) and it is retried",
        f"{GS} do_compact (removal_percentages [0, 10, 20, 50, 100]), filter_tool_responses",
        "the summarizer's request holds every tool response, once",
        "the replay's summarizer (the extractive one offline, the run's LLM otherwise) does not report a context "
        "length error to retry on",
        test=f"{R26}test_goose_asks_the_summarizer_with_every_tool_response",
    ),
    Rule(
        "in the background, once more than cutoff + 10 tool calls (cutoff = clamp(3 × 0.8 × context_limit / 20,000, "
        "10, 500); the current turn's protected) are unsummarized, the oldest 10 tool pairs are each replaced by a "
        "one-line LLM summary",
        f"{GS}:23-29 (GOOSE_TOOL_PAIR_SUMMARIZATION, default true), compute_tool_call_cutoff, tool_ids_to_summarize, "
        "maybe_summarize_tool_pairs",
        "not modelled: nothing changes between compactions",
        "the engine asks a preset only when its trigger fires, and each pair's summary needs an LLM call: the "
        "preset's context is larger than goose's between compactions, so it compacts earlier than goose would",
        test=f"{CHECKS}test_presets_change_nothing_between_compactions",
    ),
    *harness_rules(
        f"{GS} compact_messages (the first message is summarized like any other)",
        f"{GS} check_if_compaction_needed (every reply over the threshold compacts)",
        "goose agent.rs reply (ContextLengthExceeded: compact and retry)",
        True,
    ),
)

OPENHANDS_SDK_RULES: tuple[Rule, ...] = (
    Rule(
        "condense when the view's tokens exceed the agent LLM's effective_max_input_tokens (max_input_tokens, else "
        "litellm's; the condenser's own max_tokens is None by default)",
        f"{OS}llm_summarizing_condenser.py:49, 96-115, 136-148; llm/llm.py:2391-2397",
        "Trigger(fraction=1.0): the window is the input limit",
        "compactlab's trigger fires at the window itself (≥), the SDK over it (>): one token apart",
        test=f"{CHECKS}test_thresholds_fire_at_their_share_of_the_window",
    ),
    Rule(
        "condense, too, when the view holds more than max_size events (80 in default_condenser), keeping the first "
        "keep_first and the newest max_size // 2 − keep_first − 1 (35)",
        f"{OS}llm_summarizing_condenser.py:150-152, 273-275, 505-515",
        "not modelled: only the token rule fires",
        "compactlab's triggers are sizes in tokens, not counts of messages; on the bundled sessions, where an event is "
        "about a message, this rule would fire far more often than the token rule",
        test=f"{CHECKS}test_presets_change_nothing_between_compactions",
    ),
    Rule(
        "forget events after the first ones until the view is within max_tokens // 2 (the shortest prefix whose "
        "tokens exceed total − max_tokens // 2)",
        f"{OS}llm_summarizing_condenser.py:277-299; utils.py:119-170",
        "SdkCondenser(keep_share 0.5, tail_rule 'within'): the longest tail within half the window less the head",
        test=f"{R26}test_openhands_sdk_forgets_until_half_the_window",
    ),
    Rule(
        "the forgotten range ends at the next manipulation index (a tool call is never parted from its observation)",
        f"{OS}llm_summarizing_condenser.py:301-311",
        "tail_rule 'within': the tail starts at a safe cut",
        test=f"{R26}test_openhands_sdk_forgets_until_half_the_window",
    ),
    Rule(
        "the first keep_first (4) events are never forgotten",
        f"{OS}llm_summarizing_condenser.py:51-54, 304-305, 508, 514",
        "harness pin_task on: the system prompt, instructions and the task message are kept",
        "compactlab pins the head it knows (system prompt, instructions, the first user message), not a count of "
        "events: the two events after the task (the agent's first action and its observation) are summarized",
        test=f"{R26}test_openhands_sdk_keeps_the_head_and_resummarizes_the_earlier_summary",
    ),
    Rule(
        "an earlier summary sits at keep_first and is forgotten with the events: it is summarized again with them "
        "(the prompt: events 'which will include previous summaries')",
        f"{OS}llm_summarizing_condenser.py:209-221, 304-314; prompts/summarizing_prompt.j2:2",
        "Summarize (not iterative): the earlier summary is the first summarized message",
        test=f"{R26}test_openhands_sdk_keeps_the_head_and_resummarizes_the_earlier_summary",
    ),
    Rule(
        "a condensation forgetting fewer than minimum_progress (0.1) of the view's events is refused",
        f"{OS}llm_summarizing_condenser.py:56-63, 384-388",
        "SdkCondenser(minimum_progress 0.1): no compaction when fewer than a tenth of the messages would go",
        test=f"{R26}test_openhands_sdk_refuses_a_condensation_under_minimum_progress",
    ),
    llm_summary(
        "the summary is written by the condenser's LLM with summarizing_prompt.j2 (USER_CONTEXT, TASK_TRACKING, "
        "COMPLETED, PENDING, CURRENT_STATE, CODE_STATE, TESTS, CHANGES, DEPS, VERSION_CONTROL_STATUS)",
        f"{OS}llm_summarizing_condenser.py:186-246; prompts/summarizing_prompt.j2",
    ),
    *harness_rules(
        f"{OS}llm_summarizing_condenser.py:51-54",
        f"{OS}llm_summarizing_condenser.py:117-154 (every view over a limit condenses)",
        "openhands-sdk agent/agent.py:788-800 (LLMContextWindowExceedError: a condensation request)",
        True,
    )[1:],
)

RULES_2026: dict[str, tuple[Rule, ...]] = {"cline": CLINE_RULES, "goose": GOOSE_RULES, "openhands-sdk": OPENHANDS_SDK_RULES}
