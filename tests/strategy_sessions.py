"""Real sessions for the strategy tests, and what every strategy test checks them with.

Every bundled dataset with tool use is read; a sample of its sessions (the largest ones, plus one
with skipped damaged records, one sub-agent session and one without any user message, where the
dataset has them) is compacted as the context at the session's last call, towards a small target
(30% of its chars/4 size).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import cache

from compactlab.contract import CompactionRequest, CompactionResult, Context
from compactlab.sessions.loading import load_inputs
from compactlab.sessions.messages import turn_starts
from compactlab.sessions.model import Message, Session, ToolCallPart, ToolResultPart
from compactlab.strategies.masking import ObservationMasking
from compactlab.strategies.pipeline import Pipeline
from compactlab.strategies.prune import Prune
from compactlab.strategies.registry import resolved
from compactlab.strategies.truncate import Truncate
from compactlab.tokens.estimators import estimate, get_estimator
from compactlab.tokens.framing import framing_for
from compactlab.tokens.tokenizers import TokenCache

DATASETS = ("claude-code-log", "m-claude", "mini-swe-agent-pr816")
PER_DATASET = 4
TARGET_SHARE = 0.3
_TOKENS = TokenCache()


@cache
def sessions(dataset: str) -> tuple[Session, ...]:
    return load_inputs([dataset]).sessions


def size_chars(session: Session) -> int:
    return sum(len(m.text()) for m in session.messages)


def results_of(messages: Sequence[Message]) -> list[ToolResultPart]:
    return [p for m in messages for p in m.parts if isinstance(p, ToolResultPart)]


@cache
def sample(dataset: str) -> tuple[Session, ...]:
    """The largest sessions with tool use, plus the largest with skipped (damaged) records, the
    largest sub-agent session and one without any user message, where the dataset has them."""
    with_tools = sorted((t for t in sessions(dataset) if results_of(t.messages)), key=lambda t: (-size_chars(t), t.id))
    chosen = [t for t in with_tools if not t.is_subagent][:PER_DATASET]
    for special in (
        lambda t: bool(t.skipped),
        lambda t: t.is_subagent,
        lambda t: not turn_starts(t.messages),
    ):
        extra = [t for t in with_tools if special(t) and t not in chosen][:1]
        chosen += extra
    return tuple(chosen)


def each(dataset: str, check: Callable[[Session], None]) -> None:
    """Run `check` on every sampled session of `dataset`, naming the session when it fails."""
    chosen = sample(dataset)
    assert len(chosen) >= PER_DATASET
    for session in chosen:
        try:
            check(session)
        except AssertionError as failure:
            raise AssertionError(f"{dataset} session {session.id}: {failure}") from failure


def by_id(dataset: str, prefix: str) -> Session:
    [found] = [t for t in sessions(dataset) if t.id.startswith(prefix) and not t.is_subagent]
    return found


def counter(session: Session) -> Callable[[Sequence[Message]], int]:
    estimator, framing = get_estimator("chars/4"), framing_for(session.source_format)
    return lambda messages: estimate(estimator, messages, framing, _TOKENS)


def request_for(session: Session, messages: Sequence[Message] | None = None, target: int | None = None) -> CompactionRequest:
    count = counter(session)
    messages = session.messages if messages is None else messages
    if target is None:
        target = int(TARGET_SHARE * count(messages))
    return CompactionRequest(reason="threshold", window=200_000, target_tokens=target, count_tokens=count)


def run(strategy, session: Session, messages: Sequence[Message] | None = None, target: int | None = None) -> CompactionResult:
    messages = tuple(session.messages if messages is None else messages)
    # A strategy built by hand: the strategies its settings name are built as the registry builds them.
    return resolved(strategy).compact(Context(messages=messages), request_for(session, messages, target))


def part_tokens(session: Session, message: Message, part: ToolResultPart) -> int:
    """Tokens of one tool result as the strategies count it: its own message minus an empty one."""
    count = counter(session)
    return count([replace(message, parts=(part,))]) - count([replace(message, parts=())])


STRATEGIES = {
    "truncate": Truncate(),
    "prune": Prune(),
    "observation-masking": ObservationMasking(),
    "pipeline": Pipeline(stages=("prune", "observation-masking", "truncate")),
}


def assert_no_orphans(messages: Sequence[Message]) -> None:
    called: set[str] = set()
    for index, message in enumerate(messages):
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                called.add(part.id)
            elif isinstance(part, ToolResultPart):
                assert part.call_id in called, f"message {index}: tool result {part.call_id} has no earlier call"


def assert_no_dropped_results(before: Sequence[Message], after: Sequence[Message]) -> None:
    """No kept tool call lost its result while a later message was kept."""
    had_result = {p.call_id for p in results_of(before)}
    kept_results = {p.call_id for p in results_of(after)}
    for index, message in enumerate(after[:-1]):
        for part in message.parts:
            if isinstance(part, ToolCallPart) and part.id in had_result:
                assert part.id in kept_results, f"message {index}: call {part.id} kept, its result dropped"
