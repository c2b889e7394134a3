"""How wrong the replay's prompt sizes can be, measured on real sessions (`compactlab.replay.prompt_size`).

    python -m compactlab.runs.prompt_size_check [PATH|DATASET ...] [--estimator NAME] [--run RUN_DIR ...]

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

import numpy as np
import pandas as pd

from compactlab.replay.uncompacted import uncompacted
from compactlab.runs.run_storage import run_calls, run_compaction_rows
from compactlab.sessions.loading import load_inputs
from compactlab.sessions.model import Session
from compactlab.tokens.metering import Meter
from compactlab.tokens.tokenizers import TokenCache


def kept_tail_errors(session: Session, estimator: str = "hybrid", cache: TokenCache | None = None) -> list[dict]:
    """For one session, the two rules' errors on the size of prompts that keep a tail (see the docstring);
    `cache`: the replaying process's counts, so that a run counts no text twice."""
    meter = Meter(session, estimator, cache) if cache is not None else Meter(session, estimator)
    base = uncompacted(meter, 10**9)
    positions, recorded = base.positions, base.columns["recorded_prompt_tokens"]
    if len(positions) < 10 or session.compactions or session.skipped:
        return []
    history, ratios = base.history_tokens, base.ratios
    fixed = meter.local.prompt_overhead + meter.offset
    first, last = 0, len(positions) - 1
    rows = []
    for tenth in range(1, 10):
        a = last * tenth // 10
        if a <= first:
            continue
        true = recorded[last] - recorded[a] + recorded[first]
        kept = history[positions[first]] + history[positions[last]] - history[positions[a]]
        removed = history[positions[a]] - history[positions[first]]
        measured = fixed + kept * ratios[last]
        anchored = recorded[last] - removed
        drift_now = fixed + history[positions[last]] * ratios[a]
        drift_before = fixed + history[positions[last]]
        rows.append(
            {
                "session": session.id,
                "format": session.source_format,
                "kept_share": true / recorded[last],
                "measured": measured / true - 1,
                "anchored": anchored / true - 1,
                "drift_now": drift_now / recorded[last] - 1,
                "drift_before": drift_before / recorded[last] - 1,
            }
        )
    return rows


def error_table(rows: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    out = []
    for source, group in [("all", frame), *frame.groupby("format")]:
        row = {"source": source, "sessions": group["session"].nunique(), "pairs": len(group)}
        for rule in ("measured", "anchored", "drift_now", "drift_before"):
            errors = group[rule].to_numpy()
            row[f"{rule}_median_abs_pct"] = 100 * float(np.median(np.abs(errors)))
            row[f"{rule}_p90_abs_pct"] = 100 * float(np.quantile(np.abs(errors), 0.9))
            row[f"{rule}_median_pct"] = 100 * float(np.median(errors))
        out.append(row)
    return pd.DataFrame(out).set_index("source")


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
