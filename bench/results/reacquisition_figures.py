"""Were the items marked lost really gone? Re-acquisition at real compactions, per compaction first.

Each real compaction holds its own lost and kept items (`compactlab.scoring.reacquisition`), and
the items of one compaction are not independent: one read that brings back 96 column names is
one response to one loss. So the unit is the compaction (issue 41):
- per compaction, the share of its lost items re-acquired before use, the same share of its kept
  items, and their difference where it has both; their mean and median over the compactions,
  and a 95% bootstrap interval of the mean difference, resampling compactions;
- pooled over items beside it, for the record, never alone.
Copies and repeats of a compaction (`compactlab.results.fidelity_figures.repeats_of`: a sub-agent
file that starts with its parent's compaction, the same session saved twice) are listed with
why, and counted in no figure; so is a compaction whose summary is encrypted (Codex's remote
compaction, `UNREADABLE`): what it kept cannot be read, so an item it kept looks lost, and its
figures would describe the encryption, not the metric. Items that came back only in the user's
words or the agent's own call are incidental (`compactlab.scoring.reacquisition`): in neither share.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import pandas as pd

from compactlab.results.fidelity_figures import repeats_of, summary_sha
from compactlab.scoring.reacquisition import COUNTS, share
from compactlab.scoring.recoverability import LABELS
from compactlab.scoring.statistics import bootstrap_ci
from compactlab.sessions.importers.codex_compaction import UNREADABLE_SUMMARY

UNREADABLE = "its summary is encrypted: what it kept cannot be read, so lost cannot be told from kept"


@dataclass(frozen=True)
class PerCompaction:
    """Re-acquisition shares averaged over compactions (None where no compaction has the side)."""

    with_lost: int  # compactions with a counted lost item
    with_kept: int
    with_both: int  # the difference is taken over these
    lost_mean: float | None
    lost_median: float | None
    kept_mean: float | None
    kept_median: float | None
    difference_mean: float | None  # lost share − kept share, per compaction with both
    difference_median: float | None
    difference_low: float | None  # its 95% bootstrap interval over compactions
    difference_high: float | None

    @staticmethod
    def of(counts: Sequence[Mapping[str, int]], resamples: int = 10_000) -> PerCompaction:
        lost = [_share(c, "lost") for c in counts]
        kept = [_share(c, "kept") for c in counts]
        both = [(a, b) for a, b in zip(lost, kept) if a is not None and b is not None]
        differences = [a - b for a, b in both]
        interval = bootstrap_ci(differences, resamples=resamples) if len(differences) > 1 else None
        lost_values = [v for v in lost if v is not None]
        kept_values = [v for v in kept if v is not None]
        return PerCompaction(
            len(lost_values),
            len(kept_values),
            len(both),
            _mean(lost_values),
            _median(lost_values),
            _mean(kept_values),
            _median(kept_values),
            _mean(differences),
            _median(differences),
            interval.low if interval else None,
            interval.high if interval else None,
        )


def _share(counts: Mapping[str, int], side: str) -> float | None:
    return share(counts[f"{side}_reacquired"], counts[side], counts.get(f"{side}_incidental", 0))


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def pooled(counts: Sequence[Mapping[str, int]]) -> dict:
    """The counts summed over compactions, and the shares over those sums (for the record)."""
    totals = {name: sum(int(c.get(name, 0)) for c in counts) for name in COUNTS}
    return {
        **totals,
        "lost_share": share(totals["lost_reacquired"], totals["lost"], totals["lost_incidental"]),
        "kept_share": share(totals["kept_reacquired"], totals["kept"], totals["kept_incidental"]),
        # Per recoverability label: of the lost items so labelled, the share re-acquired before use.
        **{f"{label}_share": share(totals[f"lost_{label}_reacquired"], totals[f"lost_{label}"]) for label in LABELS},
    }


def reacquisition_summary(compactions: pd.DataFrame) -> dict:
    """summary.json's `trust.reacquisition`: the per-compaction figures first, then the pooled
    counts and shares, then every real compaction's counts (the rows that carry them: the
    `recorded` strategy's), copies and repeats marked `left_out` with why and in no figure."""
    rows = []
    if not compactions.empty and "reacquisition" in compactions:
        carrying = compactions[compactions["reacquisition"].map(lambda v: isinstance(v, dict))]
        summaries = carrying["summary"] if "summary" in carrying else pd.Series([None] * len(carrying), index=carrying.index)
        for row, text in zip(carrying.itertuples(), summaries):
            found = row.reacquisition
            rows.append(
                {
                    "session": row.session,
                    "setting": row.setting,
                    "call": int(row.call),
                    "message_index": int(row.message_index),
                    **{name: int(found.get(name, 0)) for name in COUNTS},  # older rows lack the later counts
                    "lost_not_reacquired": list(found["lost_not_reacquired"]),
                    "k": found.get("k"),
                    "summary_sha": summary_sha(text),
                    "unreadable": isinstance(text, str) and UNREADABLE_SUMMARY in text,
                }
            )
    for row, why in zip(rows, repeats_of(rows)):
        row["left_out"] = why or (UNREADABLE if row.pop("unreadable") else "")
    return {**figures_of([row for row in rows if not row["left_out"]]), "compactions": rows}


def figures_of(counts: Sequence[Mapping[str, int]]) -> dict:
    """The figures of some compactions' counts, per compaction first, then pooled (`reacquisition_summary`
    without its rows)."""
    return {"per_compaction": asdict(PerCompaction.of(counts)), "counted": len(counts), **pooled(counts)}


def per_compaction_line(summary: Mapping) -> str:
    """The per-compaction figures of `reacquisition_summary`, in words (terminal and report)."""
    found = summary["per_compaction"]

    def pct(value: float | None) -> str:
        return "–" if value is None else f"{100 * value:.0f}%"

    if found["difference_mean"] is None:
        difference = "no compaction has both lost and kept items"
    else:
        interval = (
            f" [{100 * found['difference_low']:+.0f}, {100 * found['difference_high']:+.0f}]"
            if found["difference_low"] is not None
            else " (one compaction: no interval)"
        )
        difference = (
            f"difference {100 * found['difference_mean']:+.0f} points{interval} "
            f"(median {100 * found['difference_median']:+.0f}) over the {found['with_both']} with both"
        )
    return (
        f"per compaction: lost items re-acquired {pct(found['lost_mean'])} on average (median {pct(found['lost_median'])}, "
        f"{found['with_lost']} compactions), kept {pct(found['kept_mean'])} (median {pct(found['kept_median'])}, "
        f"{found['with_kept']}); {difference}"
    )


def pooled_line(summary: Mapping) -> str:
    """The pooled counts of `reacquisition_summary`, in words, with what was counted in neither share."""

    def side(name: str) -> str:
        counted = summary[name] - summary.get(f"{name}_incidental", 0)
        back = summary[f"{name}_reacquired"]
        return f"{back} of {counted} ({100 * back / counted:.0f}%)" if counted > 0 else "0 of 0"

    incidental = summary.get("lost_incidental", 0) + summary.get("kept_incidental", 0)
    left_out = sum(1 for row in summary["compactions"] if row.get("left_out") and row["left_out"] != UNREADABLE)
    unreadable = sum(1 for row in summary["compactions"] if row.get("left_out") == UNREADABLE)
    return (
        f"pooled over items (not independent): lost {side('lost')}, kept {side('kept')}"
        + (
            f"; in neither share: {summary.get('lost_incidental', 0)} lost and {summary.get('kept_incidental', 0)} kept items "
            "that came back only in the user's words or the agent's own call"
            if incidental
            else ""
        )
        + (f"; {left_out} copies or repeats of a compaction not counted" if left_out else "")
        + (f"; {unreadable} compactions not counted: {UNREADABLE}" if unreadable else "")
    )
