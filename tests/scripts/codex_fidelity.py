"""How well the replay sizes the first prompt after each real Codex compaction, with the sizing
rule chosen leave-one-session-out.

    python -m tests.scripts.codex_fidelity PATH [PATH ...]

Point it at folders of Codex rollouts. For each distinct real compaction (a forked rollout copies
its parent's records: one compaction counted once, by its summary and the recorded prompt after
it) with a recorded call after it, the `recorded` strategy replays it and this prints the recorded
size of that call, the replay's prediction and the error, then for every candidate rule (how a
remote compaction's replacement history is sized: as a fresh prompt at its estimate, or at the
session's ratio; Codex's estimate of the encrypted item scaled by 0 to 2) its figures on every
compaction (in sample), and the figures of choosing the rule leave-one-session-out
(`tests.scripts.rule_choice.loso`: each session measured with the rule chosen on the
others). Figures: the share within 3,000 and 7,500 tokens, within ±5% and ±10%, and the median
|error| in tokens.

The shipped rule (`compactlab.tokens.metering`, `Meter.written`; first in the grid, so it wins
ties) is a fresh prompt with the encrypted item at Codex's own estimate: no constant fitted.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
from dataclasses import dataclass

from compactlab.replay.replay import replay
from compactlab.replay.setting import Setting
from compactlab.results.metrics import compactions_frame, recorded_fidelity
from compactlab.sessions.loading import load_inputs
from compactlab.sessions.model import Session
from compactlab.tokens.context_windows import ContextWindows
from compactlab.tokens.metering import Meter
from tests.scripts.rule_choice import family, loso


@dataclass(frozen=True)
class Rule:
    """A candidate sizing of a recorded summary with unreadable content (`Meter.written`)."""

    fresh_prompt: bool = True
    unreadable_scale: float = 1.0

    def label(self) -> str:
        kept = "at its estimate (fresh prompt)" if self.fresh_prompt else "at the session's ratio"
        return f"replacement history {kept}, encrypted item x{self.unreadable_scale:g} Codex's estimate"


SHIPPED = Rule()


def grid() -> list[Rule]:
    """Every candidate rule, the shipped one first."""
    rules = [Rule(fresh, scale) for fresh, scale in itertools.product((True, False), (0.0, 0.5, 1.0, 1.5, 2.0))]
    return [SHIPPED, *(r for r in rules if r != SHIPPED)]


def rows(session: Session, rule: Rule = SHIPPED) -> list[dict]:
    """One row per real compaction of `session` with a recorded call after it, under `rule`:
    session, call, recorded, predicted, error (tokens), relative error, and `key` (the compaction
    told apart from copies of it in forked rollouts)."""
    meter = Meter(session, "hybrid", fresh_prompt=rule.fresh_prompt, unreadable_scale=rule.unreadable_scale)
    replayed = replay(session, Setting("recorded", "recorded"), ContextWindows(), meter=meter)
    at = {row.call: row.message_index for row in replayed.compactions}
    summaries = {c.at_message: c.summary for c in session.compactions}
    found = []
    for record in recorded_fidelity(compactions_frame(replayed.compactions)).to_dict("records"):
        recorded, predicted = int(record["fidelity_recorded"]), int(record["fidelity_predicted"])
        key = (summaries.get(at[record["call"]], ""), recorded)
        found.append(
            {
                "session": session.id,
                "call": record["call"],
                "recorded": recorded,
                "predicted": predicted,
                "error": predicted - recorded,
                "relative_error": (predicted - recorded) / recorded,
                "key": key,
            }
        )
    return found


def distinct(found: list[dict]) -> list[dict]:
    """The rows of distinct compactions: the first of each key."""
    seen: set[tuple[str, int]] = set()
    kept = []
    for row in found:
        if row["key"] not in seen:
            seen.add(row["key"])
            kept.append(row)
    return kept


def figures(errors: list[tuple[int, float]]) -> str:
    """Errors (tokens, relative) as the goals state them."""
    if not errors:
        return "no compaction"
    n = len(errors)
    tokens = [abs(e) for e, _ in errors]
    rel = [abs(r) for _, r in errors]

    def share(hits: int) -> str:
        return f"{100 * hits / n:.0f}% ({hits})"

    return (
        f"n={n}: within 3,000 tokens {share(sum(t <= 3000 for t in tokens))}, within 7,500 {share(sum(t <= 7500 for t in tokens))}, "
        f"±5% {share(sum(r <= 0.05 for r in rel))}, ±10% {share(sum(r <= 0.10 for r in rel))}, "
        f"median |error| {statistics.median(tokens):,.0f} tokens"
    )


def measure(sessions: list[Session]) -> str:
    """The report: the shipped rule's rows, every rule in sample, and the leave-one-session-out figure."""
    compacted = [s for s in sessions if s.compactions]
    by_rule = {rule: distinct([row for s in compacted for row in rows(s, rule)]) for rule in grid()}
    lines = [f"{'session':<40}{'call':>5}{'recorded':>10}{'predicted':>11}{'error':>8}{'':>8}"]
    for row in by_rule[SHIPPED]:
        lines.append(
            f"{row['session'][-39:]:<40}{row['call']:>5}{row['recorded']:>10,}{row['predicted']:>11,}"
            f"{row['error']:>+8,}{100 * row['relative_error']:>+7.1f}%"
        )
    lines.append("\nrules, each on every distinct compaction (in sample):")
    for rule, found in by_rule.items():
        lines.append(
            f" {'*' if rule == SHIPPED else ' '} {rule.label()}: {figures([(r['error'], r['relative_error']) for r in found])}"
        )
    relative: dict[Rule, dict[str, list[float]]] = {}
    for rule, found in by_rule.items():
        for row in found:
            relative.setdefault(rule, {}).setdefault(family(row["session"]), []).append(row["relative_error"])
    if not relative:
        return "\n".join(lines)
    choice = loso(relative)
    held = [
        (r["error"], r["relative_error"])
        for fam, rule in choice.chosen_without.items()
        for r in by_rule[rule]
        if family(r["session"]) == fam
    ]
    chosen = by_rule[choice.chosen]
    lines.append(f"chosen on every session: {choice.chosen.label()}{' (shipped)' if choice.chosen == SHIPPED else ''}")
    lines.append(f"  in sample: {figures([(r['error'], r['relative_error']) for r in chosen])}")
    lines.append(f"  leave one session out: {figures(held)}")
    others = sorted({rule.label() for rule in choice.chosen_without.values()})
    lines.append(f"  rules chosen with one session left out: {'; '.join(others)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.scripts.codex_fidelity", description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="+", help="folders or files of Codex rollouts")
    args = parser.parse_args(argv)
    loaded = load_inputs(args.inputs, lenient=True)
    sessions = [s for s in loaded.sessions if s.source_format == "codex-rollout"]
    skipped = sum(len(s.skipped) for s in sessions)
    print(f"{len(sessions)} Codex sessions ({skipped} damaged records skipped, {len(loaded.failed)} unreadable files)")
    print(measure(sessions))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
