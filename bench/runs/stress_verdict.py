"""A second, labelled verdict at a simulated window when too few sessions reach their real one.

A run at the models' real windows is the verdict a user acts on. When its sessions rarely reach a
window (the verdict rests on fewer than `MIN_COMPACTIONS` compactions, or none), it says so with the
counts ("3 of 120 sessions compact at their real windows") and replays the same sessions at a
simulated window (`STRESS_WINDOW`) into `OUT/stress-N/`: how the strategies compare when they must
act, labelled as a stress test everywhere it is shown (summary.json's `stress_verdict`). A run with
an LLM summarizer or judge does not spend calls on it unasked: it names the command instead.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd

from compactlab.results.recommendation import MIN_COMPACTIONS, Recommendation
from compactlab.runs import runs
from compactlab.runs.config_schema import DEFAULT_WINDOW
from compactlab.runs.run_config import RunConfig
from compactlab.runs.run_summary import write_summary

STRESS_WINDOW = DEFAULT_WINDOW


def reach(sessions: pd.DataFrame) -> dict:
    """{sessions, compacting, outgrowing}: sessions in the run, those some setting compacted, and those
    whose uncompacted prompt outgrows the window they were replayed at."""
    if sessions.empty:
        return {"sessions": 0, "compacting": 0, "outgrowing": 0}
    by_session = sessions.groupby("session")
    return {
        "sessions": int(by_session.ngroups),
        "compacting": int((by_session["compactions"].max() > 0).sum()),
        "outgrowing": int((by_session["peak_full"].max() > by_session["window"].first()).sum()),
    }


def why_stress(document: dict, sessions: pd.DataFrame) -> str | None:
    """Why the real-window verdict needs a stress verdict beside it (None: it does not): its sessions
    rarely reach their windows."""
    if (document.get("verdict_window") or {}).get("simulated", True):
        return None
    recommendation = document.get("recommendation") or {}
    compactions = recommendation.get("compactions")
    if recommendation.get("setting") is None or compactions is None or compactions >= MIN_COMPACTIONS:
        return None
    counts = reach(sessions)
    return (
        f"{counts['compacting']} of {counts['sessions']} sessions compact under any setting at their models' real windows "
        f"({counts['outgrowing']} outgrow it uncompacted): the verdict rests on {compactions} compaction"
        f"{'s' if compactions != 1 else ''}"
    )


def stress_verdict(config: RunConfig, out: Path, why: str, window: int = STRESS_WINDOW, **run_options) -> dict:
    """The run's sessions replayed at a simulated `window` into `out/stress-WINDOW/`: summary.json's
    `stress_verdict` ({window, why, out, recommendation} or, where no session fits it, {window, why, error})."""
    folder = Path(out) / f"stress-{window}"
    entry: dict = {"window": window, "why": why, "out": folder.name}
    # No token estimation: it does not depend on the window, and the run beside it measured it already.
    stressed = dataclasses.replace(config, window=window, estimation=False)
    try:
        result = runs.run(stressed, folder, **{**run_options, "overwrite": True})
    except ValueError as exc:  # e.g. no session's smallest possible prompt fits the window
        return {**entry, "error": str(exc)}
    document = write_summary(result, stressed)
    return {**entry, "recommendation": document.get("recommendation"), "verdict_window": document.get("verdict_window")}


def second_verdict(stress: dict) -> str:
    """summary.json's `stress_verdict` as its verdict, in the words the terminal and the report both use."""
    if "command" in stress:
        return f"not replayed (it would send LLM calls): {stress['command']}"
    if "error" in stress:
        return f"no verdict: {stress['error']}"
    return Recommendation.from_json(stress.get("recommendation") or {}).short()
