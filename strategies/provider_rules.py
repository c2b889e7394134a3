"""The provider presets' rules (anthropic-context-editing, anthropic-compaction, openai-compaction), each
against the provider's documentation as stored and read on 2026-12-02 (the pages state no date of
their own):
- CE: platform.claude.com/docs/en/build-with-claude/context-editing (and its docs.claude.com copy);
- AC: platform.claude.com/docs/en/build-with-claude/compaction;
- OC: developers.openai.com/api/docs/guides/compaction;
- the request types of anthropics/anthropic-sdk-python at 887ee67f (src/anthropic/types/beta/), whose
  docstrings are the API reference's.
Thinking clearing (`clear_thinking_20251015`) is no preset: see `THINKING`.
"""

from __future__ import annotations

from compactlab.strategies.rule import Rule, llm_summary

PROVIDER = "tests/strategies/test_provider_presets.py::"
CE = "platform.claude.com/docs/en/build-with-claude/context-editing (read 2026-12-02)"
AC = "platform.claude.com/docs/en/build-with-claude/compaction (read 2026-12-02)"
OC = "developers.openai.com/api/docs/guides/compaction (read 2026-12-02)"
SDK = "anthropics/anthropic-sdk-python 887ee67f src/anthropic/types/beta/"
SCALED = (
    "the threshold is absolute, sized for the model's real window (Claude's 200,000, GPT-5's 400,000): a run's simulated window "
    "(64,000 for the bundled data) would never reach it, so it is scaled by simulated ÷ real, as Claude Code's reserve is"
)
SERVER_SIDE = (
    "the API edits the full history the client sends at every request past the trigger, so from the first clearing on "
    "only the newest tool uses stay intact at every call; the replay's context keeps its edits and clears again when "
    "the edited context reaches the trigger (fewer, larger clearings): an edit at every call would count every call "
    "as a compaction, as jetbrains-masking's rule says"
)


def _no_harness(rule: str, source: str, does: str) -> Rule:
    return Rule(rule, source, does, test=f"{PROVIDER}test_the_provider_presets_have_no_guard_no_retry_and_pin_nothing")


ANTHROPIC_CONTEXT_EDITING = (
    Rule(
        "clearing begins once the prompt exceeds the trigger, 100,000 input tokens by default",
        f"{CE}: configuration options (trigger); {SDK}beta_clear_tool_uses_20250919_edit_param.py (trigger)",
        "Trigger(absolute=trigger_tokens) with trigger_tokens 100,000, a setting",
        test=f"{PROVIDER}test_context_editing_fires_at_100000_and_not_below",
    ),
    Rule(
        "the threshold is the same number of tokens whatever the model's window",
        f"{CE}: configuration options (trigger)",
        "scaled by simulated ÷ real window under a simulated window (harness window 'scaled')",
        SCALED,
        test=f"{PROVIDER}test_context_editing_fires_at_100000_and_not_below",
    ),
    Rule(
        "the provider counts the request's input tokens exactly",
        f"{CE}: trigger (input_tokens)",
        "estimator tiktoken-o200k",
        "Claude's tokenizer is not public, and the calibrated line is fitted for Claude and DeepSeek sessions only while "
        "the presets run on every session (GPT's too): a real tokenizer, OpenAI's, stands for the provider's count",
        test=f"{PROVIDER}test_the_provider_presets_count_with_the_estimator_nearest_the_providers",
    ),
    Rule(
        "the oldest tool results are cleared first; the newest 3 tool uses (keep) stay",
        f"{CE}: how it works, configuration options (keep); {SDK}beta_clear_tool_uses_20250919_edit_param.py (keep)",
        "ClearToolUses(keep=3): every result but the newest keep replaced, counted by position",
        test=f"{PROVIDER}test_context_editing_keeps_exactly_the_newest_tool_uses",
    ),
    Rule(
        "a cleared result is replaced by placeholder text telling Claude it was removed",
        f"{CE}: how it works",
        "placeholder '[cleared]' (the text is not documented: assumed), a setting",
        test=f"{PROVIDER}test_context_editing_keeps_exactly_the_newest_tool_uses",
    ),
    Rule(
        "tools named in exclude_tools are never cleared",
        f"{CE}: configuration options (exclude_tools); {SDK}beta_clear_tool_uses_20250919_edit_param.py",
        "exclude_tools, a setting; excluded uses count among the newest keep (the documentation does not say)",
        test=f"{PROVIDER}test_context_editing_keeps_the_excluded_tools",
    ),
    Rule(
        "only tool results are cleared unless clear_tool_inputs: then the tool calls' parameters too",
        f"{CE}: how it works, configuration options (clear_tool_inputs)",
        "clear_tool_inputs, a setting (off): a cleared call's arguments become '{}'",
        test=f"{PROVIDER}test_context_editing_clears_inputs_only_when_asked",
    ),
    Rule(
        "context is modified only if at least clear_at_least tokens can be removed",
        f"{CE}: configuration options (clear_at_least); {SDK}beta_clear_tool_uses_20250919_edit_param.py",
        "clear_at_least, a setting (0): an edit clearing less leaves the context as it is",
        test=f"{PROVIDER}test_context_editing_respects_clear_at_least",
    ),
    Rule(
        "the edit is applied server-side to every request past the trigger; the client keeps the full history",
        f"{CE}: context editing happens server-side",
        "an in-place edit of the replayed context when the trigger fires",
        SERVER_SIDE,
        test=f"{PROVIDER}test_context_editing_edits_in_place_and_breaks_the_cache_at_the_first_cleared_result",
    ),
    Rule(
        "clearing invalidates the cached prompt prefix (from the first cleared content on)",
        f"{CE}: context editing and prompt caching",
        "no message removed, only parts changed; the replay's prefix_tokens then keeps only the head the agent marks "
        "cached (the warm part), as Anthropic reads a prefix only up to a breakpoint before the change "
        "(compactlab.replay.prompt_cache)",
        test=f"{PROVIDER}test_context_editing_edits_in_place_and_breaks_the_cache_at_the_first_cleared_result",
    ),
    _no_harness(
        "no guard, no retry, nothing pinned: the API clears whenever the trigger fires and refuses an over-window prompt",
        f"{CE}: how it works (the trigger is the only condition)",
        "harness loop_guard, emergency and pin_task off",
    ),
)

ANTHROPIC_COMPACTION = (
    Rule(
        "compaction when input tokens exceed the trigger, 150,000 by default",
        f"{AC}: how compaction works, trigger; {SDK}beta_compact_20260112_edit_param.py ('Defaults to 150000 input tokens')",
        "Trigger(absolute=trigger_tokens) with trigger_tokens 150,000, a setting",
        test=f"{PROVIDER}test_server_compaction_fires_at_150000_and_not_below",
    ),
    Rule(
        "the trigger is at least 50,000 tokens",
        f"{AC}: trigger (minimum 50,000)",
        "a trigger_tokens below 50,000 is refused with an error naming the setting",
        test=f"{PROVIDER}test_a_server_compaction_trigger_below_50000_is_refused_naming_the_setting",
    ),
    Rule(
        "the threshold is the same number of tokens whatever the model's window",
        f"{AC}: trigger",
        "scaled by simulated ÷ real window under a simulated window (harness window 'scaled')",
        SCALED,
        test=f"{PROVIDER}test_server_compaction_fires_at_150000_and_not_below",
    ),
    Rule(
        "the provider counts the request's input tokens exactly",
        f"{AC}: how compaction works (input tokens)",
        "estimator tiktoken-o200k",
        "Claude's tokenizer is not public, and the calibrated line is fitted for Claude and DeepSeek sessions only while "
        "the presets run on every session (GPT's too): a real tokenizer, OpenAI's, stands for the provider's count",
        test=f"{PROVIDER}test_the_provider_presets_count_with_the_estimator_nearest_the_providers",
    ),
    Rule(
        "a summary of the conversation in a compaction block; later requests drop every message block before it",
        f"{AC}: how compaction works",
        "AnthropicCompaction (Summarize, keep_recent_tokens 0): every message but the system prompt replaced by the summary",
        test=f"{PROVIDER}test_server_compaction_drops_everything_before_its_block_and_keeps_the_system_prompt",
    ),
    Rule(
        "the system prompt is not a message block: it stays",
        f"{AC}: how compaction works (message blocks dropped)",
        "instructions (system messages) kept before the summary",
        test=f"{PROVIDER}test_server_compaction_drops_everything_before_its_block_and_keeps_the_system_prompt",
    ),
    Rule(
        "custom instructions for the summary (instructions)",
        f"{AC}: instructions; {SDK}beta_compact_20260112_edit_param.py ('Additional instructions for summarization')",
        "setting template: a user's .j2 prompt holding them; the default prompt summary.j2",
        "the stored documentation gives no default summary prompt: compactlab's generic one stands in, and the offline "
        "stand-in summarizer reads no prompt at all",
        test=f"{PROVIDER}test_server_compaction_drops_everything_before_its_block_and_keeps_the_system_prompt",
    ),
    Rule(
        "pause_after_compaction: the response stops after the compaction block, and the client decides what follows it",
        f"{AC}: pause_after_compaction; {SDK}beta_compact_20260112_edit_param.py",
        "keep_recent_tokens (0): the recent history such a client re-appends after the block, a setting",
        test=f"{PROVIDER}test_a_paused_compaction_keeps_what_the_client_re_appends",
    ),
    llm_summary("the summary is written by the model, a sampling step billed in usage.iterations", f"{AC}: how compaction works"),
    _no_harness(
        "no guard, no retry, nothing pinned: the API compacts whenever the trigger fires",
        f"{AC}: how compaction works",
        "harness loop_guard, emergency and pin_task off",
    ),
)

OPENAI_COMPACTION = (
    Rule(
        "the server compacts when the rendered token count crosses compact_threshold",
        f"{OC}: server-side compaction",
        "Trigger(absolute=compact_threshold), a setting",
        test=f"{PROVIDER}test_openai_compaction_fires_at_its_threshold_and_not_below",
    ),
    Rule(
        "compact_threshold has no documented default",
        f"{OC}: server-side compaction (compact_threshold is set by the caller)",
        "compact_threshold 200,000 (assumed: the public examples' value, OpenRouter's compaction page)",
        test=f"{PROVIDER}test_openai_compaction_fires_at_its_threshold_and_not_below",
    ),
    Rule(
        "the threshold is the same number of tokens whatever the model's window",
        f"{OC}: server-side compaction",
        "scaled by simulated ÷ real window under a simulated window (harness window 'scaled')",
        SCALED,
        test=f"{PROVIDER}test_openai_compaction_fires_at_its_threshold_and_not_below",
    ),
    Rule(
        "the provider counts the rendered tokens exactly",
        f"{OC}: server-side compaction (rendered token count)",
        "estimator tiktoken-o200k (OpenAI's tokenizer; the rendering's framing as compactlab's)",
        test=f"{PROVIDER}test_the_provider_presets_count_with_the_estimator_nearest_the_providers",
    ),
    Rule(
        "the response includes an encrypted compaction item; the items before the most recent one can be dropped",
        f"{OC}: server-side compaction, latency tip",
        "OpenAICompaction (Summarize, keep_recent_tokens 0): every item but the instructions replaced by the item",
        test=f"{PROVIDER}test_openai_compaction_replaces_the_history_with_an_item_of_the_assumed_size",
    ),
    Rule(
        "the compaction item is opaque and carries prior state 'using fewer tokens': its size is not documented",
        f"{OC}: server-side compaction",
        "the item: the run summarizer's text within max_summary_tokens 4,096 (a setting), said assumed in the preset's "
        "description, which the report shows",
        "no size is documented and the item cannot be read: its content is the stand-in summary and its size that "
        "summary's, at most 4,096 tokens, an assumption",
        test=f"{PROVIDER}test_openai_compaction_replaces_the_history_with_an_item_of_the_assumed_size",
    ),
    llm_summary("the item is written by the server's model", f"{OC}: server-side compaction"),
    _no_harness(
        "no guard, no retry, nothing pinned: the server compacts whenever the threshold is crossed",
        f"{OC}: server-side compaction",
        "harness loop_guard, emergency and pin_task off",
    ),
)

PROVIDERS: dict[str, tuple[Rule, ...]] = {
    "anthropic-context-editing": ANTHROPIC_CONTEXT_EDITING,
    "anthropic-compaction": ANTHROPIC_COMPACTION,
    "openai-compaction": OPENAI_COMPACTION,
}

# Why thinking clearing is no preset: the sessions carry thinking (ThinkingPart), but the replay
# counts none of an Anthropic session's in its prompts (compactlab.tokens.framing: the API drops earlier
# turns' thinking, and the current tool loop's is a known undercount), so clearing it would change no
# prompt size and no figure. Modelling it needs the framing to count the thinking the API keeps (the
# current turn's, and with `keep` the newest turns'), and an edit at every request (it has no trigger).
THINKING = (
    "clear_thinking_20251015 not modelled: the replay counts no Anthropic thinking in its prompts "
    "(compactlab.tokens.framing), so clearing it would change no figure"
)
