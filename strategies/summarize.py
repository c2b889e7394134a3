"""Summarize everything before a cut, keep recent history verbatim (seeds 001 and 004, pi).

The cut keeps about `keep_recent_tokens` of the newest history (default: a quarter of the
window, seed 004) and falls on a user-turn boundary. When it would fall inside a long turn (at
least `split_turn_min_messages` messages), the turn is split instead of kept whole: the history
before the turn gets the usual summary and the first part of the turn gets a short turn-prefix
summary (seed 004, pi). Before summarizing, tool calls without results get placeholder results
(seed 001). The summary carries cumulative lists of files read and modified (seed 004), rendered
by the prompt template's `files` macro (a template without one drops them), and ends with the
user's last request verbatim (seed 001). If the summarizer fails, `fallback` (truncate,
seed 004) compacts instead; with no fallback the failure goes to the engine's breaker.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

from bench.model import Message
from strategies.base import (
    CompactionFailed,
    CompactionRequest,
    CompactionResult,
    Context,
    Summarizer,
    SummaryRequest,
    fallback_note,
    file_activity,
    FileActivity,
    is_summary,
    is_user_turn_start,
    last_user_request,
    leading_system,
    safe_cut_points,
    setting,
    summary_message,
    summary_text,
)
from strategies.prompting import Prompt, file_lists, fill_missing_results, prompt_set_hash, render, serialize

TURN_SEPARATOR = "\n\n---\n\n**Turn Context (split turn):**\n\n"  # pi's separator
_FILES = re.compile(r"<(read|modified)-files>\n(.*?)\n</\1-files>", re.DOTALL)


@dataclass(frozen=True)
class Summarize:
    """Summarize the history before a turn-boundary cut and keep the recent part verbatim."""

    name: ClassVar[str] = "summarize"
    source: ClassVar[str] = "seed 001 (Go middleware), seed 004 (Opal), pi (packages/coding-agent/src/core/compaction/compaction.ts)"

    keep_recent_tokens: int | None = setting(None, "tokens of recent history kept verbatim; None = a quarter of the window (seed 004)")
    summarizer: str = setting("extractive", "'extractive' (deterministic, no LLM) or 'llm' (the run's configured LLM summarizer)")
    template: str = setting("summary.j2", "prompt template for the history summary (name in strategies/prompts or a path)")
    update_template: str = setting("update.j2", "prompt template used to update an earlier summary (iterative merge)")
    turn_prefix_template: str = setting("turn_prefix.j2", "prompt template for the first part of a split turn")
    split_turn_min_messages: int = setting(5, "a turn this long is split rather than kept whole when the cut falls inside it")
    max_summary_tokens: int = setting(4096, "output budget of each summary call")
    iterative: bool = setting(False, "update the earlier summary with the dropped span instead of summarizing from scratch")
    track_files: bool = setting(True, "append cumulative <read-files>/<modified-files> lists (seed 004) through the template's `files` macro")
    append_last_request: bool = setting(True, "append 'Last request from user was: ...' (seed 001)")
    fallback: str = setting("truncate", "strategy used when the summarizer fails ('' to let the failure through)")

    def compact(self, context: Context, request: CompactionRequest) -> CompactionResult:
        messages = context.messages
        head = leading_system(messages)
        previous = messages[head] if head < len(messages) and is_summary(messages[head]) else None
        start = head + (previous is not None)
        history = messages[start:]
        keep = request.window // 4 if self.keep_recent_tokens is None else self.keep_recent_tokens
        cut, turn_start = choose_cut(history, keep, request.count_tokens, self.split_turn_min_messages)
        if cut == 0:
            return CompactionResult(context, 0, note="nothing old enough to summarize")
        summarizer = self._summarizer(request)
        previous_text = summary_text(previous) if previous is not None else None
        try:
            text, calls, prompt_hash, template = self._summarize(history, cut, turn_start, previous_text, summarizer)
        except CompactionFailed as failure:
            if not self.fallback:
                raise
            from strategies.registry import get_strategy

            result = get_strategy(self.fallback).compact(context, request)
            return replace(result, note=fallback_note(f"summarizer failed ({failure})", f"{self.fallback}: {result.note}"))
        text = self._decorate(text, history[:cut], previous_text, messages, template)
        new_messages = (*messages[:head], summary_message(text), *history[cut:])
        removed = cut + (previous is not None)
        note = f"summarized {cut} messages" + (" (split turn)" if turn_start is not None else "") + f", kept {len(history) - cut}"
        return CompactionResult(replace(context, messages=new_messages, summary=text), removed, tuple(calls), prompt_hash, note)

    def _summarizer(self, request: CompactionRequest) -> Summarizer:
        if self.summarizer == "extractive":
            from strategies.extractive import ExtractiveSummarizer

            return ExtractiveSummarizer()
        if self.summarizer == "llm":
            if request.summarizer is None:
                raise CompactionFailed("summarizer 'llm' needs an LLM provider configured for the run")
            return request.summarizer
        raise ValueError(f"unknown summarizer {self.summarizer!r}: use 'extractive' or 'llm'")

    def _summarize(self, history, cut, turn_start, previous_text, summarizer) -> tuple[str, list, str, str]:
        """The summary text, the summarizer's calls, the prompt set's hash, and the template that
        wrote the history part (its `files` macro decides the file lists)."""
        calls = []
        history_template = self.template
        end_of_history = turn_start if turn_start is not None else cut
        spans = [("history", history[:end_of_history])]
        if turn_start is not None:
            spans.append(("turn_prefix", history[turn_start:cut]))
        texts = []
        prompt_hash = prompt_set_hash(self.template, self.update_template, self.turn_prefix_template)
        for purpose, span in spans:
            if purpose == "history" and not span and previous_text is None:
                continue
            update = purpose == "history" and self.iterative and previous_text is not None
            template = self.turn_prefix_template if purpose == "turn_prefix" else self.update_template if update else self.template
            if purpose == "history":
                history_template = template
            span_messages = list(span)
            if purpose == "history" and previous_text is not None and not update:
                span_messages = [summary_message(previous_text), *span_messages]  # re-summarize from scratch
            cleaned = fill_missing_results(span_messages)
            if getattr(summarizer, "reads_prompt", True):
                prompt = render(template, conversation=serialize(cleaned), previous_summary=previous_text if update else None)
            else:
                prompt = Prompt(system="", text="", hash="")  # no prompt was rendered
            response = summarizer.summarize(
                SummaryRequest(
                    messages=tuple(cleaned), prompt=prompt.text, system=prompt.system, prompt_hash=prompt.hash,
                    max_output_tokens=self.max_summary_tokens, purpose="update" if update else purpose,
                    previous_summary=previous_text if update else None, files_tracked=self.track_files,
                )
            )
            texts.append(response.text.strip())
            if response.usage is not None:
                calls.append(response.usage)
        if turn_start is not None:
            *history_text, prefix_text = texts
            return "".join(history_text) + TURN_SEPARATOR + prefix_text, calls, prompt_hash, history_template
        return "\n\n".join(texts), calls, prompt_hash, history_template

    def _decorate(
        self, text: str, dropped: Sequence[Message], previous_text: str | None, messages: Sequence[Message], template: str
    ) -> str:
        text = _FILES.sub("", text).rstrip()
        text = text.split("\n\nLast request from user was:")[0]
        if self.track_files:
            activity = file_activity(dropped, files_in(previous_text))
            lists = file_lists(template, activity.read, activity.modified)
            if lists:
                text += "\n\n" + lists
        last = last_user_request(messages)
        if self.append_last_request and last:
            text += f"\n\nLast request from user was: {last}"
        return text


def files_in(summary: str | None) -> FileActivity:
    """The cumulative file lists an earlier summary carried."""
    if not summary:
        return FileActivity()
    found = {kind: tuple(body.splitlines()) for kind, body in _FILES.findall(summary)}
    return FileActivity(read=found.get("read", ()), modified=found.get("modified", ()))


def choose_cut(history: Sequence[Message], keep_tokens: int, count, split_min: int) -> tuple[int, int | None]:
    """Where to cut `history` (messages before the cut are summarized) and, for a split turn,
    where the split turn starts. Returns (0, None) when nothing can be summarized."""
    size = len(history)
    # The verbatim tail history[index:] is the shortest one holding at least keep_tokens.
    kept, index = 0, size
    while index > 0 and kept < keep_tokens:
        index -= 1
        kept += count([history[index]])
    if index == 0:
        return 0, None
    safe = set(safe_cut_points(history))
    # The last safe turn start at or before the index (looked for backwards: it is usually near).
    turn = next((i for i in range(min(index, size - 1), -1, -1) if i in safe and is_user_turn_start(history[i])), None)
    if turn == index:
        return index, None
    if turn is not None and _turn_end(history, turn) - turn < split_min:
        return turn, None  # a short turn is kept whole (turn 0: nothing to summarize)
    # A long turn (or no user turn at all, as in single-task agents): split it at a safe point.
    cut = next((i for i in range(index, size) if i in safe), size)
    return cut, (turn if turn is not None else 0)


def _turn_end(history: Sequence[Message], start: int) -> int:
    for i in range(start + 1, len(history)):
        if is_user_turn_start(history[i]):
            return i
    return len(history)
