"""Binding an estimator to one session: the token counts the engine and strategies use.

A `Meter` counts a message list with the run's estimator and the session's framing, adding
the per-session constant for sources whose files lack the system prompt (see
`compactlab.tokens.estimation`), and, for `hybrid`, starting from the provider's last reported count when the
context still holds the prefix that count covered. `calibrated` uses the fit shipped for the
session's model family (`compactlab.tokens.calibration`).

Text a compaction writes (a summary) is counted apart: `written` sizes it with the model family's
shipped fit, not with the session's measured ratio (`compactlab.replay.prompt_size`).

`from_sum` and `from_usage` are the two ways a whole prompt's estimate is made: the replay's
`__call__` and the estimation benchmark (`compactlab.tokens.estimation`) both go through them, so the two
cannot disagree on what a prompt is estimated at.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate

from compactlab.contract import Context
from compactlab.memo import IdentityMemo
from compactlab.sessions.importers import format_facts
from compactlab.sessions.messages import SUMMARY_SOURCE_ID, is_summary
from compactlab.sessions.model import Message, Session, TextPart
from compactlab.tokens.calibration import calibrated_for, model_family_of, shipped_fits
from compactlab.tokens.estimators import Calibrated, Hybrid, LocalEstimator, get_estimator, local_estimator
from compactlab.tokens.framing import framing_for
from compactlab.tokens.tokenizers import TokenCache


@dataclass(frozen=True)
class Written:
    """The summaries in a context: their estimate in the run's units and their size in provider
    tokens by the model family's fit (`Meter.written`)."""

    estimate: float = 0.0
    tokens: float = 0.0


NOTHING_WRITTEN = Written()


@dataclass
class Meter:
    session: Session
    estimator_name: str = "hybrid"
    cache: TokenCache = field(default_factory=TokenCache)
    offset: int = 0  # the per-session constant (system prompt and tools the file does not hold)
    # How a summary with unreadable content is sized (`written`): as a fresh prompt (what precedes
    # it and its text at their estimate), else at the session's ratio; its unreadable part scaled.
    fresh_prompt: bool = True
    unreadable_scale: float = 1.0

    def __post_init__(self) -> None:
        self._memo: dict[int, tuple[Message, float]] = {}
        # Kept for the last few message tuples: settings that share a compaction's result
        # (`compactlab.replay.shared_compactions`) count it once.
        self._sums: IdentityMemo[list[float]] = IdentityMemo(64, forgotten=False)
        self._written: IdentityMemo[Written] = IdentityMemo(64, forgotten=False)
        self.estimator = get_estimator(self.estimator_name)
        if isinstance(self.estimator, Calibrated) and self.estimator.family is None:
            self.estimator = calibrated_for(self.session)
        self.framing = framing_for(self.session.source_format)
        # Strategies count pieces of the context (a message, a kept tail) with the base of a hybrid
        # estimator: provider usage only ever describes a whole prompt.
        self.local: LocalEstimator = (
            local_estimator(self.estimator.base) if isinstance(self.estimator, Hybrid) else self.estimator
        )
        if not format_facts(self.session.source_format).system_prompt_in_file:
            self.offset = self._first_call_offset()
        fit = shipped_fits().get(model_family_of(self.session))
        self.family_fit: Calibrated | None = fit.estimator() if fit is not None else None
        # Recorded summaries with unreadable content -> its tokens (`written`).
        self._unreadable = {c.summary: c.summary_tokens for c in self.session.compactions if c.summary_tokens is not None}

    def _first_call_offset(self) -> int:
        for index, message in enumerate(self.session.messages):
            if message.call is not None:
                return message.call.prompt_tokens - self.count(self.session.messages[:index])
        return 0

    def count(self, messages: Sequence[Message]) -> int:
        """A local estimate of `messages` (no constant, no provider usage)."""
        return round(self.local.prompt_overhead + sum(self.message_tokens(m) for m in messages))

    def message_tokens(self, message: Message) -> float:
        """One message's estimate, computed once per message object however often it is asked for.

        A replay asks for every message in every later prompt; the memo holds the message itself
        so its id cannot be reused by another object while the entry lives.
        """
        found = self._memo.get(id(message))
        if found is None or found[0] is not message:
            found = (message, self.local.message_tokens(message, self.framing, self.cache))
            self._memo[id(message)] = found
        return found[1]

    def piece_tokens(self, message: Message) -> float:
        """`message_tokens`, without keeping a message not counted before: a strategy sizes pieces
        made for the question (one output on its own, an output's replacement), which the memo
        would keep alive for the rest of the session (hundreds of thousands in a sweep's long
        sessions, each a collection's work); a message in a context is counted and kept anyway."""
        found = self._memo.get(id(message))
        if found is not None and found[0] is message:
            return found[1]
        return self.local.message_tokens(message, self.framing, self.cache)

    def running_sums(self, messages: tuple[Message, ...]) -> list[float]:
        """The estimates of `messages`, summed one by one as `sum` adds them (the last is their total)."""
        return self._sums.of(messages, self._running_sums)

    def running_sums_plain(self, messages: Sequence[Message]) -> list[float]:
        """The definition of `running_sums`: each message's `message_tokens`, accumulated in order."""
        return list(accumulate(map(self.message_tokens, messages)))

    def _running_sums(self, messages: Sequence[Message]) -> list[float]:
        """`running_sums_plain`, looking the memo up in the loop instead of a call per message (a
        compaction's result is counted anew: millions of messages in a sweep); a message not in
        the memo goes through `message_tokens` (`tests/tokens/test_running_sums.py`)."""
        memo = self._memo
        estimates = []
        for message in messages:
            found = memo.get(id(message))
            estimates.append(found[1] if found is not None and found[0] is message else self.message_tokens(message))
        return list(accumulate(estimates))

    def text_counter(self) -> Callable[[str], float] | None:
        """One text's provider tokens on its own, by the model family's shipped fit (None without one)."""
        fit = self.family_fit
        if fit is None:
            return None
        return lambda text: fit.message_tokens(Message(role="user", parts=(TextPart(text),)), self.framing, self.cache)

    def written(self, messages: tuple[Message, ...]) -> Written:
        """The summaries among `messages`, sized in provider tokens by the model family's shipped fit.

        The session's measured ratio (provider tokens per estimated token of its history) also
        carries what the history's text does not show: the framing of each tool call and result,
        reminders and images the file does not hold, values a redaction changed. A summary is one
        new message of prose, so only its own text applies: on the bundled manual compaction
        (m-claude 97b0ffde: 58 short tool calls before it) the ratio, 2.05 per chars/4 token,
        counts the summary at 2,539 tokens where Claude Code's /context reports 1.5k for the
        messages; the Claude fit counts 1,620. With no fit for the family, nothing is counted apart.

        A recorded summary with unreadable content (`CompactionMarker.summary_tokens`: Codex's
        remote compaction, whose replacement history the summary is) makes a fresh prompt: what
        precedes it, the base instructions, and the summary's text are sized at their estimate, as
        the session's first call measured its plain messages (the per-session constant takes the
        difference there), plus the unreadable part's tokens (`tests.scripts.codex_fidelity`)."""
        fit = self.family_fit

        def size(kept: tuple[Message, ...]) -> Written:
            # (`is_summary`, inlined: asked of every message of every compaction's result)
            summaries = [m for m in kept if m.source_id == SUMMARY_SOURCE_ID]
            if not summaries:
                return NOTHING_WRITTEN
            fresh = [i for i, m in enumerate(kept) if is_summary(m) and m.text() in self._unreadable]
            if fresh:
                hidden = self.unreadable_scale * self._unreadable[kept[fresh[-1]].text()]
                if not self.fresh_prompt:
                    return Written(0.0, hidden)
                estimate = sum(map(self.message_tokens, kept[: fresh[-1] + 1]))
                return Written(estimate, estimate + hidden)
            if fit is None:
                return NOTHING_WRITTEN
            return Written(
                sum(map(self.message_tokens, summaries)), sum(fit.message_tokens(m, self.framing, self.cache) for m in summaries)
            )

        if fit is None and not self._unreadable:
            return NOTHING_WRITTEN
        return self._written.of(messages, size)

    @property
    def counts_newer(self) -> bool:
        """Whether a count from the provider's usage adds the messages after it (`Hybrid.newer`)."""
        return getattr(self.estimator, "newer", True)

    @property
    def uses_usage(self) -> bool:
        """Whether the estimator starts from the provider's last reported count when there is one."""
        return isinstance(self.estimator, Hybrid)

    def from_sum(self, messages_sum: float) -> int:
        """A whole prompt's estimate from the sum of its messages' estimates (added in order from 0,
        as `sum` adds them): the local estimate plus the per-session constant."""
        return round(self.local.prompt_overhead + messages_sum) + self.offset

    def from_usage(self, reported: int, newer_sum: float) -> int:
        """A whole prompt's estimate from the provider's count of its prefix (prompt + output of the
        last call) and the summed estimates of the messages after that prefix (not added by a
        hybrid that counts the last usage alone: `Hybrid.newer`)."""
        return round(reported + newer_sum) if self.counts_newer else round(reported)

    def __call__(self, context: Context) -> int:
        """The estimated prompt tokens of the whole context, as the trigger sees it."""
        if self.uses_usage and context.known_usage is not None:
            upto, reported = context.known_usage
            return self.from_usage(reported, sum(self.message_tokens(m) for m in context.messages[upto:]))
        return self.from_sum(sum(self.message_tokens(m) for m in context.messages))
