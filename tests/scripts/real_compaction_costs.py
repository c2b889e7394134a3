"""The real cost of each production compaction beside the replay's model of it (issue 47 point 3).

    python -m tests.scripts.real_compaction_costs FOLDER_OR_DATASET [...]

Every session of the inputs holding a real compaction is replayed under the `recorded` strategy and
each of its compactions costed as `compactlab.results.real_costs` defines it: the summarizer call's
recorded usage where the log has one (else "not recorded"; the replay models none for `recorded`),
and the prompt of the first call after it, recorded (cache reads, cache writes, uncached input)
against the replay's cost model on its row, priced with the built-in table. Printed per compaction:
family, session, call, each part real and modelled, the tokens behind the first call's cost, and the
relative difference over the parts both give; then per family (a sub-agent copy and the same
compaction in another file counted once, as the fidelity figures count them) how many are within
±10%. Damaged records are skipped (lenient loading) and counted in the first line.
"""

from __future__ import annotations

import argparse

import pandas as pd

from compactlab.replay.replay import replay
from compactlab.replay.setting import Setting
from compactlab.results.metrics import calls_frame, compactions_frame
from compactlab.results.real_costs import COLUMNS, NO_CALL, costs_document, part_text, real_costs
from compactlab.sessions.loading import load_inputs
from compactlab.sessions.model import Session


def costs(sessions: list[Session]) -> pd.DataFrame:
    """The real-cost rows of every session's real compactions, in the order of the sessions."""
    frames = []
    for session in sessions:
        if not session.compactions:
            continue
        replayed = replay(session, Setting("recorded", "recorded"))
        calls, compactions = calls_frame(replayed.calls), compactions_frame(replayed.compactions)
        frames.append(real_costs(calls, compactions, [session], None))
    frames = [f for f in frames if not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)


def table(document: dict) -> str:
    lines = [
        f"{'family':<34}{'session':<28}{'call':>6}{'summarizer real':>17}{'modelled':>14}{'1st call real':>17}{'modelled':>17}"
        f"{'difference':>12}  real tokens (read/write/uncached) | modelled (read/new)"
    ]
    for row in document["rows"]:
        called = row["real_cache_read"] is not None
        summarizer = part_text(row["summarizer_real"], row["summarizer_modelled"])
        first = part_text(row["first_call_real"], row["first_call_modelled"], "no price") if called else (NO_CALL, NO_CALL)
        difference = "-" if row["relative_difference"] is None else f"{100 * row['relative_difference']:+.1f}%"
        tokens = (
            f"{row['real_cache_read']:,}/{row['real_cache_write']:,}/{row['real_input']:,} | "
            f"{row['modelled_cache_read']:,}/{row['modelled_new']:,}"
            if called
            else ""
        )
        left = f"  [in no figure: {row['left_out'][:60]}]" if row["left_out"] else ""
        lines.append(
            f"{row['family'][:33]:<34}{row['session'][:27]:<28}{row['call']:>6}{summarizer[0]:>17}{summarizer[1]:>14}"
            f"{first[0]:>17}{first[1]:>17}{difference:>12}  {tokens}{left}"
        )
    lines.append("")
    for family, found in document["families"].items():
        lines.append(f"{family}: {found['line']}")
    return "\n".join(lines)


def read(inputs: list[str]) -> list[Session]:
    """The sessions of `inputs` (damaged records skipped), after a line saying what was read."""
    loaded = load_inputs(inputs, lenient=True)
    sessions = list(loaded.sessions)
    compacted = sum(1 for t in sessions if t.compactions)
    damaged = sum(1 for t in sessions if t.skipped)
    print(
        f"{len(sessions)} sessions, {compacted} with a real compaction ({damaged} with damaged records skipped, {len(loaded.failed)} unreadable files)"
    )
    return sessions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.scripts.real_compaction_costs", description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="+", help="folders, files or dataset names")
    document = costs_document(costs(read(parser.parse_args(argv).inputs)))
    print(table(document) if document["rows"] else "no real compaction the replay made a row for")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
