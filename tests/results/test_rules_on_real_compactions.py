"""Rules chosen on real compactions are measured on sessions they were not chosen on, and real
compactions whose next prompt cannot test the replay are named, not silently mixed in."""

from __future__ import annotations

from dataclasses import replace

from compactlab.replay.replay import replay
from compactlab.replay.setting import Setting
from compactlab.sessions.context_readings import fidelity_exclusions
from compactlab.sessions.importers import load_file
from tests.conftest import bundled
from tests.scripts.real_compactions import SHIPPED, excluded, fidelity_rows, grid, rule_report
from tests.scripts.rule_choice import Figures, choose, loso

AUTO = load_file(bundled("m-claude", "3af9b1a7"), lenient=True)[0]
PI = load_file(bundled("pi-sessions", "pi-mono-before-compaction"))[0]


def test_leaving_a_session_out_measures_it_with_the_rule_the_others_chose() -> None:
    grid_errors = {
        "a": {"s1": [0.01], "s2": [0.01], "s3": [0.30]},
        "b": {"s1": [0.20], "s2": [0.02], "s3": [0.02]},
    }
    assert choose(grid_errors, {"s1", "s2", "s3"}) == "a"  # 2 of 3 within ±5%, against b's 2 of 3 with a larger median
    choice = loso(grid_errors)
    # Without s1 or s2, the two rules tie on the share and b's median is smaller; without s3, a fits both.
    assert choice.chosen_without == {"s1": "b", "s2": "b", "s3": "a"}
    assert choice.out_of_sample == Figures.of([0.20, 0.02, 0.30])  # each session under the others' choice
    assert choice.in_sample.within > choice.out_of_sample.within


def test_the_grid_on_real_compactions_lists_the_shipped_rule_first_and_prints_both_figures() -> None:
    rules = grid()
    assert rules[0] == SHIPPED and len(set(rules)) == len(rules) == 32
    text = rule_report([AUTO, PI])
    assert "in sample" in text and "out of sample" in text and "\n  pi: in sample" in text and "\n  Anthropic: in sample" in text
    assert text.startswith("\n3 distinct real compactions; 0 rows left out")
    # The shipped rule and another give different predictions on the real auto-compaction.
    other = next(r for r in rules if not r.reattach.created_files)
    assert fidelity_rows(AUTO)[0]["fidelity_predicted"] != fidelity_rows(AUTO, other)[0]["fidelity_predicted"]


def test_a_next_call_to_another_model_is_excluded_with_its_reason() -> None:
    at = PI.compactions[1].at_message
    after = next(i for i in range(at, len(PI.messages)) if PI.messages[i].call is not None)
    message = PI.messages[after]
    assert message.call is not None
    edited = replace(message, call=replace(message.call, model="claude-sonnet-4-5"))
    other = replace(PI, messages=(*PI.messages[:after], edited, *PI.messages[after + 1 :]))
    assert fidelity_exclusions(PI) == {}
    assert fidelity_exclusions(other) == {at: "the next call went to another model (claude-opus-4-5 → claude-sonnet-4-5)"}
    [(call, reason)] = excluded(other)
    assert reason.startswith("the next call went to another model") and call > 0
    # The replay names it in the compaction's row.
    [row] = [r for r in replay(other, Setting("recorded", "recorded")).compactions if r.message_index == at]
    assert row.note.endswith(f"its next prompt is no test of the replay: {reason}") and row.fidelity_recorded is None
    assert len(fidelity_rows(other)) == len(fidelity_rows(PI)) - 1  # its fidelity is not in the figure


def test_back_to_back_compactions_are_excluded() -> None:
    first = PI.compactions[0]
    second = replace(first, at_message=first.at_message + 2, kept=())  # no call between the two
    close = replace(PI, compactions=(first, second))
    assert fidelity_exclusions(close) == {second.at_message: "back to back with the previous compaction (0 call(s) between them)"}
