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
from typing import ClassVar, Literal

from compactlab.contract import (
    CompactionFailed,
    CompactionRequest,
    CompactionResult,
    Context,
    Summarizer,
    fallback_note,
)
from compactlab.sessions.messages import (
    FileActivity,
    SafeCuts,
    file_activity,
    is_summary,
    is_user_turn_start,
    last_user_request,
    pinned_head,
    pinned_in,
    safe_cut_points,
    summary_message,
    summary_text,
)
from compactlab.sessions.model import Message, TextPart
from compactlab.strategies.base import named_strategy, setting, strategy_setting
from compactlab.strategies.prompting import file_lists, prompt_set_hash, summarizer_for, summary_request

TailRule = Literal["turn-before", "user-after", "within", "latest-turn"]
NOTE_FALLBACK = "note"  # seed 004's truncate fallback: a count of the messages replaced, no LLM
TURN_SEPARATOR = "\n\n---\n\n**Turn Context (split turn):**\n\n"  # pi's separator
_FILES = re.compile(r"<(read|modified)-files>\n(.*?)\n</\1-files>", re.DOTALL)


@dataclass(frozen=True)
class Summarize:
    """Summarize the history before a turn-boundary cut and keep the recent part verbatim."""

    name: ClassVar[str] = "summarize"
    source: ClassVar[str] = (
        "seed 001 (Go middleware), seed 004 (Opal), pi (packages/coding-agent/src/core/compaction/compaction.ts)"
    )

    keep_recent_tokens: int | None = setting(
        None, "tokens of recent history kept verbatim; None = a quarter of the window (seed 004)"
    )
    summarizer: str = setting("extractive", "'extractive' (deterministic, no LLM) or 'llm' (the run's configured LLM summarizer)")
    template: str = setting("summary.j2", "prompt template for the history summary (name in strategies/prompts or a path)")
    update_template: str = setting("update.j2", "prompt template used to update an earlier summary (iterative merge)")
    turn_prefix_template: str = setting("turn_prefix.j2", "prompt template for the first part of a split turn")
    split_turn_min_messages: int = setting(5, "a turn this long is split rather than kept whole when the cut falls inside it")
    max_summary_tokens: int = setting(4096, "output budget of each summary call")
    iterative: bool = setting(False, "update the earlier summary with the dropped span instead of summarizing from scratch")
    track_files: bool = setting(
        True, "append cumulative <read-files>/<modified-files> lists (seed 004) through the template's `files` macro"
    )
    append_last_request: bool = setting(True, "append 'Last request from user was: ...' (seed 001)")
    fallback: str = strategy_setting(
        "truncate",
        "strategy used when the summarizer fails ('' to let the failure through; 'note': seed 004's '[Compacted N messages: ...]')",
        besides=("", NOTE_FALLBACK),
    )
    keep_user_message_tokens: int = setting(
        0,
        "the newest user messages of the summarized span, up to this many tokens, are kept verbatim before the summary (Codex: 20,000)",
    )
    emergency_keep_share: float = setting(
        0.0, "on an overflow compaction, keep this share of the window instead (seed 004: 1/5; 0 = as usual)"
    )
    force_on_overflow: bool = setting(
        False, "on an overflow compaction with nothing old enough, summarize all but the last 2 messages (seed 004)"
    )
    tail_rule: TailRule = setting(
        "turn-before",
        "where the kept tail starts, from the message where keep_recent_tokens is reached: 'turn-before' (the user turn "
        "it is in, split if long), 'user-after' (seed 004: the nearest user message at or after it, else split), "
        "'within' (opencode: the longest tail within the budget; if none fits or all of it does, everything is summarized), "
        "'latest-turn' (Cline: no later than the latest user turn's start, then back to a message a tail may start at)",
    )
    keep_recent_min: int = setting(0, "with keep_recent_tokens None: at least this many tokens kept (opencode: 2,000)")
    keep_recent_max: int = setting(
        0, "with keep_recent_tokens None: at most this many tokens kept, 0 = no cap (opencode: 15,000)"
    )
    split_turn_summary: bool = setting(
        True,
        "a split turn's first part gets its own turn-prefix summary (seed 004, pi); False: it joins the history's (opencode)",
    )
    drop_kept_tail: bool = setting(
        False,
        "only what came after the previous compaction is summarized: the tail it kept verbatim is dropped (pi's "
        "prepareCompaction: boundaryStart = prevCompactionIndex + 1)",
    )
    keep_all_without_cut: bool = setting(
        False,
        "when no message at or after the point where keep_recent_tokens is reached may start the kept tail (the "
        "budget crossed inside the newest tool result), keep everything instead of summarizing everything (pi's "
        "findCutPoint: cutIndex stays at the first cut point)",
    )

    def compact(self, context: Context, request: CompactionRequest) -> CompactionResult:
        messages = context.messages
        head = pinned_head(messages, request.pin_task)  # system prompt, instructions (and the task): kept verbatim
        previous = messages[head] if head < len(messages) and is_summary(messages[head]) else None
        start = head + (previous is not None)
        # pi: the previous compaction's kept tail is neither summarized nor kept (`drop_kept_tail`).
        dropped = min(context.kept_tail, len(messages) - start) if self.drop_kept_tail and previous is not None else 0
        history = messages[start + dropped :]
        emergency = request.reason in ("overflow", "silent_overflow")
        keep = self.keep_recent_tokens
        if keep is None:
            keep = max(request.window // 4, self.keep_recent_min)
            keep = min(keep, self.keep_recent_max) if self.keep_recent_max else keep
        if emergency and self.emergency_keep_share:
            keep = int(self.emergency_keep_share * request.window)
        cut, turn_start = choose_cut(
            history,
            keep,
            request.count_tokens,
            self.split_turn_min_messages,
            self.tail_rule,
            self.keep_all_without_cut,
            after_summary=previous is not None,
        )
        if cut == 0 and self.tail_rule == "within" and history:
            cut, turn_start = len(history), None  # opencode's select(): no tail to keep, the whole history is summarized
        if not self.split_turn_summary:
            turn_start = None
        if cut == 0 and emergency and self.force_on_overflow:
            safe = set(safe_cut_points(history))
            cut, turn_start = next((i for i in range(len(history) - 2, 0, -1) if i in safe), 0), None
        if cut == 0 and not dropped:
            return CompactionResult(context, 0, note="nothing old enough to summarize")
        previous_text = summary_text(previous) if previous is not None else None
        # Instructions in the span (and in a dropped tail) stay out of the summary, kept verbatim.
        kept = pinned_in(messages, start, start + dropped + cut, request.pin_task)
        try:
            summarizer = self._summarizer(request)  # a missing LLM provider is a failed summarizer too
            text, calls, prompt_hash, template = self._summarize(history, cut, turn_start, previous_text, summarizer, kept)
        except CompactionFailed as failure:
            if not self.fallback:
                raise
            if self.fallback == NOTE_FALLBACK:
                text = compacted_note(history[:cut], previous_text)
                new_messages = (*messages[:head], *kept, summary_message(text), *history[cut:])
                note = f"summarizer failed ({failure}); {NOTE_FALLBACK}: {cut - len(kept)} messages replaced by a count"
                return CompactionResult(
                    replace(context, messages=new_messages, summary=text, kept_tail=len(history) - cut),
                    dropped + cut - len(kept) + (previous is not None),
                    note=note,
                )
            result = named_strategy(self.fallback, "summarize's fallback").compact(context, request)
            return replace(result, note=fallback_note(f"summarizer failed ({failure})", f"{self.fallback}: {result.note}"))
        text = self._decorate(text, history[:cut], previous_text, messages, template)
        users = self._kept_user_messages(history[:cut], kept, request)
        new_messages = (*messages[:head], *kept, *users, summary_message(text), *history[cut:])
        removed = dropped + cut - len(kept) - len(users) + (previous is not None)
        note = (
            f"summarized {cut - len(kept)} messages"
            + (" (split turn)" if turn_start is not None else "")
            + (f", dropped the {dropped} the previous compaction kept" if dropped else "")
            + f", kept {len(history) - cut}"
        )
        compacted = replace(context, messages=new_messages, summary=text, kept_tail=len(history) - cut)
        return CompactionResult(compacted, removed, tuple(calls), prompt_hash, note)

    def summary_of(
        self, span: Sequence[Message], previous_text: str | None, request: CompactionRequest, messages: Sequence[Message]
    ) -> tuple[str, tuple, str]:
        """The summary this strategy writes of `span` (merged with an earlier summary's text), as its own
        compactions decorate theirs, with the summarizer's calls and the prompt set's hash: for a
        strategy that chooses what to remove itself (`compactlab.strategies.priority`). `messages`: the whole context."""
        summarizer = self._summarizer(request)
        text, calls, prompt_hash, template = self._summarize(tuple(span), len(span), None, previous_text, summarizer)
        return self._decorate(text, span, previous_text, messages, template), tuple(calls), prompt_hash

    def _kept_user_messages(self, span: Sequence[Message], kept: Sequence[Message], request: CompactionRequest) -> list[Message]:
        """Codex's `build_compacted_history`: the newest user messages of the summarized span, walked from
        the newest while they fit `keep_user_message_tokens`; the first that does not fit is cut to the
        tokens left, and the walk stops. Pinned messages (kept anyway) take their share of the budget."""
        remaining = self.keep_user_message_tokens
        chosen: list[Message] = []
        for message in reversed([m for m in span if is_user_turn_start(m)]) if remaining > 0 else ():
            tokens = request.count_tokens([message])
            pinned = any(message is k for k in kept)
            if tokens <= remaining:
                remaining -= tokens
                if not pinned:
                    chosen.append(message)
                continue
            if not pinned:
                chosen.append(_cut_to(message, remaining, tokens))
            break
        return chosen[::-1]

    def _summarizer(self, request: CompactionRequest) -> Summarizer:
        return summarizer_for(self.summarizer, request)

    def _summarize(self, history, cut, turn_start, previous_text, summarizer, kept=()) -> tuple[str, list, str, str]:
        """The summary text, the summarizer's calls, the prompt set's hash, and the template that
        wrote the history part (its `files` macro decides the file lists). `kept`: pinned messages of
        the span, kept verbatim beside the summary and so left out of it."""
        calls = []
        history_template = self.template
        end_of_history = turn_start if turn_start is not None else cut
        spans: list[tuple[Literal["history", "turn_prefix"], Sequence[Message]]] = [("history", history[:end_of_history])]
        if turn_start is not None:
            spans.append(("turn_prefix", history[turn_start:cut]))
        requests = []
        prompt_hash = prompt_set_hash(self.template, self.update_template, self.turn_prefix_template)
        for purpose, span in spans:
            if purpose == "history" and not span and previous_text is None:
                continue
            update = purpose == "history" and self.iterative and previous_text is not None
            template = (
                self.turn_prefix_template if purpose == "turn_prefix" else self.update_template if update else self.template
            )
            if purpose == "history":
                history_template = template
            span_messages = [m for m in span if not any(m is k for k in kept)]
            if purpose == "history" and previous_text is not None and not update:
                span_messages = [summary_message(previous_text), *span_messages]  # re-summarize from scratch
            requests.append(
                summary_request(
                    span_messages,
                    template,
                    summarizer,
                    self.max_summary_tokens,
                    previous_summary=previous_text if update else None,
                    purpose="update" if update else purpose,
                    files_tracked=self.track_files,
                )
            )
        # The history's and the turn prefix's summaries are independent: a summarizer that can
        # make several at once (an LLM's calls, as pi makes them) does.
        together = getattr(summarizer, "summarize_all", None)
        responses = (
            together(requests) if together is not None and len(requests) > 1 else [summarizer.summarize(r) for r in requests]
        )
        texts = []
        for response in responses:
            texts.append(response.text.strip())
            if response.usage is not None:
                calls.append(response.usage)
        if turn_start is not None:
            *history_texts, prefix_text = texts
            # With nothing before the turn (a single-task agent's one long turn), the turn's
            # summary is the whole summary: no empty first part, no separator before it.
            earlier = "".join(t for t in history_texts if t)
            text = earlier + TURN_SEPARATOR + prefix_text if earlier and prefix_text else earlier or prefix_text
            return text, calls, prompt_hash, history_template
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


def compacted_note(dropped: Sequence[Message], previous_text: str | None) -> str:
    """Seed 004's `:truncate` summary, written without an LLM: `[Compacted N messages: ...]` with the
    messages' roles counted, and the cumulative file lists."""
    roles: dict[str, int] = {}
    for message in dropped:
        roles[message.role] = roles.get(message.role, 0) + 1
    counts = ", ".join(f"{n} {role}" for role, n in roles.items())
    activity = file_activity(dropped, files_in(previous_text))
    lists = file_lists("summary.j2", activity.read, activity.modified)
    return f"[Compacted {len(dropped)} messages: {counts}]" + (f"\n\n{lists}" if lists else "")


def _cut_to(message: Message, tokens: int, total: int) -> Message:
    """The message's text cut to about `tokens` of its `total`, its start and end kept around a marker
    (Codex's `truncate_text`: "…N tokens truncated…")."""
    text = message.text()
    keep = len(text) * tokens // max(total, 1)
    marker = f"\n…{total - tokens} tokens truncated…\n"
    return replace(message, parts=(TextPart(text[: keep // 2] + marker + text[len(text) - keep // 2 :]),))


def files_in(summary: str | None) -> FileActivity:
    """The cumulative file lists an earlier summary carried."""
    if not summary:
        return FileActivity()
    found = {kind: tuple(body.splitlines()) for kind, body in _FILES.findall(summary)}
    return FileActivity(read=found.get("read", ()), modified=found.get("modified", ()))


def choose_cut(
    history: Sequence[Message],
    keep_tokens: int,
    count,
    split_min: int,
    rule: TailRule = "turn-before",
    keep_all_without_cut: bool = False,
    after_summary: bool = False,
) -> tuple[int, int | None]:
    """Where to cut `history` (messages before the cut are summarized) and, for a split turn,
    where the split turn starts. Returns (0, None) when nothing can be summarized. `rule`: see
    `Summarize.tail_rule`; `keep_all_without_cut`: see `Summarize.keep_all_without_cut`; `after_summary`: an earlier
    summary precedes `history` (for 'latest-turn')"""
    size = len(history)
    if keep_tokens <= 0:  # nothing recent is kept: everything is summarized (Codex, Claude Code)
        return size, None
    if rule == "within":
        return _cut_within(history, keep_tokens, count)
    if rule == "latest-turn":
        return _cut_before_latest_turn(history, keep_tokens, count, after_summary)
    # The verbatim tail history[index:] is the shortest one holding at least keep_tokens.
    kept, index = 0, size
    while index > 0 and kept < keep_tokens:
        index -= 1
        kept += count([history[index]])
    if index == 0:
        return 0, None
    safe = SafeCuts(history)
    # The last safe turn start at or before the index (looked for backwards: it is usually near).
    # (A turn start first: whether a cut is safe is found walking back from the end, as far as asked.)
    turn = next((i for i in range(min(index, size - 1), -1, -1) if is_user_turn_start(history[i]) and i in safe), None)
    if turn == index:
        return index, None
    if rule == "user-after":
        # Seed 004's find_cut_point: the nearest user boundary at or after the point; without one
        # (the point is in the last turn), the split-turn handling below.
        after = next((i for i in range(index + 1, size) if is_user_turn_start(history[i]) and i in safe), None)
        if after is not None:
            return after, None
    if turn is not None and _turn_end(history, turn) - turn < split_min:
        return turn, None  # a short turn is kept whole (turn 0: nothing to summarize)
    # A long turn (or no user turn at all, as in single-task agents): split it at a safe point.
    cut = next((i for i in range(index, size) if i in safe), None)
    if cut is None:
        return (0, None) if keep_all_without_cut else (size, turn if turn is not None else 0)
    return cut, (turn if turn is not None else 0)


def _cut_within(history: Sequence[Message], keep_tokens: int, count) -> tuple[int, int | None]:
    """opencode's select() and splitTurn(): whole user turns, newest first, while they fit the budget,
    then the earliest message of the next turn from which the rest fits. That is the earliest safe
    cut whose tail fits: the tail only shrinks as the cut moves later. (0, None) when the whole
    history fits, or when no tail does, as opencode keeps no tail then (the caller summarizes all)."""
    starts = [i for i in range(len(history)) if is_user_turn_start(history[i])]
    if not starts:
        return 0, None
    safe = SafeCuts(history)
    kept, cut = 0, None
    for index in range(len(history) - 1, starts[0] - 1, -1):
        kept += count([history[index]])
        if kept > keep_tokens:
            break
        if index in safe:
            cut = index
    if cut is None or cut <= starts[0]:  # no tail fits, or every turn does (opencode: keep.start === 0)
        return 0, None
    turn = max(i for i in starts if i <= cut)
    return cut, (None if turn == cut else turn)


def _cut_before_latest_turn(history: Sequence[Message], keep_tokens: int, count, after_summary: bool) -> tuple[int, int | None]:
    """Cline's findCutIndex: the shortest tail holding keep_tokens, moved back to the latest user
    turn's start when it begins inside that turn (the latest typed prompt is never summarized, unless
    it opens the conversation: Cline's index 0, which after a compaction is the summary), then back to
    the nearest safe cut. (0, None) when that reaches the start."""
    kept, index = 0, len(history)
    while index > 0 and kept < keep_tokens:
        index -= 1
        kept += count([history[index]])
    if index <= 0:
        return 0, None
    latest = next((i for i in range(len(history) - 1, -1, -1) if is_user_turn_start(history[i])), 0)
    protected = latest > 0 or (after_summary and is_user_turn_start(history[0]))
    cut = min(index, latest) if protected else index
    safe = SafeCuts(history)
    while cut > 0 and cut not in safe:
        cut -= 1
    return cut, None


def _turn_end(history: Sequence[Message], start: int) -> int:
    for i in range(start + 1, len(history)):
        if is_user_turn_start(history[i]):
            return i
    return len(history)
