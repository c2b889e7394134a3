"""The pi preset against pi's own code: the oracles recorded from pi-mono's compaction functions on the
bundled pi sessions (tests/data/oracles/pi, made by `python -m tests.scripts.engine_oracle pi`).
No node here: the tests read the committed oracles and run the preset through compactlab's API."""

from __future__ import annotations

import pytest

from compactlab.contract import CompactionRequest, Context
from compactlab.replay.setting import estimator_of
from compactlab.replay.uncompacted import run_starts
from compactlab.strategies.registry import get_strategy
from compactlab.tokens.metering import Meter
from tests.scripts.oracles import pi_figures
from tests.scripts.oracles.pi_figures import (
    ORACLES,
    Oracle,
    closed_loop_calls,
    first_apart,
    preset_cut,
    seen_at,
    trigger_of,
)

FOUND = pi_figures.oracles()
PI = get_strategy("pi")


def test_the_oracles_are_pi_monos_own_at_a_recorded_commit() -> None:
    assert len(FOUND) == len(list(ORACLES.glob("*.json"))) == 2
    for path in ORACLES.glob("*.json"):
        document = pi_figures.read_oracle(path)
        assert document["repository"] == "badlogic/pi-mono" and document["licence"].startswith("MIT")
        assert document["commit"].startswith("83378aad")


@pytest.mark.parametrize("oracle", FOUND, ids=lambda o: o.session.id)
def test_the_preset_counts_every_message_as_pis_estimate_tokens(oracle: Oracle) -> None:
    # Thinking counted, JSON.stringify's spacing for tool arguments, Math.ceil per message.
    meter = Meter(oracle.session, estimator_of(PI))
    assert [meter.count([m]) for m in oracle.session.messages] == oracle.estimates


@pytest.mark.parametrize("oracle", FOUND, ids=lambda o: o.session.id)
def test_the_preset_keeps_the_first_message_pi_keeps_at_every_point(oracle: Oracle) -> None:
    checks = [c for c in oracle.checks if c["kind"] in ("prompt", "call") and c.get("first") is not None]
    assert len(checks) > 400
    for check in checks:
        pis = check["first"] if check["summarized"] or check["prefix"] else 0  # nothing summarized: all kept
        assert preset_cut(PI, oracle.session, check["at"]) == pis, check


def test_when_the_budget_is_crossed_inside_the_newest_tool_results_pi_keeps_everything() -> None:
    # Over 20,000 tokens, reached inside the newest tool results (no cut point at or after them): pi's
    # findCutPoint keeps cutPoints[0], the whole history; the preset summarized all of it before issue 42.
    found = [
        (o, c)
        for o in FOUND
        for c in o.of("call")
        if c["first"] == 0 and c["summarized"] == c["prefix"] == 0 and sum(o.estimates[: c["at"]]) >= 20_000
    ]
    assert [(o.session.id, c["at"]) for o, c in found] == [("pi-mono-before-compaction", 4)]
    for oracle, check in found:
        assert oracle.session.messages[check["at"] - 1].role == "tool"
        assert preset_cut(PI, oracle.session, check["at"]) == 0


@pytest.mark.parametrize("oracle", FOUND, ids=lambda o: o.session.id)
def test_the_kept_tail_is_pis_size_by_pis_estimate(oracle: Oracle) -> None:
    for check in oracle.of("prompt"):
        mine = preset_cut(PI, oracle.session, check["at"])
        assert sum(oracle.estimates[mine : check["at"]]) == check["kept_tokens"], check["at"]


@pytest.mark.parametrize("window", [None, pi_figures.SIMULATED], ids=["real", "simulated-64k"])
def test_the_trigger_fires_at_pis_check_points_as_pis_should_compact(window: int | None) -> None:
    # At a simulated window pi keeps its 16,384 reserve: the preset's harness runs it as written.
    for oracle in FOUND:
        size, trigger = trigger_of(PI, oracle.session, window)
        assert trigger.fires_from(size) == oracle.compacts_above(size) + 1
        for check in oracle.of("prompt"):
            fires = trigger.check(seen_at(PI, oracle, check), size) is not None
            assert fires == check["compacts"][str(size)], (oracle.session.id, check["at"])


def test_the_preset_checks_only_where_pi_checks_between_prompt_runs() -> None:
    # pi asks shouldCompact at a run's end and before the next prompt, never inside a tool loop
    # (harness checks "run-start"). Asked before every call, the preset fired 9 calls early on
    # compact.jsonl at 64,000 and compacted before 3 of the 30 calls either compacts before in closed loop.
    assert PI.harness.checks == "run-start"
    for window in (pi_figures.REAL, pi_figures.SIMULATED):
        apart = [first_apart(PI, o, window) for o in FOUND]
        # None: pi-mono-before-compaction's production agent compacted (message 352) before either fires at 200,000.
        assert apart == ([0, None] if window == pi_figures.REAL else [0, 0]), window
        for oracle in FOUND:
            mine, theirs = closed_loop_calls(PI, oracle, window)
            assert mine == theirs and mine, (oracle.session.id, window)


@pytest.mark.parametrize("oracle", FOUND, ids=lambda o: o.session.id)
def test_the_preset_never_compacts_inside_a_tool_loop_but_on_overflow(oracle: Oracle) -> None:
    starts = run_starts(oracle.session.messages)
    rows = pi_figures.replayed_at(PI, oracle.session, pi_figures.SIMULATED).compactions
    assert "threshold" in {r.event.reason for r in rows} <= {"threshold", "silent_overflow"}
    for row in rows:
        assert starts[row.call] == (row.event.reason == "threshold"), row.call
        if row.event.reason == "threshold":  # the call right after the user's prompt
            assert oracle.session.messages[row.message_index - 1].role == "user"


def test_a_split_turn_with_nothing_before_it_gets_the_turn_summary_alone_a_listed_deviation() -> None:
    # pi writes "No prior history." as the history part there (compaction.ts:718-735); the preset does not.
    oracle, check = next((o, c) for o in FOUND for c in o.of("call") if c["split"] and c["summarized"] == 0 and c["prefix"])
    meter = Meter(oracle.session, estimator_of(PI))
    request = CompactionRequest(
        reason="threshold", window=200_000, target_tokens=100_000, count_tokens=meter.count, pin_task=False
    )
    result = PI.compact(Context(messages=oracle.session.messages[: check["at"]]), request)
    assert result.context.summary and "No prior history." not in result.context.summary
    assert preset_cut(PI, oracle.session, check["at"]) == check["first"]
