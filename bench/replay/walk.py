"""The bookkeeping of one replay (`compactlab.replay.replay`): the agent's context beside the full history.

A `Walk` holds what a replay knows between calls: the context (the last compaction's result
followed by the session's later messages), the running estimate of the context, the last
prompt's size (the hybrid trigger's anchor), and the rows written so far. `compactlab.replay.replay`
drives it call by call and asks the engine when to compact. Every size comes from the one kernel
in `compactlab.replay.prompt_size`, which the shared uncompacted replay (`compactlab.replay.uncompacted`)
and the coasting fast path call too, so the rows a setting copies from there equal the ones it
would have walked. Only the walk writes its state: what the fast path computes it hands over
through `start_at` and `coasted`, and the replay notes a production compaction with
`production_compaction`.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from compactlab.compaction.engine import CompactionEvent
from compactlab.compaction.overflow import silent_overflow
from compactlab.contract import Context
from compactlab.replay.prompt_size import hybrid_tokens, measured_size, own_estimate
from compactlab.replay.row_schema import CALL_COLUMNS, CallColumns, CompactionRow
from compactlab.replay.setting import Setting
from compactlab.replay.uncompacted import COLUMNS, Uncompacted
from compactlab.sessions.messages import SUMMARY_SOURCE_ID
from compactlab.sessions.model import Message, Session
from compactlab.tokens.estimators import Hybrid
from compactlab.tokens.metering import NOTHING_WRITTEN

if TYPE_CHECKING:
    import numpy as np


class Walk:
    """The bookkeeping of one replay: the agent's context beside the full history.

    The context is `head` (the context the last compaction produced, or the empty one) followed
    by the session's messages from `tail_start` on; its running estimate is kept in step with
    the appends, and the message tuple is built only when a compaction or the cache model needs it
    (building it at every call would make a replay quadratic in its length).
    """

    def __init__(self, session: Session, setting: Setting, base: Uncompacted):
        self.session = session
        self.setting = setting
        self.base = base
        self.meter = base.meter
        self.window = base.window
        self.uses_usage = isinstance(base.meter.estimator, Hybrid)
        self.overhead = base.meter.local.prompt_overhead + base.meter.offset  # the fixed part of every size
        self.head = Context(messages=())
        self.tail_start = 0
        # The last prompt's size with its output: (index of the first session message it does not
        # cover, tokens). The hybrid trigger adds the messages since; `context` gives it to strategies.
        self.known: tuple[int, int] | None = None
        self.context_sum = 0.0  # estimate of the context's messages
        self.written = NOTHING_WRITTEN  # the summaries among them (`Meter.written`)
        self.real_compaction_seen = False
        self.compaction_marker_since_call = False
        self.compacted_since_call = False
        self.pending_fidelity: int | None = None  # index in self.compactions awaiting the next call
        self.rows: dict[str, list] = {name: [] for name in COLUMNS}
        self.compactions_so_far: list[int] = []
        self.compacted_before: list[bool] = []
        self.noop_before: list[int] = []
        self.noops_since_call = 0
        self.previous_prompt: tuple[tuple[Message, ...], int, int] = ((), 0, 0)  # (head, tail_start, end) at the last call
        self.compactions: list[CompactionRow] = []
        self.compacted: list[tuple[Message, ...]] = []  # each compaction's context after it
        self.before: list[tuple[Message, ...]] = []  # and before it
        self.last_built: Context | None = None
        # The last context the engine's meter counted anew (a compaction's result) with the running
        # sums of its messages' estimates: the walk takes its size and the cache model its shared
        # prefix from them instead of summing the same messages again.
        self.counted: tuple[tuple[Message, ...], list[float]] = ((), [])
        self._pieces_at: tuple[int, float, int] = (-1, 1.0, 0)  # (call number, its ratio, no message's size)

    def context(self, index: int) -> Context:
        """The agent's context before message `index`, as one Context (built only when asked)."""
        head = self.head
        known = None
        if self.known is not None:  # in the context's terms: how many of its messages the count covers
            known = (len(head.messages) + self.known[0] - self.tail_start, self.known[1])
        if self.tail_start == index and known == head.known_usage:
            built = head
        else:
            messages = head.messages + self.session.messages[self.tail_start : index]
            built = Context(messages, head.summary, head.compactions, known, head.archives, head.kept_tail)
        self.last_built = built
        return built

    def ratio(self) -> float:
        """The measured ratio of the next call (`compactlab.replay.prompt_size`); the last call's after the last one."""
        ratios = self.base.ratios
        return ratios[min(len(self.rows["full_tokens"]), len(ratios) - 1)] if ratios else 1.0

    def engine_meter(self, context: Context) -> int:
        """The measured size of a context at the next call: what a compaction's before and after
        are (the engine asks for both). The walk keeps a running sum of its own context, so only
        another context (a fresh compaction's result) is counted anew."""
        built = self.last_built
        if built is not None and context.messages is not built.messages and _same_messages(context.messages, built.messages):
            # The walk's own context in another tuple (a strategy sizing the context it was given,
            # as eviction does before it starts): the running sum holds. The definition would keep
            # the tuple's running sums as the last counted, which nothing reuses (it is not the
            # head, nor a strategy's result): none are kept.
            self.counted = ((), [])
            return measured_size(self.overhead, self.context_sum, self.ratio(), self.written)
        return self.engine_meter_plain(context)

    def engine_meter_plain(self, context: Context) -> int:
        """The definition of `engine_meter` (what `compactlab.replay.replay.replay_plain`'s engine
        measures with): only the walk's own context tuple is sized from the running sum."""
        built = self.last_built
        if built is not None and context.messages is built.messages:
            return measured_size(self.overhead, self.context_sum, self.ratio(), self.written)
        self.counted = (context.messages, self.meter.running_sums(context.messages))
        written = self.meter.written(context.messages)
        return measured_size(self.overhead, self._counted_sum(len(context.messages)), self.ratio(), written)

    def piece_size(self, messages: Sequence[Message]) -> int | None:
        """`Engine.piece_size_plain` of `messages` as the engine's meter (`engine_meter`) answers it,
        without its two contexts, memo entries and scans for summaries; None where this cannot
        tell the same (a piece holding a summary, which `Meter.written` sizes apart; an empty piece,
        or one that is the walk's own context, which `engine_meter` answers from its running sum).

        A piece without a summary has nothing written: its size is `measured_size` of its messages'
        estimates added in order, as `Meter.running_sums` adds them, less that of no message, at
        the next call's ratio. It leaves `counted` as the plain answer leaves it, the empty
        context's last (`tests/replay/test_piece_sizes.py` holds the two equal on real sessions)."""
        built = self.last_built
        if not messages or (built is not None and (built.messages is messages or not built.messages)):
            return None
        tokens = self.meter.piece_tokens
        if len(messages) == 1:  # most pieces are one message: no loop to set up
            message = messages[0]
            if message.source_id == SUMMARY_SOURCE_ID:  # (`is_summary`, inlined)
                return None
            total = tokens(message)
        else:
            if any(message.source_id == SUMMARY_SOURCE_ID for message in messages):
                return None
            total = tokens(messages[0])
            for message in messages[1:]:  # added in order, as `accumulate` adds them (not `sum`: 3.12's compensates)
                total += tokens(message)
        self.counted = ((), [])  # what `engine_meter` leaves after the empty context, a piece's last count
        ratio, empty = self._piece_terms()
        return measured_size(self.overhead, total, ratio, NOTHING_WRITTEN) - empty

    def _piece_terms(self) -> tuple[float, int]:
        """The next call's ratio and the size of no message at it, which every piece of a
        compaction subtracts (asked once per call, not once per piece)."""
        number = len(self.rows["full_tokens"])
        if self._pieces_at[0] != number:
            ratio = self.ratio()
            self._pieces_at = (number, ratio, measured_size(self.overhead, 0, ratio, NOTHING_WRITTEN))
        return self._pieces_at[1], self._pieces_at[2]

    def _counted_sum(self, count: int) -> float:
        """The estimate of the first `count` messages of the last counted context (as `sum` adds them)."""
        return self.counted[1][count - 1] if count else 0

    def trigger_tokens(self, index: int) -> int:
        """What the engine's trigger sees before the call at `index` (`compactlab.replay.prompt_size`)."""
        if self.known is None or not self.uses_usage:
            return own_estimate(self.context_sum, self.meter.local.prompt_overhead, self.meter.offset)
        history = self.base.history_tokens
        covered = history[self.known[0]] if self.meter.counts_newer else history[index]  # usage alone: nothing since
        return hybrid_tokens(self.known[1], history[index], covered)

    def start_at(self, index: int) -> None:
        """Take over the uncompacted replay's rows and running state before message `index`: until a
        setting first compacts, its replay is the recorded session itself, which every setting of a
        session shares (`compactlab.replay.uncompacted`). Equals walking those calls."""
        base = self.base
        calls = base.calls_before(index)
        for name in COLUMNS:
            self.rows[name] = base.columns[name][:calls]
        self.compactions_so_far = [0] * calls
        self.compacted_before = [False] * calls
        self.noop_before = [0] * calls
        previous = base.positions[calls - 1] if calls else -1
        self.previous_prompt = ((), 0, max(previous, 0))
        self.context_sum = base.history_tokens[index]
        self.known = base.known_usage[index]
        self.real_compaction_seen = bool(base.markers) and base.markers[0] < index
        self.compaction_marker_since_call = base.marker_between(previous, index)

    def production_compaction(self) -> None:
        """The production agent compacted before the next message: from here on its recorded counts
        describe its compacted prompts, and only the system prompt and tools stay cached."""
        self.real_compaction_seen = True
        self.compaction_marker_since_call = True

    def coasted(
        self, index: int, stop: int, count: int, context_tokens: list[int], over_window: list[bool], context_sum: float
    ) -> None:
        """Take the rows of the `count` calls from message `index` on that the fast path sized in
        bulk (`compactlab.replay.fast.coasting`: their `context_tokens` and `over_window`), with no
        compaction among them, and move on to message `stop` as `append` would (`context_sum`: the
        context's estimate there)."""
        base, rows = self.base, self.rows
        first = base.calls_before(index)
        end = first + count
        last_call = base.positions[end - 1] if count else index - 1
        if count:
            for name in (
                "message_index",
                "model",
                "recorded_prompt_tokens",
                "output_tokens",
                "full_tokens",
                "full_prefix_tokens",
            ):
                rows[name] += base.columns[name][first:end]  # as the uncompacted replay's: they do not depend on the context
            # Append-only between calls: the previous prompt is cached, as far as it reaches (and
            # the cache has not expired since: `compactlab.replay.prompt_cache`).
            recorded = not self.head.compactions  # the prompt is still the recorded one (see `measure`)
            rows["prefix_tokens"] += (
                base.cache.prefix(call, previous, size, base.cache.edited_at(call, recorded))
                for call, previous, size in zip(
                    range(first, end), [rows["context_tokens"][-1], *context_tokens[:-1]], context_tokens
                )
            )
            rows["context_tokens"] += context_tokens
            rows["over_window"] += over_window
            self.compactions_so_far += [self.head.compactions] * count
            self.compacted_before += [False] * count
            self.noop_before += [0] * count
            self.previous_prompt = (self.head.messages, self.tail_start, last_call)
        # The production agent's compactions passed on the way, as the call-by-call loop notes them.
        since_last_call = base.marker_between(last_call, stop)
        self.compaction_marker_since_call = since_last_call or (self.compaction_marker_since_call and not count)
        self.real_compaction_seen = self.real_compaction_seen or base.marker_between(index - 1, stop)
        self.context_sum = context_sum
        if count:  # as `append` after the last call rowed
            reply = int(base.anchor_output)
            self.known = (last_call + reply, rows["context_tokens"][-1] + base.columns["output_tokens"][end - 1] * reply)

    def append(self, index: int) -> None:
        self.context_sum = self.context_sum + self.base.message_tokens[index]
        call = self.session.messages[index].call
        if call is not None:  # the call's prompt was measured (its row), so the trigger anchors on it
            prompt = self.rows["context_tokens"][-1]  # as `uncompacted`'s anchor
            self.known = (index + 1, prompt + call.output_tokens) if self.base.anchor_output else (index, prompt)

    def measure(self, index: int, message: Message) -> dict:
        """The row of the call at `index` with the current context (no side effects)."""
        call = message.call
        assert call is not None, f"message {index} is no recorded call: only calls are measured"
        overhead = self.overhead
        number = len(self.rows["full_tokens"])
        full_tokens = self.base.columns["full_tokens"][number]
        # Nothing removed yet: the prompt is the history, whose size is the uncompacted replay's (the
        # recorded count before any production compaction), not a measure of it that can round apart.
        removed = bool(self.head.compactions)
        context_tokens = measured_size(overhead, self.context_sum, self.ratio(), self.written) if removed else full_tokens
        context_estimate = round(self.context_sum + overhead)
        # What a prompt cache could serve: the part identical to the previous prompt. Append-only
        # since the last call, that is the whole previous prompt, in the same anchored units as the
        # baseline's (so an untouched session costs exactly what the baseline costs). After a
        # compaction, the unchanged head's share of the estimate applied to the anchored size.
        first = not self.rows["full_tokens"]
        cache = self.base.cache
        if first or cache.cold[number]:
            prefix_tokens = cache.prefix(number, 0, context_tokens)  # the warm part: nothing of the previous prompt
        elif self.compacted_since_call:
            prompt = self.context(index).messages
            head, tail_start, end = self.previous_prompt
            shared = _shared_prefix(head + self.session.messages[tail_start:end], prompt)
            if self.counted[0] is self.head.messages and shared <= len(self.head.messages):
                shared_estimate = self._counted_sum(shared) + overhead
            else:
                shared_estimate = sum(self.meter.message_tokens(m) for m in prompt[:shared]) + overhead
            prefix_tokens = cache.after_change(call.model, round(context_tokens * shared_estimate / max(1, context_estimate)))
        else:  # (while nothing was removed the prompt is the recorded one, whose in-place edits break the cache)
            prefix_tokens = cache.prefix(
                number, self.rows["context_tokens"][-1], context_tokens, cache.edited_at(number, not removed)
            )
        # Without compaction the previous prompt is a prefix of this one, unless the production
        # agent compacted in between (then only the system prompt and tools stay cached).
        previous_full = 0 if first else self.rows["full_tokens"][-1]
        shared_full = cache.after_change(call.model, self.meter.offset) if self.compaction_marker_since_call else previous_full
        full_prefix = cache.prefix(number, shared_full, full_tokens, cache.edited_at(number, True))
        return {
            "message_index": index,
            "model": call.model,
            "recorded_prompt_tokens": call.prompt_tokens,
            "output_tokens": call.output_tokens,
            "full_tokens": full_tokens,
            "context_tokens": context_tokens,
            "prefix_tokens": min(prefix_tokens, context_tokens),
            "full_prefix_tokens": min(full_prefix, full_tokens),
            "over_window": silent_overflow(context_tokens, self.window),
        }

    def over_window(self, context_tokens: np.ndarray) -> np.ndarray:
        """Which of these prompt sizes the provider would refuse: the rule `measure` rows one call
        by (`silent_overflow`), for the fast path that sizes many calls at once."""
        return silent_overflow(context_tokens, self.window)

    def record(self, row: dict) -> None:
        if self.pending_fidelity is not None:
            pending = self.compactions[self.pending_fidelity]
            self.compactions[self.pending_fidelity] = _with_fidelity(
                pending, row["context_tokens"], row["recorded_prompt_tokens"]
            )
            self.pending_fidelity = None
        self.compactions_so_far.append(self.head.compactions)
        self.compacted_before.append(self.compacted_since_call)
        self.noop_before.append(self.noops_since_call)
        self.noops_since_call = 0
        self.previous_prompt = (self.head.messages, self.tail_start, row["message_index"])
        self.compacted_since_call = False
        self.compaction_marker_since_call = False
        for name in COLUMNS:
            self.rows[name].append(row[name])

    def note_compaction(
        self, event: CompactionEvent | None, index: int, context: Context, real: bool = False, excluded: str | None = None
    ) -> None:
        """Take the engine's answer before message `index`: `context` is its result (unchanged when the
        compaction failed or did not run). `real`: the production agent's own compaction, whose next
        prompt checks the replay unless `excluded` says why it cannot."""
        fidelity_pending = real and excluded is None
        if event is None:
            return
        if not event.changed:  # no compaction happened: nothing to row or score, only counted
            self.noops_since_call += 1
            return
        before = self.last_built  # the context the engine was given (`context(index)` built it)
        assert before is not None, "a compaction comes after the context it compacted was built"
        if context is not self.last_built:
            if context.messages is not before.messages:  # else the running sum still holds
                if context.messages is self.counted[0]:
                    self.context_sum = self._counted_sum(len(context.messages))
                else:
                    self.context_sum = sum(self.meter.message_tokens(m) for m in context.messages)
                self.written = self.meter.written(context.messages)
            self.head, self.tail_start, self.known = context, index, None
            self.last_built = context
        # Scored after the replay (`compactlab.replay.replay`), from the contexts kept here.
        self.compactions.append(
            CompactionRow(
                session=self.session.id,
                setting=self.setting.label,
                call=len(self.rows["full_tokens"]),
                message_index=index,
                event=event,
                summary=context.summary,
                excluded=excluded,
            )
        )
        self.before.append(before.messages)
        self.compacted.append(context.messages)
        if not event.failed:
            self.compacted_since_call = True
        if fidelity_pending:
            self.pending_fidelity = len(self.compactions) - 1

    def columns(self) -> CallColumns:
        calls = len(self.rows["full_tokens"])
        constant = {"session": self.session.id, "setting": self.setting.label, "window": self.window}
        columns = {
            **self.rows,
            "call": list(range(calls)),
            "compactions_so_far": self.compactions_so_far,
            "compacted_before": self.compacted_before,
            "noop_before": self.noop_before,
            "cache_expired": list(self.base.cache.cold[:calls]),
        }
        return {name: [constant[name]] * calls if name in constant else columns[name] for name in CALL_COLUMNS}


def _same_messages(these: tuple[Message, ...], those: tuple[Message, ...]) -> bool:
    """Whether two message tuples hold the same message objects, in order."""
    return len(these) == len(those) and all(map(operator.is_, these, those))


def _shared_prefix(previous: Sequence[Message], current: Sequence[Message]) -> int:
    shared = 0
    for a, b in zip(previous, current):
        if a is not b and a != b:
            break
        shared += 1
    return shared


def _with_fidelity(row: CompactionRow, predicted: int, recorded: int) -> CompactionRow:
    return replace(row, fidelity_predicted=predicted, fidelity_recorded=recorded)
