"""How wrong the replay's prompt sizes can be, measured on real sessions (`compactlab.replay.prompt_size`);
the rows and their table are `compactlab.replay.prompt_size_errors`, which a run's report uses.

    python -m tests.scripts.prompt_size_check [PATH|DATASET ...] [--estimator NAME] [--run RUN_DIR ...]

1. Kept tail. A compaction keeps the newest messages; the recorded counts give the true size of a
   prompt that keeps the messages before the first call (system prompt, task) and those from call
   a on, at a later call b: recorded_b − recorded_a + recorded_first. Each rule predicts it:
   - measured (now): fixed + estimate(kept) × ratio at b;
   - anchored (before): recorded_b − estimate(removed), which puts the estimator's whole error
     on the removed part onto the kept one.
   Pairs: a at each tenth of the session's calls, b the last call.
2. Drift. After the production agent compacts at call a, the history's size is its estimate with
   the ratio measured at a (now) or the plain estimate plus the constant (before); in sessions
   without a real compaction the recorded count at the last call b says how far each drifts.
3. With `--run`: in a run's rows, the calls after a compaction that sit at or above the 0.8 line
   of their window with no compaction before them, the over-window share and no-op attempts.

Both errors are (predicted − true) / true; the table gives the median and the 90th percentile of
their absolute value, and the median signed error, per source format.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from compactlab.replay.prompt_size_errors import error_table, kept_tail_errors
from compactlab.runs.run_storage import run_calls, run_compaction_rows
from compactlab.sessions.loading import load_inputs


def run_consistency(run_dir: Path) -> dict:
    """Part 3 of the docstring, from a run's rows."""
    calls = run_calls(run_dir)  # the run's committed rows, whichever way the run stored them
    after = calls[calls["compactions_so_far"] > 0]
    above = after[(after["context_tokens"] >= 0.8 * after["window"]) & ~after["compacted_before"].astype(bool)]
    compactions = pd.DataFrame(run_compaction_rows(run_dir))
    per_config = calls.groupby("setting").agg(calls=("call", "size"), over_window=("over_window", "mean"))
    result = {
        "calls_after_a_compaction": len(after),
        "above_the_0.8_line_without_compaction": len(above),
        "noop_attempts": int(calls["noop_before"].sum()) if "noop_before" in calls else None,
        "compactions": len(compactions),
        "silent_overflow_compactions": int((compactions["reason"] == "silent_overflow").sum()) if len(compactions) else 0,
        "over_window_share_by_config": per_config["over_window"].round(4).to_dict(),
    }
    summary = json.loads((run_dir / "summary.json").read_text())
    removed = {row["setting"]: row.get("removed_share_mean") for row in summary.get("leaderboard", [])}
    result["removed_share_mean_by_config"] = removed
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="*", help="datasets, files or folders (default: every bundled dataset)")
    parser.add_argument("--estimator", default="hybrid")
    parser.add_argument("--run", nargs="*", type=Path, default=[], help="run directories to check for consistency")
    args = parser.parse_args(argv)
    if args.inputs or not args.run:
        loaded = load_inputs(args.inputs, lenient=True)
        rows = [row for session in loaded.sessions for row in kept_tail_errors(session, args.estimator)]
        with pd.option_context("display.width", 200, "display.max_columns", 20, "display.float_format", "{:.1f}".format):
            print(error_table(rows).T)
    for run_dir in args.run:
        print(run_dir, json.dumps(run_consistency(run_dir), indent=1))


if __name__ == "__main__":
    main()
