"""A preset's rules, one by one: what its source does (with the file and line, or the document's
section), what the preset does, and why where the two differ.

`compactlab.strategies.presets` attaches these to its presets (a preset's `deviations` is made from
its rules, so the two cannot disagree); `python -m tests.scripts.preset_table` writes them as
docs/preset-rules.md, and tests/strategies/test_preset_rules.py checks that file is up to date and that every
rule naming a test names one that exists. Sources, read for this table:
- the seed documents in ../shared/seeds/ (by section);
- badlogic/pi-mono at 83378aad: packages/coding-agent/src/core/compaction/compaction.ts ("compaction.ts")
  and packages/coding-agent/src/core/agent-session.ts ("agent-session.ts");
- sst/opencode at 31e22f65: packages/opencode/src/session/overflow.ts and compaction.ts (its reserve: window − min(output
  limit, 32,000) − min(20,000, that), overflow.ts:14-19; the anomalyco/opencode snapshots 08f74b9 and
  0d51724 reserve 32,000 and 20,000 there: opencode changed it between versions);
- openai/codex at 0100b103: codex-rs/core/src/compact.rs, and codex.rs's turn loop;
- All-Hands-AI/OpenHands: openhands/memory/condenser/impl/llm_summarizing_condenser.py ("condenser.py").
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    """One rule of a design. `deviation`: why the preset does otherwise ("" when it does as the source
    does). `test`: the test that checks the preset's behaviour on a real session ("" when none does)."""

    rule: str
    source: str
    does: str
    deviation: str = ""
    test: str = ""

    @property
    def matches(self) -> bool:
        return not self.deviation


SEED = "tests/strategies/test_seed_rules.py::"
ANCHOR = "tests/strategies/test_anchor_rules.py::"
PRESET = "tests/strategies/test_preset_rules.py::"
SUMMARY = "tests/strategies/test_summarizing_strategies.py::"
CHECKS = "tests/strategies/test_preset_rule_checks.py::"
REATTACH = "tests/strategies/test_reattach.py::"
OFFLINE = (
    'offline a replay has no LLM: the extractive summarizer stands in; `summarizer = "llm"` with a [summarizer] table '
    "uses the run's LLM"
)
PROMPT_ANCHOR = "harness anchor_output off: the last prompt alone, the reply estimated as a new message"


def harness_rules(pin: str, guard: str, emergency: str, emergency_on: bool) -> tuple[Rule, ...]:
    """The harness rules every preset states (`compactlab.contract.Harness`): whether the task statement
    is pinned, whether a guard stops repeated weak compactions, and what an over-window request does.
    Each argument is where the source says so. A preset that keeps a harness default its source does
    not have says why in its own rule instead."""
    return (
        Rule(
            "the first user message is not kept verbatim apart from the rest",
            pin,
            "harness pin_task off",
            test=f"{PRESET}test_presets_do_not_pin_the_task",
        ),
        Rule(
            "no guard against compactions that remove little",
            guard,
            "harness loop_guard off",
            test=f"{PRESET}test_without_the_loop_guard_the_trigger_is_obeyed_again",
        ),
        Rule(
            "an over-window request is compacted and retried" if emergency_on else "an over-window request is not compacted",
            emergency,
            f"harness emergency {'on' if emergency_on else 'off'}",
            test=f"{PRESET}test_presets_set_the_emergency_path_as_their_sources",
        ),
    )


def llm_summary(rule: str, source: str) -> Rule:
    """The rule that a design's summary is written by an LLM, which an offline replay has not."""
    return Rule(
        rule,
        source,
        "the run's summarizer",
        OFFLINE,
        f"{CHECKS}test_offline_the_extractive_stand_in_writes_the_summary_and_the_runs_llm_otherwise",
    )


def appends_nothing(rule: str, source: str, does: str) -> Rule:
    """The rule that a design appends nothing of its own to the summary (no last request, no file lists)."""
    return Rule(rule, source, does, test=f"{PRESET}test_presets_append_only_what_their_sources_append")


def closing_rules(source: str, pin: str, guard: str, emergency: str, emergency_on: bool) -> tuple[Rule, ...]:
    """The rules that close a summarizing engine's table: nothing appended to its summary, the summary by
    an LLM (`source`: where the summary is asked), and the harness rules (`harness_rules`)."""
    return (
        appends_nothing("nothing appended to the summary", source, "track_files and append_last_request off"),
        llm_summary("summary by the session's model", source),
        *harness_rules(pin, guard, emergency, emergency_on),
    )
