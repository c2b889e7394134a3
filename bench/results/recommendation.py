"""The one recommendation rule: which strategy setting to use. Every surface (the CLI, summary.json,
the sweep, the report, `compactlab diff`) calls `recommend` and states `Rule.text` in full.

It reads a setting's figures (`compactlab.results.leaderboard.setting_figures`, labels in `compactlab.results.catalogue`):

1. Recommendable: a setting none of whose replayed calls exceeds the context window (an over-window
   request fails in production), that keeps at least `min_kept` of the next step's facts (k=1)
   averaged over all sessions (a session it never compacted counts as kept) and also averaged over
   the sessions where it compacted (so that one that loses much whenever it fires cannot win on the
   sessions it never touched).
2. The recommendation: the recommendable setting that removes the most prompt tokens; ties go to
   more facts kept, then to the label in alphabetical order.

Unrecoverable loss and re-acquisition cost (`compactlab.scoring.recoverability`) are shown beside the
rule and not used by it; its text says so and why.

The recommended setting is therefore on the Pareto frontier of the recommendable settings (tokens
removed against next-step facts kept): no recommendable setting is better on both. The frontier
plotted in the report is that frontier. When no setting is recommendable, there is no
recommendation, and the reason says which condition each setting failed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from compactlab.results.catalogue import label
from compactlab.scoring.statistics import pareto_frontier

MIN_KEPT = 0.9
SAVED, KEPT, KEPT_WHERE_COMPACTED, OVER = (
    "removed_share_mean",
    "preservation_or_untouched_mean",
    "preservation_k1_mean",
    "over_window_calls_total",
)


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


@dataclass(frozen=True)
class Rule:
    min_kept: float = MIN_KEPT

    @property
    def threshold(self) -> str:
        return f"{self.min_kept * 100:.1f}".rstrip("0").rstrip(".") + "%"

    @property
    def text(self) -> str:
        return (
            f"A setting is recommendable when none of its replayed calls exceeds the context window (an over-window request "
            f"fails in production) and it keeps at least {self.threshold} of the next step's facts (k=1), both over all "
            f"sessions (a session it never compacted counts as 100% kept) and over the sessions where it compacted. "
            f"The recommendation is the recommendable setting with the most {label('removed_share')} (ties: more facts kept, "
            f"then the label); it lies on the Pareto frontier of the recommendable settings ({label('removed_share')} against "
            f"{label('preservation_or_untouched')}), so no recommendable setting is better on both. "
            f"{label('unrecoverable_loss').capitalize()} and {label('reacquisition_tokens')} are shown beside the rule, "
            f"not used by it: the facts kept already count every lost fact, and the split of the lost ones into "
            f"recoverable, unrecoverable and unknown rests on a reading of the transcript that no threshold has been "
            f"checked against."
        )

    def why_not(self, row: pd.Series) -> list[str]:
        """The conditions a setting fails (none: it is recommendable)."""
        failed = []
        over = row.get(OVER, 0)
        if over and not (isinstance(over, float) and math.isnan(over)):
            failed.append(f"{int(over):,} calls over the context window")
        saved, kept, where = row.get(SAVED), row.get(KEPT), row.get(KEPT_WHERE_COMPACTED)
        if saved is None or kept is None or _nan(saved) or _nan(kept):
            failed.append("no figures to judge it by")
        elif kept < self.min_kept:
            failed.append(f"keeps {_pct(kept)} of the next step's facts (under {self.threshold})")
        if where is not None and not _nan(where) and where < self.min_kept:
            failed.append(f"keeps {_pct(where)} of the next step's facts where it compacted (under {self.threshold})")
        return failed


def _nan(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)


@dataclass(frozen=True)
class Recommendation:
    config: str | None  # None: no setting is recommendable
    reason: str  # why this one, or why none
    rule: Rule = field(default_factory=Rule)
    frontier: tuple[str, ...] = ()  # the Pareto frontier of the recommendable settings, by tokens removed
    not_recommendable: dict[str, str] = field(default_factory=dict)  # label -> the conditions it fails
    ties: tuple[str, ...] = ()  # other recommendable settings with exactly the same figures

    def as_json(self) -> dict:
        return {
            "config": self.config,
            "reason": self.reason,
            "rule": self.rule.text,
            "min_kept": self.rule.min_kept,
            "frontier": list(self.frontier),
            "not_recommendable": dict(self.not_recommendable),
            "ties": list(self.ties),
        }

    @classmethod
    def from_json(cls, document: dict) -> Recommendation:
        return cls(
            document.get("config"),
            document.get("reason", ""),
            Rule(document.get("min_kept", MIN_KEPT)),
            tuple(document.get("frontier", ())),
            dict(document.get("not_recommendable", {})),
            tuple(document.get("ties", ())),
        )

    def summary(self) -> str:
        """The recommendation and the rule, as the CLI prints them."""
        head = f"recommended: {self.config} — {self.reason}" if self.config else f"no recommendation: {self.reason}"
        return f"{head}\nrule: {self.rule.text}"


def recommend(figures: pd.DataFrame, rule: Rule = Rule()) -> Recommendation:
    """The rule applied to one row of figures per setting (`config` plus the columns named above)."""
    if figures.empty:
        return Recommendation(None, "no setting was replayed on sessions the statistics use", rule)
    failed = {row["config"]: rule.why_not(row) for _, row in figures.iterrows()}
    eligible = figures[figures["config"].map(lambda c: not failed[c])]
    excluded = {c: "; ".join(reasons) for c, reasons in failed.items() if reasons}
    if eligible.empty:
        return Recommendation(None, _why_none(figures, failed, rule), rule, (), excluded)
    frontier = pareto_frontier(eligible, (SAVED, KEPT))
    best = eligible.sort_values([SAVED, KEPT, "config"], ascending=[False, False, True], kind="stable").iloc[0]
    ties = eligible[(eligible["config"] != best["config"]) & (eligible[SAVED] == best[SAVED]) & (eligible[KEPT] == best[KEPT])]
    if best[SAVED] <= 0:
        # Every setting left every prompt as it was: "use X, it removes 0.0%" would be no advice at all.
        reason = (
            f"nothing compacted: none of the {len(figures)} settings removed any prompt tokens in any session (no trigger fired "
            "at this window), so there is nothing to choose between; try a smaller window (--window 32000), a lower "
            "trigger (compactlab sweep --thresholds 0.3 0.5 0.7) or longer sessions"
        )
        return Recommendation(best["config"], reason, rule, tuple(frontier["config"]), excluded, tuple(ties["config"]))
    reason = (
        f"it removes {_pct(best[SAVED])} of the prompt tokens and keeps {_pct(best[KEPT])} of the next step's facts "
        f"({_pct(best[KEPT_WHERE_COMPACTED]) if not _nan(best.get(KEPT_WHERE_COMPACTED, math.nan)) else 'none scored'} where it "
        f"compacted) with no call over the window: the most tokens removed of the {len(eligible)} recommendable "
        f"of {len(figures)} settings"
    )
    return Recommendation(best["config"], reason, rule, tuple(frontier["config"]), excluded, tuple(ties["config"]))


def _why_none(figures: pd.DataFrame, failed: dict[str, list[str]], rule: Rule) -> str:
    over = figures[figures[OVER].fillna(0) > 0] if OVER in figures else figures.iloc[0:0]
    parts = []
    if len(over):
        fewest = over.sort_values([OVER, "config"], kind="stable").iloc[0]
        parts.append(
            f"{len(over)} of {len(figures)} settings let calls exceed the context window "
            f"(fewest: {fewest['config']}, {int(fewest[OVER]):,} calls)"
        )
    low = [c for c, reasons in failed.items() if any("facts" in r for r in reasons)]
    if low:
        parts.append(
            f"{len(low)} keep less than {rule.threshold} of the next step's facts (over all sessions or where they compacted)"
        )
    blank = [c for c, reasons in failed.items() if "no figures to judge it by" in reasons]
    if blank:
        parts.append(f"{len(blank)} have no figures to judge them by")
    return "no setting meets the rule: " + "; ".join(parts)
