"""How wrong the replay's prompt sizes can be, per session (`compactlab.replay.prompt_size`): the rows a
run keeps for its report's trust checks, and their table.

A compaction keeps the newest messages; the recorded counts give the true size of a prompt that
keeps the messages before the first call (system prompt, task) and those from call a on, at a later
call b: recorded_b − recorded_a + recorded_first. Each rule predicts it:
- measured (now): fixed + estimate(kept) × ratio at b;
- anchored (before): recorded_b − estimate(removed), which puts the estimator's whole error on the
  removed part onto the kept one.
Pairs: a at each tenth of the session's calls, b the last call. Drift: after the production agent
compacts at call a, the history's size is its estimate with the ratio measured at a (now) or the plain
estimate plus the constant (before); the recorded count at the last call b says how far each drifts.

Both errors are (predicted − true) / true; the table gives the median and the 90th percentile of
their absolute value, and the median signed error, per source format. `python -m
tests.scripts.prompt_size_check` (a checkout's measurement script) prints it for any sessions.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from compactlab.replay.uncompacted import uncompacted
from compactlab.sessions.model import Session
from compactlab.tokens.metering import Meter
from compactlab.tokens.tokenizers import TokenCache


def kept_tail_errors(session: Session, estimator: str = "hybrid", cache: TokenCache | None = None) -> list[dict]:
    """For one session, the two rules' errors on the size of prompts that keep a tail (see the module's docstring);
    `cache`: the replaying process's counts, so that a run counts no text twice."""
    if session.compactions or session.skipped or len(session.calls) < 10:  # (before replaying it: no rows either way)
        return []
    meter = Meter(session, estimator, cache) if cache is not None else Meter(session, estimator)
    base = uncompacted(meter, 10**9)
    positions, recorded = base.positions, base.columns["recorded_prompt_tokens"]
    if len(positions) < 10:
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
