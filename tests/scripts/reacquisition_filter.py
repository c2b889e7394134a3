"""The "present in most messages" threshold of the preservation metric, chosen leave-one-session-out.

    python -m tests.scripts.reacquisition_filter [DATASET|PATH ...]

An item present in at least a share of the history's messages is not a needed fact
(`compactlab.scoring.general_items.UBIQUITOUS_SHARE`). For each candidate share (0.5 to 0.9, and off)
this replays every real compaction of the inputs with the `recorded` strategy and counts, as
`compactlab.scoring.reacquisition` does, the lost and kept items re-acquired before use. Then, for each
session with a real compaction, the share that best separates lost from kept (lost share − kept
share, pooled) on the OTHER sessions is applied to it: the pooled counts of these held-out sessions
are the out-of-sample figure. Ties go to the shipped share (the data cannot move it), then to the
larger share (it sets fewer items aside).
Damaged records are skipped (lenient loading) and counted in the first line.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from compactlab.replay.replay import replay
from compactlab.replay.setting import Setting
from compactlab.scoring.general_items import UBIQUITOUS_SHARE
from compactlab.scoring.reacquisition import COUNTS, reacquisition_at
from compactlab.scoring.reacquisition import share as share_of
from compactlab.sessions.loading import load_inputs
from compactlab.sessions.model import Session
from compactlab.tokens.context_windows import ContextWindows

RECORDED = Setting("recorded", "recorded")
OFF = 2.0  # a share no item reaches: the filter off
CANDIDATES = (0.5, 0.6, 0.7, 0.8, 0.9, OFF)

Counts = dict[str, int]


def session_counts(session: Session, candidates: Sequence[float] = CANDIDATES) -> dict[float, Counts]:
    """The re-acquisition counts over a session's real compactions, for each candidate share."""
    replayed = replay(session, RECORDED, ContextWindows())
    found = {share: dict.fromkeys(COUNTS, 0) for share in candidates}
    if replayed is None:
        return found
    for row, compacted in zip(replayed.compactions, replayed.compacted):
        if row.reacquisition is None:  # not a real compaction the replay re-made
            continue
        for share in candidates:
            counts = reacquisition_at(session.messages, row.message_index, compacted, ubiquitous=share)
            for name in COUNTS:
                found[share][name] += getattr(counts, name)
    return found


def separation(counts: Counts) -> float:
    """Lost share re-acquired minus kept share re-acquired (−1 when either side is empty)."""
    lost = share_of(counts["lost_reacquired"], counts["lost"], counts["lost_incidental"])
    kept = share_of(counts["kept_reacquired"], counts["kept"], counts["kept_incidental"])
    return -1.0 if lost is None or kept is None else lost - kept


def pooled(per_session: Sequence[dict[float, Counts]], share: float) -> Counts:
    return {name: sum(s[share][name] for s in per_session) for name in COUNTS}


def best_share(per_session: Sequence[dict[float, Counts]], candidates: Sequence[float] = CANDIDATES) -> float:
    """The candidate with the widest separation over these sessions; ties to the shipped share, then the larger."""
    return max(candidates, key=lambda share: (round(separation(pooled(per_session, share)), 9), share == UBIQUITOUS_SHARE, share))


def leave_one_out(sessions: dict[str, dict[float, Counts]]) -> tuple[dict[str, float], Counts]:
    """Each session's share chosen on the others, and the pooled counts of the sessions at their share."""
    chosen = {}
    total = dict.fromkeys(COUNTS, 0)
    for name, counts in sessions.items():
        others = [c for other, c in sessions.items() if other != name]
        chosen[name] = share = best_share(others) if others else UBIQUITOUS_SHARE
        for key in COUNTS:
            total[key] += counts[share][key]
    return chosen, total


def _line(label: str, counts: Counts) -> str:
    def side(name: str) -> str:
        back, of = counts[f"{name}_reacquired"], counts[name] - counts[f"{name}_incidental"]
        return f"{back} of {of} ({100 * back / of:.0f}%)" if of > 0 else f"{back} of {of} (–)"

    return (
        f"{label:<24} lost {side('lost')}, kept {side('kept')}, "
        f"separation {100 * separation(counts):+.0f} points; lost and used at once {counts['lost_at_once']}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.scripts.reacquisition_filter", description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="*", help="dataset names or paths (default: every bundled dataset)")
    args = parser.parse_args(argv)
    loaded = load_inputs(args.inputs or None, lenient=True)
    damaged = sum(1 for t in loaded.sessions if t.skipped)
    print(f"{len(loaded.sessions)} sessions ({damaged} with damaged records skipped, {len(loaded.failed)} unreadable files)")
    sessions = {t.id: session_counts(t) for t in loaded.sessions if t.compactions}
    if not sessions:
        print("no real compaction")
        return 0
    print(f"{len(sessions)} sessions with real compactions; in sample, every session at each share:")
    for share in CANDIDATES:
        print("  " + _line("off" if share == OFF else f"share >= {share}", pooled(list(sessions.values()), share)))
    chosen, total = leave_one_out(sessions)
    print("leave one session out (share chosen on the other sessions):")
    for name, share in chosen.items():
        print(f"  {name[:36]:<38}{'off' if share == OFF else share}")
    print("  " + _line("out of sample", total))
    overall = best_share(list(sessions.values()))
    print(f"chosen on all sessions: {'off' if overall == OFF else overall} (shipped: {UBIQUITOUS_SHARE})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
