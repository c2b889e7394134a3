"""The seed presets' rules (seed-000 … seed-004), each against its document in ../shared/seeds/."""

from __future__ import annotations

from compactlab.strategies.rule import PRESET, PROMPT_ANCHOR, SEED, Rule, appends_nothing, harness_rules, llm_summary

SEEDS: dict[str, tuple[Rule, ...]] = {
    "seed-000": (
        Rule("checked before every LLM call", "Trigger Strategy (When)", "the engine asks before each recorded call"),
        Rule(
            "estimate = lastPromptTokens + estimate(new messages)",
            "Trigger Strategy (How)",
            PROMPT_ANCHOR,
            test=f"{PRESET}test_seed_000_and_seed_004_anchor_on_the_prompt_alone",
        ),
        Rule(
            "new messages counted as len / 3.5",
            "Trigger Strategy",
            "estimator hybrid-chars/3.5",
            test=f"{SEED}test_seed_000_counts_new_messages_as_len_over_3_5",
        ),
        Rule(
            "first call: the whole session estimated locally",
            "Trigger Strategy (First call)",
            "no provider count: the local len/3.5 estimate",
            test=f"{SEED}test_seed_000_counts_new_messages_as_len_over_3_5",
        ),
        Rule(
            "compact when estimate > window × 0.8",
            "Trigger Strategy; Compact Threshold",
            "Trigger(fraction=0.8)",
            "fires at ≥ 0.8 × window, not >: one token earlier",
        ),
        Rule(
            "model → window table, unknown models 128,000",
            "Token Threshold > Context Window Sizes",
            "the table and its 128k fallback at real windows (--window 0)",
            "a run's simulated window (--window, 64,000 by default) replaces every model's window, the table's too",
            f"{SEED}test_seed_000_window_table_and_128k_fallback",
        ),
        Rule(
            "the new session is the summary message alone",
            "Compact Flow 3-4; Post-Compact Session Structure",
            "Archive(Summarize(keep_recent_tokens=0)), task not pinned",
            test=f"{SEED}test_seed_000_new_session_is_the_summary_alone_with_the_archive",
        ),
        Rule(
            "the summary is a system message",
            "Post-Compact Session Structure",
            "a user message",
            "every compactlab summary is a user message (Claude Code's and Codex's are too); the text is the same",
        ),
        Rule(
            "the old session is archived, referenced from the summary",
            "Compact Flow 2; File Layout",
            "context.archives, 'archive #N' in the summary",
            test=f"{SEED}test_seed_000_new_session_is_the_summary_alone_with_the_archive",
        ),
        Rule(
            "session_archive_read reads the last archive back",
            "Archive Retrieval",
            "the archive is kept, never read",
            "reading it back is the agent's decision, which an open-loop replay does not make",
        ),
        llm_summary("summary by an independent LLM call, the agent's model", "Summary Generation"),
        Rule("lastPromptTokens = 0 after compact", "Compact Flow 4", "the engine drops the provider count after a compaction"),
        *harness_rules(
            "Compact Flow 4 (sessionMessages = [summary message])", "Compact Flow (no guard)", "no overflow path", False
        ),
    ),
    "seed-001": (
        Rule(
            "compact when ContextTokens >= 200,000",
            "2 Trigger (DefaultCompactThreshold)",
            "Trigger(absolute=200,000), scaled by simulated ÷ real window",
            test=f"{SEED}test_seed_001_compacts_at_200k_tokens_whatever_the_window",
        ),
        Rule(
            "ContextTokens = prompt + completion tokens of the last call",
            "2 Trigger (Token Tracking)",
            "hybrid anchor: last prompt + its output",
        ),
        Rule(
            "messages since the last call",
            "2 Trigger (Token Tracking)",
            "added as chars/4",
            "the seed counts the last call's usage alone, which before a call would miss the new tool results",
        ),
        Rule(
            "history = [system prompt, summary + last request]",
            "3 Compaction Process 5; 5 Post-Compaction State",
            "Summarize(keep_recent_tokens=0), task not pinned",
            test=f"{SEED}test_seed_001_history_is_system_and_summary_with_the_last_request",
        ),
        Rule(
            "'Last request from user was: ' + the last user message appended",
            "3 Compaction Process 4",
            "append_last_request",
            test=f"{SEED}test_seed_001_history_is_system_and_summary_with_the_last_request",
        ),
        Rule("the 7-section summarization prompt", "4 Summarization Prompt", "template seed_001.j2"),
        Rule("missing tool results filled with 'Tool no response'", "6 Message Cleaning", "fill_missing_results"),
        Rule(
            "'Understood.' appended after trailing tool messages",
            "6 Message Cleaning (ensureAssistantAfterTools)",
            "not added",
            "it keeps the provider's message order valid; the summarizer here reads a transcript, not a chat",
        ),
        Rule(
            "tokens recounted by a 16-token API probe",
            "7 Token Recounting",
            "the replay's measured size",
            "no API offline; the replay's own measure of the compacted prompt stands in",
        ),
        llm_summary("summary by the agent's LLM", "3 Compaction Process 3-4"),
        *harness_rules("5 Post-Compaction State", "9 Integration with Agent Loop (no guard)", "no overflow path", False),
    ),
    "seed-002": (
        Rule(
            "compact when input + cache.read + output > the usable limit",
            "Compaction (How it works 1)",
            "Trigger(fraction=1.0) on the hybrid anchor (prompt + output)",
            "fires at ≥ the window, not >: one token earlier",
        ),
        Rule(
            "a summary replaces the old history",
            "Compaction (How it works 3-5)",
            "Summarize(keep_recent_tokens=40,000), then pruning",
            test=f"{SEED}test_seed_002_summarizes_then_prunes_beyond_the_newest_40k",
        ),
        Rule(
            "pruning protects the newest 40,000 tokens",
            "Pruning 1; PRUNE_PROTECT",
            "Prune(protect_tokens=40,000)",
            test=f"{SEED}test_seed_002_summarizes_then_prunes_beyond_the_newest_40k",
        ),
        Rule("prune only when more than 20,000 tokens are prunable", "Pruning 2; PRUNE_MINIMUM", "Prune(minimum_tokens=20,000)"),
        Rule(
            "one part's estimate capped at 50,000",
            "Configuration (MAX_TOKENS_PER_PART); Token Estimation",
            "Prune(max_part_tokens=50,000)",
            test=f"{SEED}test_seed_002_caps_one_outputs_estimate",
        ),
        Rule("'skill' tool protected", "Protected Tools", "protected_tools ('skill',)"),
        Rule(
            "parts whose type starts with 'tool-' protected",
            "Protected Tools",
            "tools whose name starts with 'tool-'",
            "taken literally every AI SDK tool part (type 'tool-NAME') is protected and pruning never acts",
            f"{SEED}test_seed_002_protects_tools_by_the_tool_prefix",
        ),
        Rule(
            "parts marked compactedAt skipped, the scan goes on",
            "Protected Tools; Already Pruned",
            "Prune(stop_at_pruned=False)",
            test=f"{SEED}test_seed_002_skips_parts_marked_pruned_and_goes_on",
        ),
        Rule(
            "only completed tool parts prunable",
            "Prunable States",
            "every recorded tool result",
            "the recordings have no part states: every result is a completed one",
        ),
        Rule(
            "pruning runs at every agent session start",
            "Pruning (When it triggers)",
            "pruning runs when it compacts",
            "a replayed session starts once; its later 'session starts' are not in the recordings",
        ),
        Rule("tokens = ceil(len / 4)", "Token Estimation", "estimator hybrid (chars/4 locally)"),
        llm_summary("summary by an LLM", "Compaction (How it works 3)"),
        *harness_rules("Compaction (Future requests use the summary)", "Visual Flow (no guard)", "no overflow path", False),
    ),
    "seed-003": (
        Rule("checked before each LLM call", "How It Works (Normal Case 1)", "the engine asks before each recorded call"),
        Rule(
            "WARNING at 75% of max_context_tokens",
            "Warning Level",
            "Trigger(warning=0.75)",
            test=f"{SEED}test_seed_003_critical_compacts_harder_than_warning",
        ),
        Rule(
            "CRITICAL at 90%, target 60% of max",
            "Critical Level",
            "Trigger(critical=0.9, target=0.6)",
            test=f"{SEED}test_seed_003_critical_compacts_harder_than_warning",
        ),
        Rule(
            "max_context_tokens 8,000 by default",
            "Configuration Schema",
            "the model's window",
            "8,000 is a configuration default for small local models; the presets compare designs at one window",
        ),
        Rule(
            "priority order: system, latest user, latest assistant, last 5 tool messages, older exchanges, tool outputs",
            "Message Preservation Strategy",
            "PriorityPrune",
            test=f"{SEED}test_seed_003_keeps_the_priorities_it_always_keeps",
        ),
        Rule(
            "older exchanges fill the budget, tool outputs last",
            "Message Preservation Strategy 5-6",
            "PriorityPrune fills newest first",
            test=f"{SEED}test_seed_003_fills_the_budget_with_older_exchanges_tool_outputs_last",
        ),
        Rule(
            "SummaryGenerator summarizes what was removed",
            "How It Works (Warning Level 2)",
            "a summary of the removed span",
            test=f"{SEED}test_seed_003_summarizes_what_it_removed_and_runs_in_a_pipeline",
        ),
        Rule("words × 0.75 + CJK × 0.5 + special × 0.25, + 50", "Token Estimation Algorithm", "estimator words"),
        llm_summary("summary by the agent's LLM client", "Integration Points 1"),
        *harness_rules("Message Preservation Strategy (no task rule)", "How It Works (no guard)", "no overflow path", False),
    ),
    "seed-004": (
        Rule(
            "checked at the start of each turn",
            "Auto-Compaction (Trigger)",
            "before each recorded call",
            "a replay cannot tell a turn's first call from its others before the call; checking every call fires at the same size",
        ),
        Rule("compact at ≥ 80% of the window", "Auto-Compaction (Trigger)", "Trigger(fraction=0.8)"),
        Rule(
            "estimate = last prompt_tokens + ~4 chars/token for newer messages",
            "Auto-Compaction (Estimation 1)",
            PROMPT_ANCHOR,
            test=f"{PRESET}test_seed_000_and_seed_004_anchor_on_the_prompt_alone",
        ),
        Rule("keep_recent_tokens = window / 4", "Auto-Compaction (Compaction flow 2)", "keep_recent_tokens None (window/4)"),
        Rule(
            "cut at the nearest user boundary at or after the point",
            "Compaction Algorithm 1",
            "tail_rule 'user-after'",
            test=f"{PRESET}test_seed_004_cuts_at_the_user_message_after_the_point",
        ),
        Rule("a split turn of 5+ messages gets a turn-prefix summary", "Compaction Algorithm 2", "split_turn_min_messages 5"),
        Rule(
            "structured summary + <read-files>/<modified-files>",
            "Compaction Algorithm 3 (:summarize)",
            "template summary.j2 with file lists",
        ),
        Rule(
            "no LLM: '[Compacted N messages: ...]'",
            "Compaction Algorithm 3 (:truncate)",
            "fallback 'note'",
            test=f"{SEED}test_seed_004_falls_back_to_a_count_of_the_messages",
        ),
        Rule("an earlier summary is updated, not re-summarized", "Compaction Algorithm 3 (Iterative updates)", "IterativeMerge"),
        Rule("cumulative file ops, read-then-modified promoted", "Compaction Algorithm 5", "track_files (cumulative)"),
        appends_nothing("nothing else appended to the summary", "Compaction Algorithm 4", "append_last_request off"),
        Rule(
            "overflow: emergency compaction keeps window / 5, force, retry",
            "Overflow Recovery 2-3",
            "emergency_keep_share 0.2, force_on_overflow",
            test=f"{SEED}test_seed_004_emergency_keeps_a_fifth_of_the_window",
        ),
        Rule(
            "force: all but the last 2 messages",
            "Compaction Algorithm 1",
            "force_on_overflow",
            test=f"{SEED}test_seed_004_forced_emergency_keeps_the_last_two_messages",
        ),
        Rule("window from LLMDB, 128k fallback", "Context Window Sizes", "compactlab's table, 128k for unknown models"),
        Rule(
            "/compact with keep_recent",
            "Manual Compaction",
            "not replayed",
            "a user's command: a replay compacts only when the trigger fires or the prompt overflows",
        ),
        llm_summary("summary by the provider's LLM", "Compaction Algorithm 3"),
        *harness_rules(
            "Compaction Algorithm 4 (one summary replaces them)", "Auto-Compaction (no guard)", "Overflow Recovery", True
        ),
    ),
}
