"""Fidelity and re-acquisition at every real compaction of some datasets, with each modelling rule
chosen leave-one-session-out (issues 15 and 26).

    python -m tests.scripts.real_compactions [DATASET|PATH ...]

With no argument, every bundled dataset. For each compaction a production agent really made
(Claude Code's `compact_boundary`, pi's `compaction` entry, with a call or a `/context` reading
after it) the `recorded` strategy replays it, and this prints:
- the recorded size of the first prompt after it and the replay's prediction under the shipped
  rules, and the compactions whose next prompt cannot test the replay, each with why;
- the grid of candidate rules (what Claude Code re-attaches, how a summary is sized), each rule's
  figure on all compactions (in sample), and the figure of choosing a rule leave-one-session-out
  (`tests.scripts.rule_choice`): per session, the rule chosen on the others, measured on it;
- at every real compaction, a known size after it or not: the items the preservation metric
  marks lost and kept, how many of each the agent re-acquired
  before using them (`compactlab.scoring.reacquisition`), how many lost items were used before any
  message could bring them back, and the lost items never re-acquired;
- the lost items by recoverability (recoverable, unrecoverable, unknown) and how many of each the
  agent re-acquired before use.
Damaged records are skipped (lenient loading) and counted in the first line.
"""

from __future__ import annotations

import argparse
import itertools
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from compactlab.replay.replay import replay
from compactlab.replay.setting import Setting
from compactlab.results.fidelity_figures import FidelityFigures, family_of, left_out
from compactlab.results.metrics import compactions_frame, recorded_fidelity
from compactlab.scoring.reacquisition import COUNTS
from compactlab.scoring.recoverability import LABELS
from compactlab.sessions.context_readings import fidelity_exclusions
from compactlab.sessions.loading import load_inputs
from compactlab.sessions.model import Session
from compactlab.strategies.reattach import ReattachRules, rules_of
from compactlab.tokens.context_windows import ContextWindows
from compactlab.tokens.metering import Meter
from tests.scripts.rule_choice import Figures, Point, family, loso
from tests.scripts.trigger_choice import repositories_of


@dataclass(frozen=True)
class Rule:
    """One candidate way of modelling a real compaction: Claude Code's re-attachment rules and
    whether summaries are sized by the model family's fit (else at the session's ratio)."""

    reattach: ReattachRules
    summary_by_fit: bool = True

    def label(self) -> str:
        r = self.reattach
        return (
            f"created files {'in' if r.created_files else 'out'}, partial files {r.partial_files}, "
            f"file limit by {r.file_limit_count}, newest {r.newest}, summary by {'fit' if self.summary_by_fit else 'ratio'}"
        )


SHIPPED = Rule(ReattachRules())


def grid() -> list[Rule]:
    """Every candidate rule, the shipped one first (it wins ties)."""
    rules = [
        Rule(rules_of(created, partial, limit, newest), by_fit)
        for created, partial, limit, newest, by_fit in itertools.product(
            (True, False), ("slice", "left-out"), ("text", "prompt"), ("touched", "modified"), (True, False)
        )
    ]
    return [SHIPPED, *(r for r in rules if r != SHIPPED)]


def fidelity_rows(session: Session, rule: Rule = SHIPPED) -> list[dict]:
    """The recorded strategy's fidelity rows of one session under `rule`."""
    meter = Meter(session, "hybrid")
    if not rule.summary_by_fit:
        meter.family_fit = None
    settings = (
        ("created_files", rule.reattach.created_files),
        ("partial_files", rule.reattach.partial_files),
        ("file_limit_count", rule.reattach.file_limit_count),
        ("newest", rule.reattach.newest),
    )
    replayed = replay(session, Setting("recorded", "recorded", settings), ContextWindows(), meter=meter)
    frame = recorded_fidelity(compactions_frame(replayed.compactions))
    rows = {row.call: row for row in replayed.compactions}
    models = [m.call.model for m in session.messages if m.call is not None]
    return [
        {
            **record,
            "message_index": rows[record["call"]].message_index,
            "reacquisition": rows[record["call"]].reacquisition,
            "model": models[min(record["call"], len(models) - 1)] if models else None,
        }
        for record in frame.to_dict("records")
    ]


def excluded(session: Session) -> list[tuple[int, str]]:
    """The real compactions of `session` (by the message they come before) whose next prompt is
    no test of the replay, with why (the replay notes them so, and leaves them out of the figure)."""
    return sorted(fidelity_exclusions(session).items())


def measure(sessions: list[Session]) -> list[dict]:
    """One row per real compaction with a known size after it, under the shipped rule."""
    return [row for t in sessions if t.compactions for row in fidelity_rows(t)]


def reacquisition_rows(session: Session) -> list[dict]:
    """Re-acquisition at every real compaction the replay re-made under the shipped rule, a known
    size after it or not (the fidelity rows hold only those with one)."""
    replayed = replay(session, Setting("recorded", "recorded"), ContextWindows())
    return [
        {"session": session.id, "call": row.call, "reacquisition": row.reacquisition}
        for row in replayed.compactions
        if isinstance(row.reacquisition, dict)
    ]


def report(rows: list[dict], reacquired: list[dict] | None = None) -> str:
    """The fidelity rows, then re-acquisition at every real compaction (`reacquired`; default: the
    fidelity rows')."""
    lines = [f"{'session':<38}{'call':>5}{'recorded':>10}{'predicted':>11}{'error':>8}"]
    for row in rows:
        lines.append(
            f"{row['session'][:37]:<38}{row['call']:>5}{row['fidelity_recorded']:>10,}{row['fidelity_predicted']:>11,}"
            f"{100 * row['relative_error']:>+7.1f}%"
        )
    reacquired = rows if reacquired is None else reacquired
    lines.append(f"\nre-acquired before use at all {len(reacquired)} real compactions (lost / kept by the production summary):")
    totals = dict.fromkeys(COUNTS, 0)
    for row in reacquired:
        found = row["reacquisition"]
        if not isinstance(found, dict):
            continue
        for name in COUNTS:
            totals[name] += found[name]
        lines.append(
            f"  {row['session'][:37]:<38} lost {found['lost_reacquired']} of {found['lost']}, "
            f"kept {found['kept_reacquired']} of {found['kept']}; lost and used at once {found['lost_at_once']}; "
            + "".join(f"{label} {found[f'lost_{label}_reacquired']} of {found[f'lost_{label}']}; " for label in LABELS)
            + f"never re-acquired: {', '.join(found['lost_not_reacquired']) or 'none'}"
        )
    lines.append(
        f"  all: lost {totals['lost_reacquired']} of {totals['lost']}{_share(totals['lost_reacquired'], totals['lost'])}, "
        f"kept {totals['kept_reacquired']} of {totals['kept']}{_share(totals['kept_reacquired'], totals['kept'])}; "
        f"lost and used at once {totals['lost_at_once']}"
    )
    lines.append(
        "  lost, by recoverability (compactlab.scoring.recoverability): "
        + "; ".join(
            f"{label} {totals[f'lost_{label}_reacquired']} of {totals[f'lost_{label}']} re-acquired"
            f"{_share(totals[f'lost_{label}_reacquired'], totals[f'lost_{label}'])}"
            for label in LABELS
        )
    )
    return "\n".join(lines)


def rule_report(sessions: list[Session], groups: Mapping[str, str] | None = None) -> str:
    """Every candidate rule in sample, and the figure of choosing a rule leaving one group out
    (`groups`: session id → its repository; default: each session family), per family
    (`compactlab.results.fidelity_figures`), each real compaction counted once."""
    with_compactions = [t for t in sessions if t.compactions]
    group_of = groups if groups is not None else {t.id: family(t.id) for t in with_compactions}
    shipped = {t.id: fidelity_rows(t) for t in with_compactions}
    flat = [row for t in with_compactions for row in shipped[t.id]]
    counted = {(row["session"], row["call"]) for row, why in zip(flat, left_out(flat)) if not why}
    formats = {t.id: t.source_format for t in with_compactions}
    errors: dict[Rule, dict[str, list[Point]]] = {}
    for rule in grid():
        by_group: dict[str, list[Point]] = {}
        for t in with_compactions:
            for row in shipped[t.id] if rule == SHIPPED else fidelity_rows(t, rule):
                if (row["session"], row["call"]) in counted:
                    point = Point(row["fidelity_predicted"], row["fidelity_recorded"], family_of(formats[t.id], row["model"]))
                    by_group.setdefault(group_of[t.id], []).append(point)
        errors[rule] = by_group
    choice = loso(errors)
    lines = [f"\n{len(counted)} distinct real compactions; {len(flat) - len(counted)} rows left out (copies, repeats, no size)"]
    lines.append("rules, each on every distinct compaction (in sample):")
    for rule, by_group in errors.items():
        mark = "*" if rule == SHIPPED else " "
        lines.append(f" {mark} {Figures.of([e for es in by_group.values() for e in es]).line():<58} {rule.label()}")
    lines.append("leave one group out (each group measured with the rule chosen on the others):")
    for group, rule in choice.chosen_without.items():
        lines.append(f"  {group[:36]:<37} {len(errors[rule][group]):>3} compactions; chosen on the others: {rule.label()}")
    in_sample = [point for points in errors[choice.chosen].values() for point in points]
    for name in sorted({p.family for p in in_sample}):
        inside = [p for p in in_sample if p.family == name]
        outside = [p for p in choice.held_out if p.family == name]
        lines.append(f"  {name}: in sample {_figures(inside)}")
        lines.append(f"  {' ' * len(name)}  out of sample {_figures(outside)}")
    lines.append(f"  all: in sample {choice.in_sample.line()}; out of sample {choice.out_of_sample.line()}")
    lines.append(f"  chosen on every group: {choice.chosen.label()}{' (shipped)' if choice.chosen == SHIPPED else ''}")
    return "\n".join(lines)


def _figures(points: list[Point]) -> str:
    return FidelityFigures.of([p.predicted for p in points], [p.recorded for p in points]).line()


def _share(part: int, whole: int) -> str:
    return f" ({100 * part / whole:.0f}%)" if whole else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.scripts.real_compactions", description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="*", help="dataset names or paths (default: every bundled dataset)")
    args = parser.parse_args(argv)
    loaded = load_inputs(args.inputs or None, lenient=True)
    damaged = sum(1 for t in loaded.sessions if t.skipped)
    print(
        f"{len(loaded.sessions)} sessions ({damaged} with damaged records skipped, "
        f"{len(loaded.failed)} unreadable files, {len(loaded.passed_over)} files passed over)"
    )
    sessions = list(loaded.sessions)
    rows = measure(sessions)
    reacquired = [row for t in sessions if t.compactions for row in reacquisition_rows(t)]
    print(report(rows, reacquired) if rows or reacquired else "no real compaction")
    reasons = Counter(reason.split(" (")[0] for t in sessions if t.compactions for _, reason in excluded(t))
    print(f"excluded as no test of the replay: {sum(reasons.values())}" + "".join(f"; {n} {r}" for r, n in reasons.items()))
    if rows:
        repositories = repositories_of(args.inputs, sessions) if args.inputs else None
        print(rule_report(sessions, {t.id: repositories[t.source_path] for t in sessions} if repositories else None))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
