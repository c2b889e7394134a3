"""Handoff: the whole history replaced by a goal-directed extraction, nothing of it kept (issue 48).

Amp removed compaction for "handoff" (ampcode.com news, "Handoff"): instead of summarizing a
thread to continue it, the agent extracts what a new thread needs for a stated goal and starts
that thread from the extraction alone. As a baseline it answers: what is left when no tail is
kept at all and the summary is aimed at the next step rather than at the whole past. In a replay
the goal is the user's latest request, which the extraction ends with.

Offline the extractive summarizer writes the extraction (its goal, files, errors, commands and
recent decisions sections); `summarizer = "llm"` asks the run's LLM with `handoff.j2` (the
goal, the decisions, the files, the next step). Amp's own prompt is not public: the template is
compactlab's. The harness's policies are the engine's defaults, as for every plain strategy (the
task statement is pinned: run it as `handoff` with `pin_task = false` for a bare handoff).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from compactlab.sessions.messages import is_summary, is_user_turn_start
from compactlab.sessions.model import Message, TextPart
from compactlab.strategies.base import setting
from compactlab.strategies.extractive_summarizer import NOT_A_REQUEST
from compactlab.strategies.summarize import Summarize

GOAL = "Goal of this thread (the user's latest request):"


@dataclass(frozen=True)
class Handoff(Summarize):
    """Replace the whole history with a goal-directed extraction (the goal, the decisions, the files, the next step); keep no tail."""

    name: ClassVar[str] = "handoff"
    source: ClassVar[str] = (
        "Amp's handoff (ampcode.com news, 'Handoff'): compaction replaced by a goal-directed extraction into a new thread"
    )

    keep_recent_tokens: int | None = setting(0, "tokens of recent history kept verbatim: none, a handoff starts a new thread")
    template: str = setting("handoff.j2", "prompt template of the extraction (name in strategies/prompts or a path)")
    append_last_request: bool = setting(False, "(the goal line replaces seed 001's 'Last request from user was: ...')")
    state_goal: bool = setting(True, "end the extraction with the goal it is directed at: the user's latest request")

    def _decorate(
        self, text: str, dropped: Sequence[Message], previous_text: str | None, messages: Sequence[Message], template: str
    ) -> str:
        text = super()._decorate(text, dropped, previous_text, messages, template).split(f"\n\n{GOAL}")[0]
        # The newest request since the previous extraction; in a tool loop that has none, the goal the
        # previous extraction served (each extraction names one goal: an earlier line is dropped above).
        since = next((i + 1 for i in range(len(messages) - 1, -1, -1) if is_summary(messages[i])), 0)
        earlier = previous_text.partition(f"\n\n{GOAL} ")[2] if previous_text else ""
        goal = goal_of(messages[since:]) or earlier or goal_of(messages)
        return f"{text}\n\n{GOAL} {goal}" if self.state_goal and goal else text


def goal_of(messages: Sequence[Message]) -> str | None:
    """The user's latest request: the newest user turn's text, past the messages agents insert on the
    user's behalf (Claude Code's command echoes and caveats, as the extractive summarizer skips them)."""
    for message in reversed(messages):
        if is_user_turn_start(message):
            text = "\n".join(p.text for p in message.parts if isinstance(p, TextPart)).strip()
            if text and not text.startswith(NOT_A_REQUEST):
                return text
    return None
