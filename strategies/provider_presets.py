"""Presets of the providers' own context management: Anthropic's context editing and server
compaction, OpenAI's Responses compaction (issue 47, need 4).

Each is built from the provider's documentation (the page and the date it was read are in its
`source` and its rules, `compactlab.strategies.provider_rules`); what the documentation does not say
is a stated assumption, in the preset's `choices` and, where it changes a figure, its description.
Their options are their strategies' settings; the one that sets the trigger moves the trigger
(`Preset.trigger_setting`). The provider counts the prompt exactly, so each counts with a real
tokenizer, `tiktoken-o200k` (OpenAI's; Claude's is not public, and the `calibrated` line is fitted for
Claude and DeepSeek sessions only, while the presets run on every session). Their thresholds are absolute, sized for the model's real window: under a
simulated window they are scaled, keeping their share of the window, as Claude Code's reserve is.
"""

from __future__ import annotations

import math

from compactlab.contract import Harness, Trigger
from compactlab.strategies.presets import Preset

CONTEXT_EDITING_PAGE = "platform.claude.com/docs/en/build-with-claude/context-editing"
COMPACTION_PAGE = "platform.claude.com/docs/en/build-with-claude/compaction"
OPENAI_PAGE = "developers.openai.com/api/docs/guides/compaction"
READ = "read 2026-12-02"
# The API compacts (or clears) whenever its trigger fires: no guard against a weak compaction, no
# compact-and-retry of an over-window request (the API refuses it), nothing kept apart from the
# history it drops, and the exact count of the request, not a usage-anchored estimate.
PROVIDER_HARNESS = Harness(pin_task=False, loop_guard=False, emergency=False, pieces="estimator")


def anthropic_context_editing() -> Preset:
    """Anthropic context editing (clear_tool_uses_20250919): past 100,000 input tokens, the results of all but the
    newest 3 tool uses are replaced by a placeholder, in place; excluded tools kept, inputs kept unless
    clear_tool_inputs."""
    from compactlab.strategies.context_editing import ClearToolUses

    return Preset(
        "anthropic-context-editing",
        ClearToolUses(),
        Trigger(fraction=math.inf),
        "tiktoken-o200k",
        f"{CONTEXT_EDITING_PAGE} ({READ}): tool result clearing (clear_tool_uses_20250919: trigger 100,000 input "
        "tokens, keep 3 tool uses, clear_at_least, exclude_tools, clear_tool_inputs; oldest results cleared first, "
        "replaced by placeholder text; applied server-side before the prompt reaches Claude; clearing invalidates the "
        "cached prefix); anthropics/anthropic-sdk-python beta_clear_tool_uses_20250919_edit_param.py ('Context will "
        "only be modified if at least this many tokens can be removed')",
        anthropic_context_editing.__doc__ or "",
        choices="the placeholder text (not documented): '[cleared]'; a cleared call's parameters: '{}'; the tool uses "
        "`keep` counts: all of them, excluded tools' too (the documentation does not say); the trigger under a "
        "simulated window: scaled by simulated ÷ the model's real window",
        harness=PROVIDER_HARNESS,
        trigger_setting="trigger_tokens",
    )


def anthropic_compaction() -> Preset:
    """Anthropic server compaction (compact_20260112): past 150,000 input tokens (at least 50,000), a summary in a
    compaction block replaces every message before it; the system prompt stays."""
    from compactlab.strategies.server_compaction import AnthropicCompaction

    return Preset(
        "anthropic-compaction",
        AnthropicCompaction(keep_recent_tokens=0, track_files=False, append_last_request=False),
        Trigger(fraction=math.inf),
        "tiktoken-o200k",
        f"{COMPACTION_PAGE} ({READ}): how compaction works (input tokens over the trigger; a summary; a compaction "
        "block; on later requests the API drops all message blocks before it), trigger (default 150,000, minimum "
        "50,000), instructions, pause_after_compaction; anthropics/anthropic-sdk-python "
        "beta_compact_20260112_edit_param.py ('Defaults to 150000 input tokens')",
        anthropic_compaction.__doc__ or "",
        choices="the summary prompt (the stored documentation gives none): summary.j2, a user's `instructions` as a "
        "template of their own (setting `template`); what a client re-appends after pause_after_compaction: "
        "keep_recent_tokens (0: nothing, the API's behaviour without pausing); the trigger under a simulated window: "
        "scaled by simulated ÷ the model's real window",
        harness=PROVIDER_HARNESS,
        trigger_setting="trigger_tokens",
    )


def openai_compaction() -> Preset:
    """OpenAI Responses compaction (context_management, compact_threshold): past the threshold (200,000 assumed: no
    default documented), an opaque compaction item replaces every item before it; the item's size is assumed: the
    run summarizer's text within 4,096 tokens (OpenAI documents no size)."""
    from compactlab.strategies.server_compaction import OPENAI_ITEM_TOKENS, OpenAICompaction

    return Preset(
        "openai-compaction",
        OpenAICompaction(
            keep_recent_tokens=0, max_summary_tokens=OPENAI_ITEM_TOKENS, track_files=False, append_last_request=False
        ),
        Trigger(fraction=math.inf),
        "tiktoken-o200k",
        f"{OPENAI_PAGE} ({READ}): server-side compaction (context_management with compact_threshold; when the rendered "
        "token count crosses it the server compacts; the response includes the encrypted compaction item, opaque, "
        "'using fewer tokens'; items before the most recent compaction item can be dropped)",
        openai_compaction.__doc__ or "",
        choices="compact_threshold (no default documented): 200,000, the public examples' value; the compaction item's "
        f"size (not documented): the run summarizer's text within {OPENAI_ITEM_TOKENS:,} tokens (max_summary_tokens), "
        "its content (opaque): that text; the trigger under a simulated window: scaled by simulated ÷ the model's real "
        "window",
        harness=PROVIDER_HARNESS,
        trigger_setting="compact_threshold",
    )
