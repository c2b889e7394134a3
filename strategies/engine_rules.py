"""The engine presets' rules (pi, opencode, codex, claude-code, openhands, jetbrains-masking; gemini-cli's
in `compactlab.strategies.gemini_rules`), each against the engine's own code (the commits are in
`compactlab.strategies.rule`)."""

from __future__ import annotations

from compactlab.strategies.gemini_rules import GEMINI_CLI
from compactlab.strategies.rule import ANCHOR, CHECKS, PRESET, REATTACH, Rule, appends_nothing, harness_rules, llm_summary

PI_ORACLE = "tests/strategies/test_pi_oracle.py::"
OC_ORACLE = "tests/strategies/test_opencode_oracle.py::"

PI = "pi-mono packages/coding-agent/src/core/"
OC = "opencode packages/opencode/src/session/"
CX = "codex codex-rs/core/src/"
OH = "OpenHands openhands/memory/condenser/impl/llm_summarizing_condenser.py"

ENGINES: dict[str, tuple[Rule, ...]] = {
    "pi": (
        Rule(
            "compact when contextTokens > contextWindow − reserveTokens (16,384), whatever the window",
            f"{PI}compaction/compaction.ts:116, 212-215",
            "Trigger(reserve_tokens=16,384), kept as written at a simulated window (harness window 'as-is')",
            test=f"{PI_ORACLE}test_the_trigger_fires_at_pis_check_points_as_pis_should_compact",
        ),
        Rule(
            "contextTokens = the last reply's totalTokens (input + output + cache read + cache write)",
            f"{PI}compaction/compaction.ts:128-130; agent-session.ts:1813-1815",
            "hybrid anchor: last prompt + its output",
            test=f"{PRESET}test_seed_000_and_seed_004_anchor_on_the_prompt_alone",
        ),
        Rule(
            "on the threshold path the last reply's usage alone; estimateContextTokens (usage + estimateTokens of the "
            "messages since) only for an errored reply",
            f"{PI}agent-session.ts:1794-1815; compaction.ts:179-209",
            "hybrid-pi: the last usage plus pi's estimateTokens of the messages since, which before the next call is the "
            "user's new prompt",
            "the replay asks before the call, once the prompt is appended, where pi asks before appending it; measured "
            "on the bundled pi sessions: the same decision at 136 of 136 of pi's check points, at 200,000 and at 64,000 "
            "(python -m tests.scripts.oracles.pi_figures)",
            test=f"{PI_ORACLE}test_the_trigger_fires_at_pis_check_points_as_pis_should_compact",
        ),
        Rule(
            "checked only between prompt runs (at agent_end and before the next prompt), never between the calls of a tool loop",
            f"{PI}agent-session.ts:498-509, 947-951, 1742",
            "harness checks 'run-start': the trigger asked only before a call that starts a prompt run (the first, "
            "and one after a user prompt), the overflow path at every call; on the bundled pi sessions the first "
            "firing at pi's call and the same calls compacted in closed loop, at 200,000 and 64,000 "
            "(python -m tests.scripts.oracles.pi_figures)",
            test=f"{PI_ORACLE}test_the_preset_checks_only_where_pi_checks_between_prompt_runs",
        ),
        Rule(
            "a message's tokens: ceil(chars / 4) of its text, thinking, tool names and JSON.stringify(arguments); "
            "4,800 chars per image of a tool result, none for a user's",
            f"{PI}compaction/compaction.ts:225-282",
            "estimator hybrid-pi, its pieces counted by pi-chars/4 (compactlab.tokens.pi_estimate)",
            test=f"{PI_ORACLE}test_the_preset_counts_every_message_as_pis_estimate_tokens",
        ),
        Rule(
            "keep the newest 20,000 tokens (keepRecentTokens)",
            f"{PI}compaction/compaction.ts:117, 397-412",
            "keep_recent_tokens 20,000",
            test=f"{PI_ORACLE}test_the_kept_tail_is_pis_size_by_pis_estimate",
        ),
        Rule(
            "cut at the first user or assistant message at or after the point; a split turn when it is not a user message",
            f"{PI}compaction/compaction.ts:376-438",
            "split_turn_min_messages 1 (any message starts the kept tail)",
            test=f"{PI_ORACLE}test_the_preset_keeps_the_first_message_pi_keeps_at_every_point",
        ),
        Rule(
            "no cut point at or after the point (the budget crossed inside the newest tool results): everything kept",
            f"{PI}compaction/compaction.ts:393-412 (cutIndex stays cutPoints[0])",
            "keep_all_without_cut",
            test=f"{PI_ORACLE}test_when_the_budget_is_crossed_inside_the_newest_tool_results_pi_keeps_everything",
        ),
        Rule(
            'a split turn with nothing before it: "No prior history." as the history part, the previous summary dropped',
            f"{PI}compaction/compaction.ts:718-735",
            "the turn prefix's summary alone; with a previous summary, that summary updated",
            "not fixed yet: the oracle calls no model, so no figure measures the summaries' text (issue 42)",
            test=f"{PI_ORACLE}test_a_split_turn_with_nothing_before_it_gets_the_turn_summary_alone_a_listed_deviation",
        ),
        Rule(
            "summary output budget 0.8 × reserveTokens",
            f"{PI}compaction/compaction.ts:529",
            "max_summary_tokens 13,107",
            test=f"{ANCHOR}test_pi_keeps_20000_recent_tokens_and_updates_the_summary",
        ),
        Rule(
            "the previous summary updated (UPDATE_SUMMARIZATION_PROMPT)",
            f"{PI}compaction/compaction.ts:655-659",
            "IterativeMerge",
            test=f"{ANCHOR}test_pi_keeps_20000_recent_tokens_and_updates_the_summary",
        ),
        Rule(
            "only messages after the previous compaction entry are summarized: its kept tail is dropped",
            f"{PI}compaction/compaction.ts:601-645 (boundaryStart = prevCompactionIndex + 1)",
            "drop_kept_tail: the context records the tail the last compaction kept (Context.kept_tail)",
            test=f"{CHECKS}test_pi_drops_the_tail_it_kept_at_its_previous_compaction",
        ),
        Rule(
            "read and modified files from the read/write/edit tools appended",
            f"{PI}compaction/utils.ts:35-55; compaction.ts:762-763",
            "track_files: file tools and shell commands of every recorded agent",
            "the recordings come from agents whose tools are not pi's three; by pi's names alone no file would be listed",
            test=f"{PRESET}test_presets_append_only_what_their_sources_append",
        ),
        appends_nothing(
            "nothing else appended to the summary", f"{PI}compaction/compaction.ts:709-775", "append_last_request off"
        ),
        llm_summary("summary by the session's model", f"{PI}compaction/compaction.ts:520-560"),
        *harness_rules(
            f"{PI}compaction/compaction.ts:601-680 (no message kept apart)",
            f"{PI}agent-session.ts:1757-1766 (stale usage skipped, no size guard)",
            f"{PI}agent-session.ts:1769-1790 (one compact-and-retry)",
            True,
        ),
    ),
    "opencode": (
        Rule(
            "compact when total tokens ≥ usable = window − min(output limit, 32,000) − min(20,000, that)",
            f"{OC}overflow.ts:8-19 (:18 context − maxOutputTokens − reserved), 31-33",
            "Trigger(reserve_tokens=52,000, reserve_inclusive: at window − reserve itself) (a 32,000-token output limit); "
            "measured against opencode's own isOverflow after every reply of the bundled pi and Codex sessions "
            "(python -m tests.scripts.oracles.opencode_trigger): the same decision at 1,513 of 1,513 replies at "
            "the real window and at a simulated 64,000 (scaled)",
            test=f"{OC_ORACLE}test_the_trigger_fires_at_opencodes_usable_itself",
        ),
        Rule(
            "at a model of a smaller window the reserve is the same 52,000 (usable 12,000 at 64,000 with a 32,000 output limit)",
            f"{OC}overflow.ts:8-19",
            "the reserve scaled by simulated ÷ the model's real window (harness window 'scaled')",
            "compactlab's window table has no output limits, and a 64,000-token model's own (often 8,000 or less) is "
            "unknown; 52,000 of 64,000 would compact at 12,000 tokens; measured at a simulated 64,000: the preset "
            "(scaled) and opencode as written decide alike at 1,237 of 1,513 replies, opencode firing at the other 276 "
            "(python -m tests.scripts.oracles.opencode_trigger)",
            test=f"{OC_ORACLE}test_opencode_keeps_its_reserve_at_a_simulated_window_which_the_preset_scales",
        ),
        Rule(
            "models with an input limit reserve 20,000 of it; an output limit under 32,000 reserves twice itself",
            f"{OC}overflow.ts:14-19",
            "the 52,000 reserve for every model",
            "compactlab's window table has neither input nor output limits (gpt-5: 272k input; DeepSeek: 8k output); "
            "opencode's versions differ here and the preset follows the commit read: anomalyco/opencode 08f74b9 "
            "overflow.ts:14-19 reserves the output limit alone without an input limit (32,000), 0d51724 overflow.ts:14-19 "
            "the 20,000 buffer alone",
            test=f"{CHECKS}test_opencode_reserves_one_reserve_for_every_model",
        ),
        Rule(
            "total = input + output + cache read + cache write of the last reply",
            f"{OC}overflow.ts:31-32",
            "hybrid anchor: last prompt + its output",
            test=f"{PRESET}test_seed_000_and_seed_004_anchor_on_the_prompt_alone",
        ),
        Rule(
            "checked after each reply with that reply's usage alone (the step's finish; before the next step, the last "
            "finished reply's): the tool results and the prompt since are not counted",
            f"{OC}processor.ts (finish-step: isOverflow(usage.tokens)), prompt.ts (lastFinished.tokens)",
            "estimator usage: the last prompt + its output, the messages since not added (chars/4 with no usage)",
            test=f"{OC_ORACLE}test_the_trigger_counts_the_last_replys_usage_alone",
        ),
        Rule(
            "pruning: completed tool outputs beyond the newest 40,000 tokens, if more than 20,000; 'skill' protected",
            f"{OC}compaction.ts prune(), PRUNE_PROTECT, PRUNE_MINIMUM",
            "Prune stage (prune_errors off: an errored result is skipped; keep_small off: an output no larger than the "
            "placeholder is cleared too)",
            test="tests/strategies/test_opencode_oracle.py::test_the_preset_erases_the_outputs_opencode_erases",
        ),
        Rule(
            "each output sized Token.estimate: Math.round(length / 4)",
            f"{OC}compaction.ts prune() (Token.estimate(part.state.output)), util/token.ts",
            "each output sized by the preset's estimator (its message alone, less an empty message)",
            "the Prune stage counts with the run's estimator; measured against opencode's own prune on the bundled pi "
            "and Codex sessions (python -m tests.scripts.oracles.opencode tests/data/oracles/opencode SESSION ...): "
            "the same outputs erased at 756 of 799 acting points, the others one or two outputs apart at the 40,000 or "
            "20,000 boundary",
            test="tests/strategies/test_opencode_oracle.py::test_the_preset_agrees_with_opencode_at_most_acting_points",
        ),
        Rule(
            "pruning skips the last 2 user turns: a single-prompt session is never pruned",
            f"{OC}compaction.ts prune() (if (turns < 2) continue)",
            "Prune(steps_as_turns=False)",
            test=f"{PRESET}test_opencode_never_prunes_a_single_prompt_session",
        ),
        Rule(
            "pruning runs after a prompt loop, when compaction.prune is set (off by default)",
            f"{OC}compaction.ts prune() (if (!cfg.compaction?.prune) return)",
            "pruning before each summary",
            "the preset shows opencode with pruning on; the replay has no loop end to prune at but its compactions",
            test=f"{CHECKS}test_presets_change_nothing_between_compactions",
        ),
        Rule(
            "on overflow the summary always runs",
            f"{OC}compaction.ts processCompaction()",
            "Pipeline(stop_when_under_target=False)",
            test=f"{PRESET}test_opencode_always_summarizes",
        ),
        Rule(
            "tail budget clamp(usable × 0.25, 2,000, 15,000)",
            f"{OC}compaction.ts preserveRecentBudget(), MIN/MAX_PRESERVE_RECENT_TOKENS",
            "clamp(window × 0.25, 2,000, 15,000)",
            "the strategy sees the window, not the trigger's reserve: a quarter of the window, not of the usable part",
            test=f"{PRESET}test_opencode_keeps_whole_turns_within_the_budget",
        ),
        Rule(
            "whole turns newest first while they fit the budget, then the turn that does not fit split where its rest fits",
            f"{OC}compaction.ts select(), splitTurn()",
            "tail_rule 'within'",
            test=f"{PRESET}test_opencode_keeps_whole_turns_within_the_budget",
        ),
        Rule(
            "no tail fits, or the whole history does: everything is summarized",
            f"{OC}compaction.ts select() (!keep || keep.start === 0)",
            "tail_rule 'within' summarizes the whole history",
            test=f"{PRESET}test_opencode_summarizes_everything_when_no_tail_fits",
        ),
        Rule(
            "the head (before the tail) summarized in one summary, a split turn's part included",
            f"{OC}compaction.ts processCompaction() (selected.head)",
            "split_turn_summary off",
            test=f"{PRESET}test_opencode_keeps_whole_turns_within_the_budget",
        ),
        Rule(
            "the previous summary given to the new one",
            f"{OC}compaction.ts processCompaction() (previousSummary)",
            "IterativeMerge with opencode.j2",
            test=f"{CHECKS}test_opencode_and_openhands_give_the_previous_summary_to_the_new_one",
        ),
        appends_nothing(
            "nothing appended to the summary", f"{OC}compaction.ts processCompaction()", "track_files and append_last_request off"
        ),
        llm_summary("summary by the compaction agent's model", f"{OC}compaction.ts processCompaction()"),
        *harness_rules(
            f"{OC}compaction.ts turns(), select() (every user message a turn)",
            f"{OC}compaction.ts processCompaction() (no size guard)",
            f"{OC}compaction.ts processCompaction(overflow: replays the last user message)",
            True,
        ),
    ),
    "codex": (
        Rule(
            "auto compaction at (context_window × 9) / 10",
            "codex codex-rs/protocol/src/openai_models.rs ModelInfo::auto_compact_token_limit",
            "Trigger(fraction=0.9)",
            "whether the window recorded is the raw or the 95% effective one is open: at the effective one it fires at 85.5%. "
            "On 31 real remote compactions of Codex 0.142-0.146 (gpt-5.5, gpt-5.6-sol; logged window 258,400, the 95% of "
            "272,000) 0.9 of the logged window fires within ±2 calls of 20; the code's rule read at the raw window "
            "(0.9 × 272,000 = 244,800) of 9; the best fraction in sample (0.915) of 24 but of 21 leave one session out, "
            "so the documented rule stays",
            test=f"{CHECKS}test_thresholds_fire_at_their_share_of_the_window",
        ),
        Rule(
            "tokens in the context window of the last usage: total minus reasoning output",
            f"{CX}codex.rs run_turn (total_usage_tokens), protocol TokenUsage::tokens_in_context_window",
            "hybrid anchor: last prompt + its output",
            "the recorded output tokens include the reasoning ones, which the anchor does not take apart",
            test=f"{PRESET}test_seed_000_and_seed_004_anchor_on_the_prompt_alone",
        ),
        Rule(
            "the whole history summarized (prompt.md)",
            f"{CX}compact.rs run_compact_task_inner",
            "Summarize(keep_recent_tokens=0, template codex.j2)",
            test=f"{ANCHOR}test_codex_keeps_the_newest_user_messages_then_the_summary_alone",
        ),
        Rule(
            "new history = initial context + newest user messages up to 20,000 tokens + summary",
            f"{CX}compact.rs build_compacted_history_with_limit, COMPACT_USER_MESSAGE_MAX_TOKENS",
            "keep_user_message_tokens 20,000",
            test=f"{ANCHOR}test_codex_keeps_the_newest_user_messages_then_the_summary_alone",
        ),
        Rule(
            "the user message over the budget truncated, the walk stops",
            f"{CX}compact.rs build_compacted_history_with_limit (truncate_text)",
            "cut around '…N tokens truncated…'",
            test=f"{ANCHOR}test_codex_cuts_the_user_message_that_crosses_the_budget",
        ),
        Rule(
            "earlier summaries are not user messages to keep",
            f"{CX}compact.rs collect_user_messages, is_summary_message",
            "summaries are not turn starts",
            test=f"{PRESET}test_codex_keeps_no_earlier_summary_among_the_user_messages",
        ),
        Rule(
            "remote compaction for OpenAI providers",
            f"{CX}compact.rs should_use_remote_compact_task",
            "the local summary",
            "the provider's own compaction endpoint cannot be replayed offline",
            test=f"{CHECKS}test_codex_compacts_locally_without_ghost_snapshots",
        ),
        Rule(
            "ghost snapshots carried over",
            f"{CX}compact.rs run_compact_task_inner",
            "none",
            "ghost snapshots are not in the recordings",
            test=f"{CHECKS}test_codex_compacts_locally_without_ghost_snapshots",
        ),
        llm_summary("summary by the session's model", f"{CX}compact.rs drain_to_completed"),
        Rule(
            "the task is one of the user messages kept while they fit",
            f"{CX}compact.rs collect_user_messages",
            "harness pin_task off",
            test=f"{PRESET}test_presets_do_not_pin_the_task",
        ),
        Rule(
            "one auto compaction per turn: still over the limit after it, the turn stops with an error",
            f"{CX}codex.rs run_task (auto_compact_recently_attempted)",
            "harness loop_guard on",
            test=f"{PRESET}test_without_the_loop_guard_the_trigger_is_obeyed_again",
        ),
        Rule(
            "an over-window request is not compacted: ContextWindowExceeded marks the window full and ends the turn",
            f"{CX}codex.rs run_sampling_request (set_total_tokens_full)",
            "harness emergency off: the trigger compacts before the next call",
            test=f"{PRESET}test_presets_set_the_emergency_path_as_their_sources",
        ),
    ),
    "claude-code": (
        Rule(
            "compact when the context exceeds the window − the reserve of the session's Claude Code version: the output "
            "limit + 13,000 in 2.0.x (77,000 for claude-opus-4-5 up to 2.0.57, 45,000 from 2.0.74), about 33,000 in 2.1.x "
            "from 2.1.53",
            "/context readings ('Autocompact buffer') and real compactions: datasets/m-claude, "
            "../shared/transcripts/pai-claude, the development set (python -m tests.scripts.trigger_choice); "
            "anthropics/claude-code#12004, #23409",
            "Trigger(reserve_by_version: 2.0.31-2.0.57 45,000 and 77,000 for claude-opus-4-5; 2.0.74-2.1.19 45,000; "
            "2.1.53-2.1.167 33,000-36,000); a version no range covers (no evidence) or a session without one keeps "
            "45,000 (77,000 for claude-opus-4-5); scaled by simulated ÷ real window",
            test=f"{ANCHOR}test_claude_code_replaces_the_whole_history_with_its_summary_past_its_output_limit_and_buffer",
        ),
        Rule(
            "a model Claude Code does not know gets its default window, 200,000 (GLM, MiMo, Qwen)",
            "tale-project/tale#3398 (Claude Code 2.1.173 'assumes 200,000 tokens' for a model it does not know); the GLM "
            "compactions of the development set",
            "context_windows claude → 200,000, unknown_window 200,000",
            test="tests/results/test_claude_code_versions.py::test_a_model_claude_code_does_not_know_gets_200000",
        ),
        Rule(
            "a nine-section summary replaces the history",
            "real compact summaries in datasets/m-claude; public prompt copies",
            "Summarize(keep_recent_tokens=0, template claude_code.j2)",
            test=f"{ANCHOR}test_claude_code_replaces_the_whole_history_with_its_summary_past_its_output_limit_and_buffer",
        ),
        Rule(
            "the user's messages are a section of the summary, not kept verbatim",
            "real compact summaries in datasets/m-claude ('All user messages')",
            "harness pin_task off",
            test=f"{PRESET}test_presets_do_not_pin_the_task",
        ),
        Rule(
            "recent files, the todo list and the plan re-attached after the summary",
            "real compactions in datasets/m-claude",
            "WithReattachments",
            "re-attached files are their last content in the session, not the disk's (strategies/reattach.py)",
            test=f"{REATTACH}test_the_claude_code_preset_reattaches_after_its_summary",
        ),
        appends_nothing(
            "nothing appended to the summary but the re-attachments",
            "real compact summaries in datasets/m-claude",
            "track_files and append_last_request off",
        ),
        Rule(
            "microcompaction of old tool results",
            "Claude Code docs",
            "not modelled",
            "closed source: its rule is not public",
            test=f"{CHECKS}test_presets_change_nothing_between_compactions",
        ),
        Rule(
            "guard and overflow path",
            "closed source",
            "the harness defaults (loop guard, emergency compaction)",
            "closed source: what Claude Code does is not public, so the harness's defaults stay",
            test=f"{CHECKS}test_claude_code_keeps_the_harness_guard_and_overflow_path",
        ),
        llm_summary("summary by the session's model", "Claude Code docs"),
    ),
    "openhands": (
        Rule(
            "condense when the view holds more than max_size (100) events",
            f"{OH}:28, 160-161",
            "Trigger(fraction=0.8)",
            "the recordings have no OpenHands events; the trigger is modelled in tokens",
            test=f"{CHECKS}test_thresholds_fire_at_their_share_of_the_window",
        ),
        Rule(
            "keep the first keep_first (1) events",
            f"{OH}:29, 53",
            "instructions kept; the task is not pinned",
            "keep_first keeps OpenHands' first event, its system prompt: here the instructions (system messages) are kept",
            f"{ANCHOR}test_openhands_keeps_the_first_event_and_merges_the_earlier_summary",
        ),
        Rule(
            "keep the newest max_size // 2 − keep_first − 1 events",
            f"{OH}:54-57",
            "a quarter of the window kept (keep_recent_tokens None)",
            "events are not messages; modelled in tokens",
            test=f"{CHECKS}test_openhands_keeps_a_quarter_of_the_window",
        ),
        Rule(
            "the previous summary and the forgotten events summarized together",
            f"{OH}:59-70, 122-136",
            "IterativeMerge with openhands.j2",
            test=f"{ANCHOR}test_openhands_keeps_the_first_event_and_merges_the_earlier_summary",
        ),
        Rule(
            "the STATE/TESTS/CHANGES/DEPS/INTENT prompt",
            f"{OH}:72-121",
            "template openhands.j2",
            test=f"{CHECKS}test_presets_ask_with_their_sources_prompt",
        ),
        appends_nothing(
            "the summary inserted after the kept head, nothing appended",
            f"{OH}:150-157 (summary_offset = keep_first)",
            "track_files and append_last_request off",
        ),
        llm_summary("summary by the condenser's LLM", f"{OH}:140-146"),
        *harness_rules(
            f"{OH}:53 (only the first event kept)",
            f"{OH}:160-161 (no size guard)",
            "OpenHands openhands/controller/agent_controller.py:970-972 (CondensationRequestAction on ContextWindowExceededError)",
            True,
        ),
    ),
    "jetbrains-masking": (
        Rule(
            "the last 10 observations kept, older ones replaced by a placeholder",
            "arXiv 2508.21433 section 3; SWE-agent sweagent/agent/history_processors.py LastNObservations",
            "ObservationMasking(keep_last=10)",
            test=f"{ANCHOR}test_jetbrains_masking_keeps_the_last_10_observations",
        ),
        Rule(
            "applied to the prompt at every step",
            "SWE-agent history_processors (run on every query)",
            "masking when the context reaches 0.8 of the window",
            "masking at every call would count every call as a compaction; at 0.8 it acts where it matters",
            test=f"{CHECKS}test_presets_change_nothing_between_compactions",
        ),
        *harness_rules(
            "SWE-agent history_processors (only observations change)",
            "SWE-agent history_processors (no guard)",
            "SWE-agent: a context-window error ends the run",
            False,
        ),
    ),
    "gemini-cli": GEMINI_CLI,
}
