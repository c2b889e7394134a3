"""Fidelity and re-acquisition at every real compaction of some datasets: the figures of issue 15.

    python -m compactlab.measure.real_compactions [DATASET|PATH ...]

With no argument, every bundled dataset. For each compaction a production agent really made
(Claude Code's `compact_boundary`, with a call or a `/context` reading after it) the `recorded`
strategy replays it, and this prints:
- the recorded size of the first prompt after it (or the `/context` reading) and the replay's
  prediction, with summaries sized by the model family's fit (`Meter.written`, what runs do) and,
  for comparison, sized at the session's measured ratio like history (the rule before);
- at every real compaction, a known size after it or not: the items the preservation metric marks lost and kept, how many of each the agent re-acquired
  before using them (`compactlab.scoring.reacquisition`), how many lost items were used before any
  message could bring them back, and the lost items never re-acquired.
Damaged records are skipped (lenient loading) and counted in the first line.
"""

from __future__ import annotations

import argparse

from compactlab.replay.replay import replay
from compactlab.replay.strategy_config import StrategyConfig
from compactlab.results.metrics import compactions_frame, recorded_fidelity
from compactlab.scoring.reacquisition import COUNTS
from compactlab.tokens.context_windows import ContextWindows
from compactlab.tokens.metering import Meter
from compactlab.transcripts.loading import load_inputs
from compactlab.transcripts.model import Transcript

RECORDED = StrategyConfig("recorded", "recorded")


def fidelity_rows(transcript: Transcript, summaries_apart: bool) -> tuple[list[dict], list[dict]]:
    """The recorded strategy's fidelity rows of one transcript (real compactions with a known size
    after them), and its re-acquisition rows (every real compaction the replay re-made, a known size
    after it or not); `summaries_apart` False sizes summaries at the session's ratio, as history."""
    meter = Meter(transcript, "hybrid")
    if not summaries_apart:
        meter.family_fit = None
    replayed = replay(transcript, RECORDED, ContextWindows(), meter=meter)
    frame = recorded_fidelity(compactions_frame(replayed.compactions))
    rows = {row.call: row for row in replayed.compactions}
    fidelity = [
        {**record, "message_index": rows[record["call"]].message_index, "reacquisition": rows[record["call"]].reacquisition}
        for record in frame.to_dict("records")
    ]
    reacquired = [
        {"transcript": transcript.id, "call": row.call, "reacquisition": row.reacquisition}
        for row in replayed.compactions
        if isinstance(row.reacquisition, dict)
    ]
    return fidelity, reacquired


def measure(transcripts: list[Transcript]) -> tuple[list[dict], list[dict]]:
    """One fidelity row per real compaction with a known size after it, and one re-acquisition row
    per real compaction."""
    found, reacquired = [], []
    for transcript in transcripts:
        if not transcript.compactions:
            continue
        at_ratio = {row["call"]: row for row in fidelity_rows(transcript, summaries_apart=False)[0]}
        fidelity, reacquisitions = fidelity_rows(transcript, summaries_apart=True)
        found += [{**row, "predicted_at_ratio": at_ratio[row["call"]]["fidelity_predicted"]} for row in fidelity]
        reacquired += reacquisitions
    return found, reacquired


def report(rows: list[dict], reacquired: list[dict]) -> str:
    lines = [f"{'transcript':<38}{'call':>5}{'recorded':>10}{'predicted':>11}{'error':>8}{'at ratio':>10}{'error':>8}"]
    for row in rows:
        recorded = row["fidelity_recorded"]
        lines.append(
            f"{row['transcript'][:37]:<38}{row['call']:>5}{recorded:>10,}{row['fidelity_predicted']:>11,}"
            f"{100 * row['relative_error']:>+7.1f}%{row['predicted_at_ratio']:>10,}"
            f"{100 * (row['predicted_at_ratio'] / recorded - 1):>+7.1f}%"
        )
    lines.append(f"\nre-acquired before use at all {len(reacquired)} real compactions (lost / kept by the production summary):")
    totals = dict.fromkeys(COUNTS, 0)
    for row in reacquired:
        found = row["reacquisition"]
        if not isinstance(found, dict):
            continue
        for name in COUNTS:
            totals[name] += found[name]
        lines.append(
            f"  {row['transcript'][:37]:<38} lost {found['lost_reacquired']} of {found['lost']}, "
            f"kept {found['kept_reacquired']} of {found['kept']}; lost and used at once {found['lost_at_once']}; "
            f"never re-acquired: {', '.join(found['lost_not_reacquired']) or 'none'}"
        )
    lines.append(
        f"  all: lost {totals['lost_reacquired']} of {totals['lost']}{_share(totals['lost_reacquired'], totals['lost'])}, "
        f"kept {totals['kept_reacquired']} of {totals['kept']}{_share(totals['kept_reacquired'], totals['kept'])}; "
        f"lost and used at once {totals['lost_at_once']}"
    )
    return "\n".join(lines)


def _share(part: int, whole: int) -> str:
    return f" ({100 * part / whole:.0f}%)" if whole else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m compactlab.measure.real_compactions", description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="*", help="dataset names or paths (default: every bundled dataset)")
    args = parser.parse_args(argv)
    loaded = load_inputs(args.inputs or None, lenient=True)
    damaged = sum(1 for t in loaded.transcripts if t.skipped)
    print(
        f"{len(loaded.transcripts)} sessions ({damaged} with damaged records skipped, "
        f"{len(loaded.failed)} unreadable files, {len(loaded.passed_over)} files passed over)"
    )
    rows, reacquired = measure(list(loaded.transcripts))
    print(report(rows, reacquired) if rows or reacquired else "no real compaction")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
