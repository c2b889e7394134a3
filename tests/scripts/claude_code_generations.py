"""Choosing the claude-code@2.1 trigger: one reserve from a version on, leaving one repository out.

    python -m tests.scripts.claude_code_generations PATH...

The claude-code preset of the first round (`claude-code@2026-06-07`) keeps a reserve per Claude Code
version range, chosen on the real automatic compactions of each range (`tests.scripts.trigger_choice`).
Six ranges fitted to a dozen repositories agree with 98% of them in sample and with about half out of
sample: a range a single repository covers falls back to the documented 45,000 when that repository
is left out. Claude Code 2.1 states one rule instead ("min(output limit, 20,000) + 13,000",
anthropics/claude-code#23409): a generation rule has two numbers, not twelve.

The rule measured here (`generation_trigger`): before 2.0.58 the output limit + 13,000 (45,000;
77,000 for claude-opus-4-5, whose output limit was 64,000: #12004's "77.0k"); from 2.0.58 on 45,000
for every model; from version `first` on one reserve `reserve`. `first` (a version the cases hold)
and `reserve` (30,000-40,000) are chosen on the cases by the most within ±2 calls, then the reserve
nearest the documented 33,000, then the earliest `first`; the honest figure is out of sample: per
repository, the rule chosen on the others measured on its compactions. The same cases, counted once,
as `tests.scripts.trigger_choice` reads them; printed per model family beside the per-version table's.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from compactlab.contract import Trigger, version_key
from compactlab.results.real_engines import NEAR_CALLS
from compactlab.sessions.loading import load_inputs
from compactlab.strategies.presets_today import claude_code_21_trigger
from tests.scripts.trigger_choice import (
    Case,
    apart_by,
    cases,
    choose_table,
    figures,
    missed,
    repositories_of,
    trigger_of_table,
)

DOCUMENTED_21 = 33_000  # min(output limit, 20,000) + 13,000 (anthropics/claude-code#23409)
RESERVES = range(30_000, 40_001, 1_000)


def generation_trigger(first: str, reserve: int) -> Trigger:
    """The generation rule with the 2.1 reserve `reserve` from version `first` on: the shipped preset's
    (`claude_code_21_trigger`), with other numbers."""
    return claude_code_21_trigger(first, reserve)


def candidates(found: Sequence[Case], reserves: Sequence[int] = RESERVES) -> list[tuple[str, int]]:
    firsts = sorted({c.version for c in found if c.version and version_key(c.version) >= (2, 1)}, key=version_key)
    return [(first, reserve) for first in firsts for reserve in reserves]


def hits(rule: tuple[str, int], found: Sequence[Case]) -> int:
    trigger = generation_trigger(*rule)
    return sum(abs(apart_by(trigger, case)) <= NEAR_CALLS for case in found)


def choose(found: Sequence[Case], rules: Sequence[tuple[str, int]]) -> tuple[str, int]:
    """The rule with the most hits on `found`; then the reserve nearest the documented one, then the earliest version."""
    order = {rule: i for i, rule in enumerate(rules)}
    return max(rules, key=lambda r: (hits(r, found), -abs(r[1] - DOCUMENTED_21), -order[r]))


def held_out(found: Sequence[Case], rules: Sequence[tuple[str, int]]) -> tuple[dict[Case, float], list[str]]:
    """Each case's calls apart under the rule chosen on the other repositories, and the choices made."""
    held: dict[Case, float] = {}
    choices = []
    for repository in sorted({c.repository for c in found}):
        rule = choose([c for c in found if c.repository != repository], rules)
        choices.append(f"    without {repository}: from {rule[0]}, reserve {rule[1]:,}")
        held.update((c, apart_by(generation_trigger(*rule), c)) for c in found if c.repository == repository)
    return held, choices


def report(found: Sequence[Case]) -> str:
    fitted, fixed = candidates(found), candidates(found, (DOCUMENTED_21,))
    chosen, chosen_fixed = choose(found, fitted), choose(found, fixed)
    held, choices = held_out(found, fitted)
    held_fixed, choices_fixed = held_out(found, fixed)
    table_held: dict[Case, float] = {}
    for repository in sorted({c.repository for c in found}):
        table = trigger_of_table(choose_table([c for c in found if c.repository != repository]))
        table_held.update((c, apart_by(table, c)) for c in found if c.repository == repository)
    table = trigger_of_table(choose_table(found))
    lines = [
        f"{len(found)} distinct automatic compactions by Claude Code, {len({c.repository for c in found})} repositories",
        f"reserve and first version both chosen: on every repository from {chosen[0]} on, reserve {chosen[1]:,}; leaving each out:",
        *choices,
        f"the documented reserve (33,000), the first version chosen: on every repository from {chosen_fixed[0]}; leaving each out:",
        *choices_fixed,
        "",
        "within ±2 calls of the real automatic compaction:",
    ]
    for family in ("Anthropic", "other", "all"):
        of = [c for c in found if family in ("all", c.family)]
        lines += [
            f"  {family}:",
            f"    per-version table (claude-code@2026-06-07): in sample {figures([apart_by(table, c) for c in of])}, "
            f"leave one repository out {figures([table_held[c] for c in of])}",
            f"    generation rule, reserve fitted: in sample {figures([apart_by(generation_trigger(*chosen), c) for c in of])}, "
            f"leave one repository out {figures([held[c] for c in of])}",
            f"    generation rule, documented 33,000 (claude-code@2.1): in sample "
            f"{figures([apart_by(generation_trigger(*chosen_fixed), c) for c in of])}, leave one repository out "
            f"{figures([held_fixed[c] for c in of])}",
        ]
    lines.append("\nleft out of sample and missed by the generation rule with the documented reserve:")
    lines.extend(missed(found, held_fixed))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.scripts.claude_code_generations", description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="+", help="folders or files of Claude Code sessions")
    args = parser.parse_args(argv)
    sessions = list(load_inputs(args.inputs, lenient=True).sessions)
    print(report(cases(sessions, repositories_of(args.inputs, sessions))[0]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
