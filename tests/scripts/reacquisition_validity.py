"""Does "lost" predict what the agent fetches again? Per compaction, per family and per repository,
with the re-acquisition rule chosen leaving one repository out (issue 41).

    python -m tests.scripts.reacquisition_validity PATH [PATH ...]

Each PATH is a folder of sessions (its top folders the repositories: the rebuilt development set,
a shared source) or a dataset. Every real compaction the `recorded` strategy re-makes is scored
by `compactlab.scoring.reacquisition` under each rule of `RULES` (which fetches count as getting an
item back); copies and repeats of a compaction (`compactlab.results.fidelity_figures.repeats_of`)
are counted once, and compactions whose summary is encrypted (Codex's remote compaction: what it
kept cannot be read) are counted apart, in no figure. For each family (`family_of`) and each repository this prints, per compaction
first (`compactlab.results.reacquisition_figures`), the share of lost and of kept items re-acquired
before use and their difference with its 95% bootstrap interval over compactions, then the pooled
counts, and the lost items used before any message could bring them back (a check of the replay's
re-attachment model: the real context held them). Then, for each repository, the rule with the
widest mean per-compaction difference on the OTHER repositories is applied to it (ties to the
shipped rule); the held-out compactions under their rules are the out-of-sample figure.
Damaged records are skipped (lenient loading) and counted in the first line.
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict

from compactlab.replay.replay import replay
from compactlab.replay.setting import Setting
from compactlab.results.fidelity_figures import family_of, repeats_of, summary_sha
from compactlab.results.reacquisition_figures import UNREADABLE, PerCompaction, figures_of, per_compaction_line, pooled_line
from compactlab.scoring.reacquisition import RULES, SHIPPED_RULE, reacquisition_at
from compactlab.sessions.importers.codex_compaction import UNREADABLE_SUMMARY
from compactlab.sessions.loading import load_inputs
from compactlab.sessions.model import Session
from compactlab.tokens.context_windows import ContextWindows
from tests.scripts.trigger_choice import repositories_of

SHIPPED = SHIPPED_RULE


def compaction_rows(session: Session, repository: str) -> list[dict]:
    """One row per real compaction of `session` the replay re-made: its counts under every rule."""
    replayed = replay(session, Setting("recorded", "recorded"), ContextWindows())
    if replayed is None:
        return []
    rows = []
    for row, compacted in zip(replayed.compactions, replayed.compacted):
        if row.reacquisition is None:  # not a real compaction the replay re-made
            continue
        models = [m.call.model for m in session.messages[: row.message_index] if m.call is not None]
        by_rule = {rule: asdict(reacquisition_at(session.messages, row.message_index, compacted, rule=rule)) for rule in RULES}
        rows.append(
            {
                "session": session.id,
                "call": row.call,
                "summary_sha": summary_sha(row.summary),
                "unreadable": isinstance(row.summary, str) and UNREADABLE_SUMMARY in row.summary,
                "repository": repository,
                "family": family_of(session.source_format, models[-1] if models else None),
                "by_rule": by_rule,
            }
        )
    return rows


def separation(rows: Sequence[Mapping], rule: str) -> float:
    """The mean per-compaction difference (lost share − kept share) under `rule` (−1: none has both)."""
    found = PerCompaction.of([r["by_rule"][rule] for r in rows], resamples=1)
    return found.difference_mean if found.difference_mean is not None else -1.0


def chosen_without(rows: Sequence[Mapping], repository: str) -> str:
    others = [r for r in rows if r["repository"] != repository]
    return max(RULES, key=lambda rule: (round(separation(others, rule), 9), rule == SHIPPED))


def _lines(label: str, counts: list[dict]) -> list[str]:
    summary = _summary(counts)
    lost = summary["lost"]
    at_once = f"{summary['lost_at_once']} of {lost} ({100 * summary['lost_at_once'] / lost:.0f}%)" if lost else "0 of 0"
    return [
        f"{label} ({len(counts)} compactions)",
        f"    {per_compaction_line(summary)}",
        f"    {pooled_line(summary)}",
        f"    lost items used before any message could bring them back: {at_once}",
    ]


def report(rows: list[dict]) -> str:
    lines = []
    for rule in RULES:
        lines.append(f"\nrule {rule!r}{' (shipped)' if rule == SHIPPED else ''}, in sample:")
        for family in sorted({r["family"] for r in rows}):
            lines += ["  " + line for line in _lines(family, [r["by_rule"][rule] for r in rows if r["family"] == family])]
        for repository in sorted({r["repository"] for r in rows}):
            summary = _summary([r["by_rule"][rule] for r in rows if r["repository"] == repository])
            at_once = f"used at once {summary['lost_at_once']} of {summary['lost']} lost"
            lines.append(f"  {repository[:44]:<45} {per_compaction_line(summary)[15:]}; {at_once}")
    choice = {repository: chosen_without(rows, repository) for repository in sorted({r["repository"] for r in rows})}
    lines.append("\nleave one repository out (each measured under the rule chosen on the others):")
    for repository, rule in choice.items():
        lines.append(f"  {repository[:44]:<45} {rule}")
    held_out = [r["by_rule"][choice[r["repository"]]] | {"family": r["family"]} for r in rows]
    for family in sorted({r["family"] for r in rows}):
        lines += ["  out of sample, " + line for line in _lines(family, [c for c in held_out if c["family"] == family])]
    lines += ["  out of sample, " + line for line in _lines("all", held_out)]
    return "\n".join(lines)


def _summary(counts: Sequence[Mapping]) -> dict:
    """`figures_of` as the summary lines read it (no rows listed)."""
    return {**figures_of(counts), "compactions": []}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.scripts.reacquisition_validity", description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="+", help="folders of sessions (one top folder per repository) or datasets")
    args = parser.parse_args(argv)
    loaded = load_inputs(args.inputs, lenient=True)
    damaged = sum(1 for t in loaded.sessions if t.skipped)
    print(f"{len(loaded.sessions)} sessions ({damaged} with damaged records skipped, {len(loaded.failed)} unreadable files)")
    sessions = [t for t in loaded.sessions if t.compactions]
    repositories = repositories_of(args.inputs, sessions)
    rows = [row for t in sessions for row in compaction_rows(t, repositories[t.source_path])]
    why = repeats_of(rows)
    distinct = [row for row, reason in zip(rows, why) if not reason]
    counted = [row for row in distinct if not row["unreadable"]]
    print(f"{len(rows)} real compactions re-made; {len(rows) - len(distinct)} copies or repeats counted once")
    unreadable = Counter(row["family"] for row in distinct if row["unreadable"])
    if unreadable:
        print(f"not counted, {UNREADABLE}: " + ", ".join(f"{n} {family}" for family, n in unreadable.items()))
    if not counted:
        print("no real compaction")
        return 0
    print(report(counted))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
