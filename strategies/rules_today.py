"""The rules of the presets of engines that changed since their first preset (issue 48): Codex at
e06dd0e5 and Claude Code 2.1, each the older version's rules (`compactlab.strategies.engine_rules`,
kept under `codex@0100b103` and `claude-code@2026-06-07`) with the rules that changed replaced."""

from __future__ import annotations

from compactlab.strategies.engine_rules import ENGINES
from compactlab.strategies.rule import CHECKS, PRESET, Rule, closing_rules

CX = "openai/codex e06dd0e5 codex-rs/core/src/"
CODEX_TODAY = "tests/strategies/test_presets_today.py::"
CC_CHANGELOG = "anthropics/claude-code CHANGELOG.md (to 2.1.240)"


def _replaced(name: str, first_words: dict[str, Rule | None]) -> tuple[Rule, ...]:
    """The older version's rules, each whose text starts with a key replaced by its value (None: dropped)."""
    rules = []
    for rule in ENGINES[name]:
        key = next((k for k in first_words if rule.rule.startswith(k)), None)
        replacement = rule if key is None else first_words[key]
        if replacement is not None:
            rules.append(replacement)
    return tuple(rules)


CODEX = (
    *_replaced(
        "codex",
        {
            "auto compaction at": Rule(
                "auto compaction at (context_window × 9) / 10; a configured model_auto_compact_token_limit only lowers it",
                "openai/codex e06dd0e5 codex-rs/protocol/src/openai_models.rs ModelInfo::auto_compact_token_limit "
                "(min(config limit, 0.9 × window))",
                "Trigger(fraction=0.9); a user's lower limit is Trigger(absolute=...) beside it",
                "whether the window recorded is the raw or the 95% effective one is open (the older version's rule says "
                "what 31 real remote compactions show): 0.9 of the logged window is kept",
                test=f"{CHECKS}test_thresholds_fire_at_their_share_of_the_window",
            ),
            "new history = initial context": Rule(
                "pre-turn (the new prompt pending): users up to 20,000 tokens, the summary; the next turn re-injects the "
                "initial context, then the prompt",
                f"{CX}compact.rs InitialContextInjection::DoNotInject, run_compact_task_inner; codex.rs run_pre_sampling_compact",
                "CodexCompaction: the new prompt neither summarized nor kept among the users; instructions and the "
                "prompt after the summary",
                test=f"{CODEX_TODAY}test_codex_before_a_turn_puts_the_initial_context_and_the_prompt_after_the_summary",
            ),
            "remote compaction for OpenAI": Rule(
                "remote compaction (the provider's /responses/compact, an encrypted summary) for every OpenAI provider, "
                "no feature flag",
                f"{CX}compact.rs should_use_remote_compact_task (provider.is_openai())",
                "the local summary",
                "the provider's own compaction endpoint cannot be replayed offline; its encrypted summary cannot be read "
                "(the recorded remote compactions are read as Codex's estimate of them: the codex-rollout format)",
                test=f"{CHECKS}test_codex_compacts_locally_without_ghost_snapshots",
            ),
        },
    ),
    Rule(
        "mid-turn (between the calls of a tool loop): the initial context inserted just above the last real user "
        "message (else above the summary), the summary last",
        f"{CX}compact.rs InitialContextInjection::BeforeLastUserMessage, insert_initial_context_before_last_real_user_or_summary",
        "CodexCompaction: the phase read from the context (its last message a user's prompt: pre-turn)",
        test=f"{CODEX_TODAY}test_codex_within_a_turn_puts_the_initial_context_before_the_last_user_message",
    ),
    Rule(
        "on ContextWindowExceeded while compacting, the oldest history item is removed and the summary asked again",
        f"{CX}compact.rs run_compact_task_inner (history.remove_first_item)",
        "the summarizer's request holds the whole history",
        "the replay's summarizer (the extractive one offline, the run's LLM otherwise) reports no context length "
        "error to retry on",
        test=f"{CODEX_TODAY}test_codex_summarizes_the_whole_history",
    ),
)

CLAUDE_CODE = (
    *_replaced(
        "claude-code",
        {
            "compact when the context exceeds": Rule(
                "compact when the context exceeds the window − the reserve: min(output limit, 20,000) + 13,000 = 33,000 "
                "in 2.1.x; the output limit + 13,000 before (45,000; 77,000 for claude-opus-4-5 up to 2.0.57)",
                "anthropics/claude-code#23409, #12004; the real automatic compactions of the shared and development "
                "data (python -m tests.scripts.claude_code_generations)",
                "Trigger(reserve_by_version: up to 2.0.57 45,000 and 77,000 for claude-opus-4-5; from 2.1.19 33,000; "
                "2.0.58 on 45,000); a session without a version: 33,000; scaled by simulated ÷ real window",
                "the version it changed at is not documented: 2.1.19, the first version whose compactions show it "
                "(chosen leaving one repository out: 2.1.19 in 10 of 11 folds); 33,000 is the documented reserve, "
                "not fitted: within ±2 calls of 43 of 51 real automatic compactions out of sample (84%), where the "
                "per-version table of claude-code@2026-06-07 reaches 26 (51%)",
                test=f"{CODEX_TODAY}test_claude_code_2_1_reserves_33000_from_2_1_19",
            ),
            "guard and overflow path": Rule(
                "after 3 failed compactions in a row, automatic compaction stops (circuit breaker, 2.1.76); a context "
                "that refills right after 3 compactions stops it too (thrash detection, 2.1.89)",
                CC_CHANGELOG,
                "the engine's failure breaker (3 failures in a row) and its loop guard (a compaction that removed "
                "too little stops the threshold until one works)",
                "thrash detection's own rule (how soon is 'right after') is not public: the loop guard stands in",
                test=f"{CHECKS}test_claude_code_keeps_the_harness_guard_and_overflow_path",
            ),
        },
    ),
    Rule(
        "tool results over 50,000 characters persisted to disk, the model shown a preview and the path (2.1.51)",
        CC_CHANGELOG,
        "as recorded: a session of 2.1.51 or later holds what the model was shown",
        "a session recorded before 2.1.51 keeps its whole results: the preview's size and form are not public",
        test=f"{CHECKS}test_presets_change_nothing_between_compactions",
    ),
)

OC2 = "anomalyco/opencode 031a4a9c packages/core/src/session/compaction.ts"

OPENCODE = (
    Rule(
        "compact when the estimate ≥ min(input limit − buffer, context − max(min(output limit, 32,000), buffer)), buffer 20,000",
        f"{OC2} required() (OUTPUT_TOKEN_MAX 32,000, DEFAULT_BUFFER 20,000)",
        "Trigger(reserve_tokens=32,000, reserve_inclusive) (an output limit of 32,000 or more, no input limit); "
        "scaled by simulated ÷ real window",
        "compactlab's window table has neither input nor output limits: a model with an input limit (gpt-5: 272,000) "
        "or an output limit under 32,000 reserves otherwise in opencode (input − 20,000; max(output, 20,000))",
        test=f"{CODEX_TODAY}test_opencode_v2_compacts_at_the_window_less_32000",
    ),
    Rule(
        "the estimate: the last reply's input + cache read + cache write + output + reasoning, plus chars/4 of the "
        "parts since (the tool results not covered by its usage)",
        f"{OC2} estimateTokens(), estimatePart(); util/token.ts Token.estimate",
        "estimator hybrid: the last prompt + its output, plus chars/4 of the messages since",
        "images and PDFs are 1,500 and 2,000 tokens in opencode, chars/4 of their text here",
        test=f"{PRESET}test_seed_000_and_seed_004_anchor_on_the_prompt_alone",
    ),
    Rule(
        "the newest entries kept while their serialized text fits keep.tokens (DEFAULT_KEEP_TOKENS 15,000; the docs say "
        "15,000 too), the newest always; then back to a user message",
        f"{OC2} findTailStart()",
        "OpencodeCheckpoint(keep_recent_tokens=15,000): the same walk over the same serialized lines, each counted "
        "by the preset's estimator (chars/4, as Token.estimate)",
        test=f"{CODEX_TODAY}test_opencode_v2_keeps_the_newest_15000_tokens_serialized_from_a_user_message",
    ),
    Rule(
        "everything fits: only the latest exchange kept, from the latest user message; no user message but the first: "
        "everything summarized",
        f"{OC2} findTailStart() (latestUser; previousSummary?.recent)",
        "OpencodeCheckpoint's tail_start",
        test=f"{CODEX_TODAY}test_opencode_v2_keeps_only_the_latest_exchange_when_everything_fits",
    ),
    Rule(
        "the kept tail serialized into the checkpoint: [User] / [Assistant] / [Assistant tool call] / [Tool result] "
        "lines, each tool result cut to 2,000 characters with '[truncated]'",
        f"{OC2} serializeRecentMessage(), truncateToolOutput(), TOOL_OUTPUT_MAX_CHARS",
        "OpencodeCheckpoint: one summary message, the summary then <recent-context> with the serialized tail",
        "the checkpoint's wrapper tags as compactlab writes them (<recent-context>); opencode's own wrapper "
        "(<conversation-checkpoint>, <summary>) is added when the messages are sent, which the stored code does not show",
        test=f"{CODEX_TODAY}test_opencode_v2_keeps_the_newest_15000_tokens_serialized_from_a_user_message",
    ),
    Rule(
        "a later compaction updates the existing checkpoint (its summary and its serialized tail) with the history since",
        f"{OC2} buildPrompt(update), execute() (history.messages holds the completed checkpoint)",
        "iterative: the earlier checkpoint's text as the previous summary, opencode_v2.j2's update part",
        test=f"{CODEX_TODAY}test_opencode_v2_updates_its_earlier_checkpoint",
    ),
    Rule(
        "the summary template: Objective, Requirements, Decisions, Work State (Completed, Active, Blocked), Next Move, "
        "Relevant Files, Additional Context; a reminder request when no section came back",
        f"{OC2} SUMMARY_TEMPLATE, SUMMARY_RULES, hasSummarySection()",
        "template opencode_v2.j2 (the sections and rules, in substance); no reminder request",
        "the offline stand-in always answers; with the run's LLM a reply without the sections is kept as it is",
        test=f"{CHECKS}test_presets_ask_with_their_sources_prompt",
    ),
    Rule(
        "no pruning of old tool outputs between compactions (compaction.prune is declared, never read, in the core)",
        f"{OC2} Settings (auto, buffer, tokens only)",
        "no Prune stage",
        test=f"{CHECKS}test_presets_change_nothing_between_compactions",
    ),
    # Nothing appended but the serialized tail (a part of the checkpoint); the summary asked without tools.
    *closing_rules(
        f"{OC2} execute() (prepared.request, no tools)",
        f"{OC2} findTailStart() (the first message is summarized like any other)",
        f"{OC2} required() (only: not right after a completed checkpoint)",
        "anomalyco/opencode packages/core/src/session (a context-overflow failure compacts, then the request is retried)",
        True,
    ),
)

RULES_TODAY: dict[str, tuple[Rule, ...]] = {"codex": CODEX, "claude-code": CLAUDE_CODE, "opencode": OPENCODE}
