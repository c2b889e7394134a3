"""Figures that check the estimation benchmark against itself, on any sessions.

    python -m tests.scripts.estimation_figures [PATH ...]     (none: every bundled dataset)

- calibrated at each session's first call: for sources without the system prompt the per-session
  constant makes every estimator exact there, so calibrated must be too;
- hybrid at the first call after a real (production) compaction: the provider's count no longer
  describes the prompt, and the estimate must still carry the per-session constant;
- calibrated in and out of sample: on the sessions its shipped fit was trained on, and on the
  others (only the latter is its score).

Sessions with damaged records are included here, although the benchmark leaves them out: the
only bundled session with calls after a real compaction (m-claude 3af9b1a7) has two damaged lines,
and what they lost moves its error by far less than the figures checked.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

import numpy as np
import pandas as pd

from compactlab.sessions.loading import load_inputs
from compactlab.sessions.model import Session
from compactlab.tokens.estimation import run_estimation
from compactlab.tokens.framing import without_system_prompt


def first_calls_after_compactions(sessions: list[Session]) -> set[tuple[str, int]]:
    """(session id, message index) of the first recorded call after each real compaction."""
    found = set()
    for session in sessions:
        calls = [i for i, m in enumerate(session.messages) if m.call is not None]
        for marker in session.compactions:
            after = [i for i in calls if i >= marker.at_message]
            if after:
                found.add((session.id, after[0]))
    return found


def figures(sessions: list[Session]) -> dict[str, str]:
    calls = run_estimation([replace(t, skipped=()) for t in sessions]).calls
    rel = 100 * (calls["estimate"] - calls["true_tokens"]) / calls["true_tokens"]
    calls = calls.assign(rel=rel)
    lines: dict[str, str] = {}
    calibrated = calls[calls["estimator"].str.startswith("calibrated")]
    first = calibrated[calibrated["first_call"].astype(bool) & calibrated["source_format"].isin(without_system_prompt())]
    lines["calibrated, first call of each session whose file lacks the system prompt"] = _describe(first["rel"])
    after = first_calls_after_compactions(sessions)
    keys = list(zip(calls["session"], calls["message_index"], strict=True))
    at_after = calls[[key in after for key in keys]]
    for estimator, group in at_after.groupby("estimator"):
        lines[f"{estimator}, first call after a real compaction"] = _describe(group["rel"])
    scored = calibrated[~calibrated["first_call"].astype(bool)]
    for (estimator, family), group in scored.groupby(["estimator", "family"]):
        lines[f"{estimator} {family}, calls after the first (MAPE)"] = (
            f"{group['rel'].abs().mean():.1f}% over {len(group)} calls, {group['session'].nunique()} sessions"
        )
    return lines


def _describe(values: pd.Series) -> str:
    if values.empty:
        return "no calls"
    array = values.to_numpy(float)
    return f"median {np.median(array):+.1f}%, mean |error| {np.abs(array).mean():.1f}% over {len(array)} calls"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.scripts.estimation_figures", description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="*", help="session files, folders or dataset names (default: every bundled dataset)")
    loaded = load_inputs(parser.parse_args(argv).inputs, lenient=True)
    for name, value in figures(list(loaded.sessions)).items():
        print(f"{name}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
