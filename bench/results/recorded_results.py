"""The `recorded` strategy's results: the production agent's own compactions, scored where they happened.

They are not ranked against the strategies one can choose (`compactlab.results.leaderboard.NOT_RANKED`), so a
run needs this separate account of them, also when `recorded` is the only strategy replayed.
"""

from __future__ import annotations

import pandas as pd

from compactlab.results.fidelity_figures import counts_line
from compactlab.results.reacquisition_figures import per_compaction_line, pooled_line

RECORDED = "recorded"
COLUMNS = ("session", "compactions", "removed_share", "preservation_k1", "preservation_k5", "damaged")


def recorded_rows(sessions: pd.DataFrame) -> pd.DataFrame:
    """One row per session with a real compaction, under the `recorded` strategy."""
    if sessions.empty:
        return pd.DataFrame(columns=COLUMNS)
    rows = sessions[(sessions["setting"] == RECORDED) & (sessions["compactions"] > 0)]
    return rows[[c for c in COLUMNS if c in rows]].reset_index(drop=True)


def format_recorded(
    rows: list[dict],
    fidelity: list[dict],
    replayed: int,
    reacquisition: dict | None = None,
    figures: dict | None = None,
    costs: dict | None = None,
) -> str:
    """The production compactions of a run, for the terminal; `reacquisition`: summary.json's
    `trust.reacquisition` (`compactlab.scoring.reacquisition`); `figures`: its `fidelity`, each real
    compaction counted once, per family (`compactlab.results.fidelity_figures`); `costs`: its
    `real_costs` (`compactlab.results.real_costs`)."""
    lines = [f"production compactions (strategy {RECORDED}): {len(rows)} of {replayed} sessions hold a real compaction"]
    for row in rows:
        kept = "n/a" if pd.isna(row.get("preservation_k1")) else f"{100 * row['preservation_k1']:.1f}%"
        damaged = "  (damaged records: not ranked)" if row.get("damaged") else ""
        lines.append(
            f"  {row['session']}: {row['compactions']} compactions, {100 * row['removed_share']:.1f}% of tokens removed, "
            f"next step kept (k=1) {kept}{damaged}"
        )
    for check in fidelity:
        counted = f" [not counted: {check['left_out']}]" if check.get("left_out") else ""
        lines.append(
            f"  fidelity {check['session']} call {check['call']}: replay predicted {check['fidelity_predicted']:,.0f} tokens, "
            f"recorded {check['fidelity_recorded']:,.0f} ({100 * check['relative_error']:+.1f}%){counted}"
        )
    if figures and fidelity:
        lines.append(f"  fidelity at the real compactions: {counts_line(figures)}")
        for family, found in figures.get("families", {}).items():
            apart = f" (shown apart: {found['apart']})" if found.get("apart") else ""
            lines.append(f"    {family}: {found['line']}{apart}")
    if costs and costs.get("families"):
        lines.append(
            "  real cost of the production compactions (the summarizer where the log records it, the prompt of the first "
            "call after) beside the replay's model of it:"
        )
        for family, found in costs["families"].items():
            lines.append(f"    {family}: {found['line']}")
    if reacquisition and reacquisition["compactions"]:
        lines.append("  re-acquired before use after the real compactions (a lost item really gone must come back):")
        if "per_compaction" in reacquisition:  # a summary.json before issue 41 has only the pooled counts
            lines.append(f"    {per_compaction_line(reacquisition)}")
            lines.append(f"    {pooled_line(reacquisition)}")
        else:
            lines.append(f"    pooled: lost {_share(reacquisition, 'lost')}, kept {_share(reacquisition, 'kept')}")
        if reacquisition.get("lost_at_once"):
            lines.append(
                f"  {reacquisition['lost_at_once']} of the {reacquisition['lost']} lost items were used before any message could "
                "bring them back: the real compacted context held them (re-attachments the file does not record?), not the replay's"
            )
    return "\n".join(lines)


def _share(reacquisition: dict, side: str) -> str:
    count, back = reacquisition[side], reacquisition[f"{side}_reacquired"]
    return f"{back} of {count} ({100 * back / count:.0f}%)" if count else "0 of 0"
