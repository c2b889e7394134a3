"""The OpenHands SDK's default condenser (OpenHands/software-agent-sdk, openhands-sdk/openhands/sdk/
context/condenser/llm_summarizing_condenser.py): over the token limit, the events after the first few
are forgotten until the view is within half the limit, the forgotten ones (an earlier summary among
them) summarized into one; a condensation that would forget under a tenth of the view is refused."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from compactlab.contract import CompactionRequest, CompactionResult, Context
from compactlab.sessions.messages import is_summary, pinned_head
from compactlab.strategies.base import setting, strategy_setting
from compactlab.strategies.summarize import NOTE_FALLBACK, Summarize, TailRule, choose_cut


@dataclass(frozen=True)
class SdkCondenser(Summarize):
    """Forget the events after the head until the rest fits half the window; summarize them with any earlier summary."""

    name: ClassVar[str] = "openhands-sdk-condenser"
    source: ClassVar[str] = "OpenHands/software-agent-sdk llm_summarizing_condenser.py (LLMSummarizingCondenser)"

    keep_share: float = setting(0.5, "the view is cut to this share of the token limit (max_tokens // 2)")
    minimum_progress: float = setting(0.1, "a condensation that forgets fewer than this share of the view's events is refused")
    tail_rule: TailRule = setting(
        "within", "the longest tail within the budget, from a cut that splits no tool call from its result"
    )
    template: str = setting("openhands_sdk.j2", "prompt template of the summary (the SDK's summarizing_prompt.j2)")
    track_files: bool = setting(False, "the SDK appends no file lists")
    append_last_request: bool = setting(False, "the SDK appends no last request")
    split_turn_summary: bool = setting(False, "the forgotten events are summarized in one request, a split turn's part too")
    fallback: str = strategy_setting(
        "", "the SDK keeps the view when the summary fails (NoCondensationAvailableException)", besides=("", NOTE_FALLBACK)
    )

    def compact(self, context: Context, request: CompactionRequest) -> CompactionResult:
        messages = context.messages
        head = pinned_head(messages, request.pin_task)
        # _get_forgotten_events: tokens_to_reduce = total − max_tokens // 2, the first events counted in the total.
        keep = max(int(self.keep_share * request.window) - request.count_tokens(list(messages[:head])), 0)
        start = head + (head < len(messages) and is_summary(messages[head]))
        history = messages[start:]
        cut, _ = choose_cut(history, keep, request.count_tokens, 1, "within")
        if cut == 0:  # all of it fits (nothing to forget), or no tail does (all of it is forgotten)
            cut = 0 if request.count_tokens(list(history)) <= keep else len(history)
        forgotten = cut + (start - head)
        if forgotten < self.minimum_progress * len(messages):
            return CompactionResult(context, 0, note=f"forgets {forgotten} of {len(messages)} events: under minimum_progress")
        return Summarize.compact(replace(self, keep_recent_tokens=keep), context, request)
