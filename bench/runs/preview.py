"""`compactlab compact`: run one strategy once on one session, to see exactly what it does.

Its sizes are the run's (issue 27 §3): the trigger sees what a replay's trigger sees before the call
(`Uncompacted.trigger_tokens`), and a compaction's before and after are measured as a replay measures
a prompt at that call (`compactlab.replay.prompt_size.measured_size` with the call's ratio), not with
the bare estimator, which put them about 30% below `run`'s on Claude Code sessions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

from compactlab.compaction.engine import CompactionEvent, Engine
from compactlab.contract import Context, Summarizer, Trigger
from compactlab.replay.prompt_size import measured_size
from compactlab.replay.setting import estimator_of, harness_of, window_and_trigger
from compactlab.replay.uncompacted import Uncompacted, uncompacted
from compactlab.sessions.model import Message, Session, part_to_dict
from compactlab.strategies.prompting import renders_prompt
from compactlab.strategies.registry import get_strategy
from compactlab.tokens.context_windows import ContextWindows
from compactlab.tokens.metering import Meter


@dataclass(frozen=True)
class Preview:
    session: str
    strategy: str
    call: int  # which recorded call (0-based) the context was taken before
    chosen_by: str  # "--at" or "trigger" or "last call (trigger never fired)"
    window: int
    trigger: Trigger
    estimator: str
    before: Context
    after: Context
    event: CompactionEvent
    prompt_rendered: bool = False  # the strategy's summarizer read its prompt (else its hash names no prompt used)


def compact(
    session: Session,
    strategy_name: str,
    at_call: int | None = None,
    estimator: str | None = None,
    windows: ContextWindows | None = None,
    summarizer: Summarizer | None = None,
) -> Preview:
    strategy = get_strategy(strategy_name)
    estimator_name = estimator_of(strategy, estimator)
    positions = [i for i, m in enumerate(session.messages) if m.call is not None]
    if not positions:
        raise ValueError(f"{session.source_path}: no recorded LLM calls, so there is no context to compact")
    model = session.calls[0].model
    window, trigger = window_and_trigger(strategy, None, windows or ContextWindows(), model, session.context_window)
    meter = Meter(session, estimator_name)
    harness = harness_of(strategy)
    base = uncompacted(meter, window, harness.anchor_output, harness.checks)
    if at_call is not None:
        if not 0 <= at_call < len(positions):
            raise ValueError(f"--at {at_call}: the session has calls 0 to {len(positions) - 1}")
        call, chosen_by = at_call, "--at"
    else:
        call, chosen_by = _first_firing(base, trigger, window)
    context = _context_before(session, positions, call)
    engine = Engine(
        strategy=strategy,
        window=window,
        meter=_measured_at(base, call),
        count_tokens=meter.count,
        trigger=trigger,
        summarizer=summarizer,
        harness=harness,
        text_tokens=meter.text_counter(),
    )
    if chosen_by == "trigger":
        after, event = engine.before_call(context, base.trigger_tokens[call])
    else:
        after, event = engine.emergency(context, reason="manual")
    assert event is not None  # a fresh engine always attempts the first compaction
    return Preview(
        session.id,
        strategy_name,
        call,
        chosen_by,
        window,
        trigger,
        estimator_name,
        context,
        after,
        event,
        renders_prompt(strategy),
    )


def _context_before(session: Session, positions: list[int], call: int) -> Context:
    index = positions[call]
    known = None
    # After a real compaction the recorded usage describes the production agent's compacted
    # prompt, not this uncompacted history, so it cannot anchor the estimate.
    compacted_before = any(marker.at_message <= index for marker in session.compactions)
    if call > 0 and not compacted_before:
        previous = session.messages[positions[call - 1]].call
        assert previous is not None  # positions are the calls' messages
        known = (positions[call - 1] + 1, previous.prompt_tokens + previous.output_tokens)
    return Context(messages=session.messages[:index], known_usage=known)


def _measured_at(base: Uncompacted, call: int) -> Callable[[Context], int]:
    """A context's size at recorded call `call`, as a replay measures it there (the engine's meter)."""
    meter = base.meter
    overhead = meter.local.prompt_overhead + meter.offset

    def size(context: Context) -> int:
        estimated = sum(meter.message_tokens(m) for m in context.messages)
        return measured_size(overhead, estimated, base.ratios[call], meter.written(context.messages))

    return size


def _first_firing(base: Uncompacted, trigger: Trigger, window: int) -> tuple[int, str]:
    """The first call whose size, as a replay's trigger sees it, fires `trigger` (among the calls the
    trigger is asked before, `Harness.checks`)."""
    for call, tokens in enumerate(base.trigger_tokens):
        if base.asks_trigger(call) and trigger.check(tokens, window):
            return call, "trigger"
    return len(base.trigger_tokens) - 1, "last call (the trigger never fired in this session)"


def preview_json(result: Preview) -> dict:
    return {
        "session": result.session,
        "strategy": result.strategy,
        "call": result.call,
        "chosen_by": result.chosen_by,
        "window": result.window,
        "trigger": asdict(result.trigger),
        "estimator": result.estimator,
        "event": asdict(result.event),
        "prompt_rendered": result.prompt_rendered,
        "context": [_message_json(m) for m in result.after.messages],
        "summary": result.after.summary,
    }


def _message_json(message: Message) -> dict:
    return {"role": message.role, "source_id": message.source_id, "parts": [part_to_dict(p) for p in message.parts]}


def format_preview(result: Preview, width: int = 160) -> str:
    e = result.event
    head = f"{result.session}: {result.strategy} before call {result.call} ({result.chosen_by}); window {result.window:,}, estimator {result.estimator}"
    if not e.changed:  # no compaction: one set of numbers, the context's size, and why
        lines = [
            head,
            f"no compaction: {result.strategy} changed nothing ({e.note}); the context stays {e.tokens_before:,} tokens, "
            f"{e.messages_before} messages",
            "",
            "context (unchanged):",
        ]
    else:
        lines = [
            head,
            f"event: reason={e.reason} tokens {e.tokens_before:,} → {e.tokens_after:,} ({100 * e.reduction:.1f}% removed), "
            f"messages {e.messages_before} → {e.messages_after} (removed {e.messages_removed})"
            + (f", prompt {e.prompt_hash}" if e.prompt_hash and result.prompt_rendered else "")
            + (f", FAILED: {e.failed}" if e.failed else ""),
            f"note: {e.note}",
            "",
            "compacted context:",
        ]
    for index, message in enumerate(result.after.messages):
        text = " ".join(message.text().split())
        lines.append(f"  [{index}] {message.role:9} {text[:width]}{'…' if len(text) > width else ''}")
    if result.after.summary:
        lines += ["", "summary:", result.after.summary]
    return "\n".join(lines)
