"""Iterative merge: update the earlier summary with the newly dropped span (seed 004, Factory).

When the oldest message after the system prompt is a summary written by an earlier compaction,
only the messages dropped since then are summarized, and the result is merged into that summary
through the update prompt, instead of summarizing everything from scratch. This is Factory's
"anchored summary" idea ("summarize only the newly dropped span and merge it into the persisted
summary") and pi's update prompt.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from compactlab.strategies.base import setting
from compactlab.strategies.summarize import Summarize


@dataclass(frozen=True)
class IterativeMerge(Summarize):
    """Summarize the newly dropped span and merge it into the earlier summary."""

    name: ClassVar[str] = "iterative-merge"
    source: ClassVar[str] = (
        "seed 004 (Opal); Factory.ai 'Compressing Context' (anchored summaries); pi UPDATE_SUMMARIZATION_PROMPT"
    )
    iterative: bool = setting(True, "update the earlier summary instead of summarizing from scratch")


def one_prompt_merge(template: str, **settings: object) -> IterativeMerge:
    """An iterative merge whose first summary and its updates are written with one prompt (`template`,
    which gets the earlier summary as `previous_summary`), a split turn folded into that one summary,
    a 4,096-token summary and no last request appended: opencode's and Cline's summary stage."""
    return IterativeMerge(
        template=template,
        update_template=template,
        split_turn_summary=False,
        max_summary_tokens=4_096,
        append_last_request=False,
        **settings,  # type: ignore[arg-type]
    )
