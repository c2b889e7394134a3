"""Truncate: drop the oldest whole user turns until the context fits a token budget."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from compactlab.contract import CompactionRequest, CompactionResult, Context
from compactlab.sessions.messages import is_summary, pinned_head, pinned_in, safe_cut_points, turn_boundaries
from compactlab.strategies.base import setting


@dataclass(frozen=True)
class Truncate:
    """Keep the pinned messages and the most recent whole user turns that fit the budget.

    Pinned messages (system prompt, instructions, the task statement: `pinned_indexes`) are always
    kept verbatim, in front. The history is cut only where a turn starts and no kept tool result
    would lose its call, so a tool call and its result are never separated. A turn is a user turn;
    when the last user turn is the task's own (single-task agents), each step of it (an assistant
    message and the tool results that answer it) counts as a turn. The last turn is always kept
    whole, even when it alone exceeds the budget (the note says so). A summary message right after
    the pinned head is kept (`keep_summary`). Needs no LLM.
    """

    name = "truncate"
    source: ClassVar[str] = (
        "baseline sliding window over whole user turns (cf. OpenHands RecentEventsCondenser: keep the "
        "first events and the most recent ones); the 'last resort' stage of pipelines"
    )

    budget_tokens: int = setting(0, "token budget for the kept context; 0 = the engine's target (request.target_tokens)")
    keep_summary: bool = setting(True, "keep a summary message that directly follows the system prompt")

    def compact(self, context: Context, request: CompactionRequest) -> CompactionResult:
        messages = context.messages
        budget = self.budget_tokens or request.target_tokens
        head_end = pinned_head(messages, request.pin_task)
        if self.keep_summary and head_end < len(messages) and is_summary(messages[head_end]):
            head_end += 1
        head = messages[:head_end]

        def unchanged(note: str) -> CompactionResult:
            return CompactionResult(context=context, messages_removed=0, note=note)

        total = request.prompt_size(messages)
        if total <= budget:
            return unchanged(f"nothing to do: the context ({total:,} tokens) is within the budget ({budget:,})")
        safe = set(safe_cut_points(messages))
        # A cut at i keeps head + messages[i:]; i = head_end would drop nothing.
        boundaries = turn_boundaries(messages)
        cuts = [i for i in boundaries if i > head_end and i in safe]
        if not cuts:
            return unchanged("nothing to do: no earlier turn to drop (the last turn is kept whole)")
        # The first cut whose kept context fits. A later cut keeps a subset of what an earlier one
        # keeps (pinned messages are kept by every cut), so sizes only fall along `cuts`: a binary
        # search finds the cut the plain scan from the first one would (tested against that scan).
        low, high = 0, len(cuts) - 1
        while low < high:
            middle = (low + high) // 2
            if request.prompt_size(_kept(messages, head, head_end, cuts[middle], request.pin_task)) <= budget:
                high = middle
            else:
                low = middle + 1
        cut = cuts[low]
        moved = pinned_in(messages, head_end, cut, request.pin_task)
        kept = _kept(messages, head, head_end, cut, request.pin_task)
        size = request.prompt_size(kept)
        if size <= budget:
            note = (
                f"dropped {cut - head_end - len(moved)} messages before the turn at message {cut} ({size:,} of {budget:,} tokens)"
            )
        else:  # not even the last turn fits: keep it whole anyway
            last = "the last turn" if cut == boundaries[-1] else f"the turn at message {cut}"
            note = (
                f"dropped {cut - head_end - len(moved)} messages, over budget anyway: {last} ({size:,} tokens with "
                f"the kept head) exceeds the budget ({budget:,}) and is kept whole, never cut inside"
            )
        new = replace(context, messages=kept, known_usage=None)
        return CompactionResult(context=new, messages_removed=cut - head_end - len(moved), note=note)


def _kept(messages: tuple, head: tuple, head_end: int, cut: int, pin_task: bool) -> tuple:
    """What a cut at `cut` keeps: the head, the pinned messages before the cut, and the rest."""
    return head + pinned_in(messages, head_end, cut, pin_task) + messages[cut:]
