"""Failed and fallen-back compactions per strategy: counted, shown, and kept out of the ranking.

A compaction *failed* when its strategy could not compact (e.g. its LLM summarizer failed after
its retries: the context stays as it was, and after a few in a row the engine stops trying) and
*fell back* when the strategy finished another way (`summarize` truncating instead; see
`compactlab.contract.FALLBACK_MARK`). Either way the strategy's numbers are no longer its own: a total
outage would read "0.0% removed, 100% kept". So a strategy with such compactions is marked
`incomplete` on its rows, which `compactlab.results.leaderboard.ranked` leaves out of every statistic and
recommendation, unless their share of its compaction attempts is at most the run's
`max_failed_share` (a configuration key, default 0: no failure is allowed). The counts go to
stdout, summary.json (`failures`) and the report's overview; `compactlab run` exits with
`INCOMPLETE_EXIT` when a strategy was left out.
"""

from __future__ import annotations

import pandas as pd

INCOMPLETE = "incomplete"  # the column of sessions.csv that the ranking reads
INCOMPLETE_EXIT = 3  # `compactlab run`/`sweep`: finished, but some results are missing


def failure_counts(sessions: pd.DataFrame) -> pd.DataFrame:
    """Per strategy setting with any failed or fallen-back compaction: attempts, failed, fell_back, share."""
    if sessions.empty or "failed_compactions" not in sessions:
        return pd.DataFrame(columns=["setting", "attempts", "failed", "fell_back", "share"])
    fell_back = sessions["fallback_compactions"] if "fallback_compactions" in sessions else 0
    frame = (
        pd.DataFrame(
            {
                "setting": sessions["setting"],
                # A fallback is a compaction done (in `compactions`); a failure is an attempt that was not.
                "attempts": sessions["compactions"] + sessions["failed_compactions"],
                "failed": sessions["failed_compactions"],
                "fell_back": fell_back,
            }
        )
        .groupby("setting", sort=True)
        .sum()
        .reset_index()
    )
    frame = frame[(frame["failed"] + frame["fell_back"]) > 0].reset_index(drop=True)
    frame["share"] = (frame["failed"] + frame["fell_back"]) / frame["attempts"]
    return frame


def mark_incomplete(sessions: pd.DataFrame, max_failed_share: float = 0.0) -> pd.DataFrame:
    """`sessions` with the `incomplete` column: True on every row of a strategy setting whose
    failed and fallen-back compactions exceed `max_failed_share` of its attempts."""
    if sessions.empty:
        return sessions
    counts = failure_counts(sessions)
    over = set(counts.loc[counts["share"] > max_failed_share, "setting"])
    return sessions.assign(**{INCOMPLETE: sessions["setting"].isin(over)})


def failure_records(sessions: pd.DataFrame, max_failed_share: float = 0.0) -> list[dict]:
    """summary.json's `failures`: one record per strategy setting with failed or fallen-back compactions."""
    incomplete = set(sessions.loc[sessions[INCOMPLETE], "setting"]) if INCOMPLETE in sessions else set()
    return [
        {
            "setting": row.setting,
            "attempts": int(row.attempts),
            "failed": int(row.failed),
            "fell_back": int(row.fell_back),
            "share": float(row.share),
            "allowed_share": max_failed_share,
            "ranked": row.setting not in incomplete,
        }
        for row in failure_counts(sessions).itertuples()
    ]


def format_failures(records: list[dict]) -> list[str]:
    """Lines for stdout: what failed per strategy, and whether it was ranked anyway."""
    lines = []
    for r in records:
        verdict = (
            "NOT RANKED: its numbers are not its own"
            if not r["ranked"]
            else f"ranked (max_failed_share = {r['allowed_share']:g})"
        )
        lines.append(
            f"  {r['setting']}: {r['failed']} of {r['attempts']} compactions failed, {r['fell_back']} fell back "
            f"({100 * r['share']:.0f}%) - {verdict}"
        )
    return lines


def failure_ranks(summary: dict, ranked: bool) -> list[str]:
    """The strategy settings of summary.json's `failures` that were (or were not) ranked."""
    return [f["setting"] for f in summary.get("failures", []) if f["ranked"] == ranked]
