"""The gemini-cli preset's rules, each against Gemini CLI's own code (google-gemini/gemini-cli at
5411f113, 2026-08-21; its oracle is tests/data/oracles/gemini-cli): beside its strategy,
`compactlab.strategies.gemini`, as `compactlab.strategies.engine_rules` holds the other engines'."""

from __future__ import annotations

from compactlab.strategies.rule import Rule, harness_rules, llm_summary

GC = "gemini-cli packages/core/src/"  # google-gemini/gemini-cli at 5411f113 (2026-08-21)
GEMINI_TEST = "tests/strategies/test_gemini_cli_oracle.py::"

GEMINI_CLI: tuple[Rule, ...] = (
    Rule(
        "compress when the last prompt's token count reaches 0.5 of tokenLimit(model)",
        f"{GC}context/chatCompressionService.ts:41, 268-285",
        "Trigger(fraction=0.5)",
        test=f"{GEMINI_TEST}test_the_trigger_agrees_with_gemini_at_the_real_window",
    ),
    Rule(
        "tokenLimit: 1,048,576 for every model (Gemma 4: 256,000)",
        f"{GC}core/tokenLimits.ts:20-38",
        "context_windows gemini → 1,048,576, unknown_window 1,048,576",
        test=f"{GEMINI_TEST}test_the_trigger_agrees_with_gemini_at_the_real_window",
    ),
    Rule(
        "the count compared is the last reply's promptTokenCount alone",
        f"{GC}core/geminiChat.ts:1575-1578; context/chatCompressionService.ts:268",
        "hybrid, harness anchor_output off: the last prompt plus chars/4 of the reply and the tool results since",
        "compactlab's hybrid measure always adds the messages since the last call; a measure of the last prompt alone "
        "is not one of its estimators (and past the recorded agent's own compaction it sizes the uncompacted "
        "history). Measured on the oracles at a 65,536 window: the trigger agrees at 712 of 735 checks, the preset "
        "firing where Gemini does not yet; at the real window at all 735",
        test=f"{GEMINI_TEST}test_the_trigger_fires_at_most_one_call_before_gemini_at_a_simulated_window",
    ),
    Rule(
        "compression and masking are checked before every model call (a tool loop's too), on the history before the "
        "request being sent",
        f"{GC}core/client.ts:614-699",
        "checked before each recorded call; the strategies leave the request being sent (after the last assistant "
        "message) out of both",
        test=f"{GEMINI_TEST}test_the_split_agrees_with_gemini_where_it_compresses",
    ),
    Rule(
        "tool outputs past the newest 50,000 function-response tokens cut to a head (20%) and tail (80%) of "
        "min(4 × (limit − last prompt), 40,000) characters before splitting",
        f"{GC}context/chatCompressionService.ts:52, 137-237, 287-292; utils/fileUtils.ts:704-724; config/config.ts:3794-3800",
        "GeminiCompression (response_budget 50,000)",
        test=f"{GEMINI_TEST}test_the_split_agrees_with_gemini_where_it_compresses",
    ),
    Rule(
        "split at the first user message (without function responses) at or after 70% of the history's "
        "JSON.stringify characters; all of it when the last content is a model reply without a call",
        f"{GC}context/chatCompressionService.ts:47, 60-100, 323-340",
        "GeminiCompression (preserve_fraction 0.3, Gemini's Content[] mapping: compactlab.strategies.gemini)",
        "not yet explained: at 3 of 663 compressing checks (pi-mono-before-compaction, calls 746-750) the preset "
        "splits 10 messages after Gemini; the other 660 agree",
        test=f"{GEMINI_TEST}test_the_split_agrees_with_gemini_where_it_compresses",
    ),
    Rule(
        "the compressed history: the <state_snapshot> as a user message, 'Got it. Thanks for the additional "
        "context!', the kept tail",
        f"{GC}context/chatCompressionService.ts:431-441",
        "GeminiCompression (system messages and instructions stay in front)",
        "Gemini's startChat sends its environment context again in front; compactlab keeps the session's",
        test=f"{GEMINI_TEST}test_the_compressed_history_is_the_snapshot_the_acknowledgement_and_the_kept_tail",
    ),
    Rule(
        "a compression whose new history counts more than the last prompt is dropped (COMPRESSION_FAILED_INFLATED_TOKEN_COUNT)",
        f"{GC}context/chatCompressionService.ts:443-471",
        "GeminiCompression raises CompactionFailed",
        test=f"{GEMINI_TEST}test_the_split_agrees_with_gemini_where_it_compresses",
    ),
    Rule(
        "after a failed (inflated) compression, later ones only truncate, never summarize again",
        f"{GC}core/client.ts:1216-1221; context/chatCompressionService.ts:294-321",
        "every compression summarizes",
        "a strategy keeps no state between compactions (the contract); the engine's failure breaker stands in",
        test=f"{GEMINI_TEST}test_a_failed_compression_is_not_remembered",
    ),
    Rule(
        "the <state_snapshot> system prompt; an earlier snapshot in the history integrated",
        f"{GC}prompts/snippets.ts:885-968; context/chatCompressionService.ts:353-370",
        "template gemini_cli.j2 (the prompt quoted, Apache-2.0)",
        test=f"{GEMINI_TEST}test_the_summary_prompt_is_geminis",
    ),
    Rule(
        "a second 'probe' call asks the model to check and improve its snapshot",
        f"{GC}context/chatCompressionService.ts:382-411",
        "one summarizer call",
        "the probe's answer is another summary of the same span: offline the extractive stand-in would write the same one",
        test=f"{GEMINI_TEST}test_one_summarizer_call_stands_for_the_summary_and_its_probe",
    ),
    llm_summary("summary by the session's model", f"{GC}context/chatCompressionService.ts:361-380"),
    Rule(
        "mask tool outputs past the newest 50,000 tool tokens once 30,000 are prunable; the newest content, "
        "masked outputs and activate_skill/ask_user/plan-mode outputs skipped",
        f"{GC}context/toolOutputMaskingService.ts:25-41, 68-154",
        "GeminiMasking (protection_tokens 50,000, min_prunable_tokens 30,000)",
        test=f"{GEMINI_TEST}test_masking_masks_the_outputs_gemini_masks",
    ),
    Rule(
        "a masked output: <tool_output_masked>, the first and last 250 characters of its pretty-printed response, "
        "the file it was saved to; kept only if smaller",
        f"{GC}context/toolOutputMaskingService.ts:192-243, 360-367",
        "GeminiMasking (the file path without Gemini's random suffix; no file written)",
        test=f"{GEMINI_TEST}test_masking_masks_the_outputs_gemini_masks",
    ),
    Rule(
        "the shell tool's masked preview keeps its Output's first and last 10 lines and its other sections",
        f"{GC}context/toolOutputMaskingService.ts:204-205, 292-358",
        "the general head-and-tail preview for every tool",
        "the recorded sessions' shells are not run_shell_command (Bash, exec_command, bash): Gemini too would use the "
        "general preview for them",
        test=f"{GEMINI_TEST}test_a_recorded_shell_output_gets_the_general_preview",
    ),
    Rule(
        "masking runs before every model call",
        f"{GC}core/client.ts:699, 1257-1265",
        "masking after compression, when the trigger fires (Pipeline compression → masking)",
        "the engine asks a strategy only when its trigger fires, and masking at every call would count every call as a "
        "compaction; between compactions the preset masks nothing (the oracle's masking, chained per call, is "
        "matched by GeminiMasking asked at every check)",
        test=f"{GEMINI_TEST}test_masking_masks_the_outputs_gemini_masks",
    ),
    *harness_rules(
        f"{GC}context/chatCompressionService.ts:328-329 (the whole head summarized)",
        f"{GC}core/client.ts:1216-1221 (a failed compression is remembered, none removing little)",
        f"{GC}core/client.ts:709-715 (ContextWindowWillOverflow: the request is not sent, nothing compressed)",
        False,
    ),
)
