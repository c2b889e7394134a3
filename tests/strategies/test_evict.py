"""The recoverability-aware eviction strategy (strategies/evict.py) on real sessions of every bundled dataset."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from compactlab.contract import Context
from compactlab.runs.run_config import default_strategies
from compactlab.runs.sweep import DEFAULT_STRATEGIES
from compactlab.sessions.messages import pinned_indexes
from compactlab.sessions.model import Message, Session, ToolCallPart, ToolResultPart
from compactlab.sessions.tool_effects import call_effect
from compactlab.strategies.evict import MARK, TIERS, Evict
from compactlab.strategies.registry import describe_all, get_strategy
from tests.strategy_sessions import DATASETS, assert_no_orphans, counter, each, request_for, run


def _changed(before: tuple[Message, ...], after: tuple[Message, ...]) -> list[tuple[int, int]]:
    """(message, part) of every part the strategy rewrote (it removes no message)."""
    assert len(before) == len(after)
    return [
        (i, j)
        for i, (b, a) in enumerate(zip(before, after))
        if b is not a
        for j, (p, q) in enumerate(zip(b.parts, a.parts))
        if p != q
    ]


@pytest.mark.parametrize("dataset", DATASETS)
def test_it_rewrites_only_older_tool_outputs_and_write_calls_into_stubs_that_say_how_to_get_them_back(dataset: str) -> None:
    strategy = Evict()

    def check(session: Session) -> None:
        before = session.messages
        after = run(strategy, session).context.messages
        assert_no_orphans(after)
        steps = [i for i, m in enumerate(before) if m.role == "assistant"]
        protected_from = steps[-strategy.keep_last_steps] if len(steps) >= strategy.keep_last_steps else 0
        calls = {p.id: p for m in before for p in m.parts if isinstance(p, ToolCallPart)}
        changed = _changed(before, after)
        evicted.append(len(changed))
        for i, j in changed:
            assert i < protected_from and i not in pinned_indexes(before) and before[i].role in ("tool", "assistant")
            old, new = before[i].parts[j], after[i].parts[j]
            if isinstance(old, ToolResultPart):
                assert isinstance(new, ToolResultPart) and new.call_id == old.call_id and new.content.startswith(MARK)
                effect = call_effect(calls[old.call_id])
                if "superseded" not in new.content and effect.effect != "write":  # a recoverable output: how to redo it
                    assert (effect.command or "")[:40] in new.content and all(p in new.content for p in effect.paths[:3])
            else:  # an episode's write call: its arguments become the stub, naming the file
                assert isinstance(old, ToolCallPart) and isinstance(new, ToolCallPart) and call_effect(old).effect == "write"
                assert (new.id, new.name) == (old.id, old.name) and call_effect(old).paths[0] in json.loads(new.arguments)[
                    "evicted"
                ]
        # User messages are never touched.
        assert all(
            a is b for a, b in zip(before, after) if b.role == "user" and not any(isinstance(p, ToolResultPart) for p in b.parts)
        )

    evicted: list[int] = []
    each(dataset, check)
    # Some sessions hold nothing it may evict (m-claude d8a3fa84: background-shell output, runs); most do.
    assert sum(1 for n in evicted if n) > len(evicted) / 2, evicted


@pytest.mark.parametrize("dataset", DATASETS)
def test_it_evicts_in_tier_order_oldest_first_and_stops_at_the_target(dataset: str) -> None:
    strategy = Evict()

    def check(session: Session) -> None:
        messages = session.messages
        count = counter(session)
        order = sorted(strategy._candidates(messages), key=lambda c: (c.tier, c.message, c.part))
        # A target the first tier alone can reach: only a prefix of the eviction order is rewritten.
        target = count(messages) - 2_000
        after = run(strategy, session, target=target).context.messages
        changed = set(_changed(messages, after))
        positions = [k for k, c in enumerate(order) if (c.message, c.part) in changed]
        if not order:
            return  # nothing it may evict (the test above counts such sessions)
        assert positions, "nothing evicted"
        skipped = [c for c in order[: positions[-1]] if (c.message, c.part) not in changed]
        # Skipped before the last one evicted: only outputs no larger than their stub.
        for c in skipped:
            part = messages[c.message].parts[c.part]
            assert isinstance(part, ToolResultPart) and len(part.content) <= len(c.stub) + 200, c
        assert count(after) <= target
        # Without its last eviction it would not have reached the target: it stops as soon as it can.
        last = order[positions[-1]]
        parts = after[last.message].parts
        undone = replace(
            after[last.message], parts=(*parts[: last.part], messages[last.message].parts[last.part], *parts[last.part + 1 :])
        )
        assert count((*after[: last.message], undone, *after[last.message + 1 :])) > target

    each(dataset, check)


@pytest.mark.parametrize("dataset", DATASETS)
def test_running_it_again_evicts_nothing_twice(dataset: str) -> None:
    def check(session: Session) -> None:
        once = run(Evict(), session).context.messages
        again = Evict().compact(Context(messages=once), request_for(session, once)).context.messages
        for i, j in _changed(once, again):
            part = once[i].parts[j]
            assert not (isinstance(part, ToolResultPart) and part.content.startswith(MARK)), f"message {i} evicted twice"

    each(dataset, check)


def test_it_is_registered_with_its_source_and_deviations_and_joins_the_default_run_and_the_sweep() -> None:
    assert isinstance(get_strategy("evict"), Evict)
    [row] = [r for r in describe_all() if r["name"] == "evict"]
    assert "arXiv:2606.11213" in row["source"] and "annotates" in row["deviations"]
    assert set(row["parameters"]) == {"keep_last_steps", "evict_episodes", "stub"}
    assert "evict" in {c.strategy for c in default_strategies()} and "evict" in DEFAULT_STRATEGIES
    assert TIERS == ("recoverable", "superseded", "episode")
