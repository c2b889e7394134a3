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
from dataclasses import dataclass, field, replace

import pandas as pd

from compactlab.results.catalogue import label
from compactlab.scoring.statistics import pareto_frontier

MIN_KEPT = 0.9
# Fewer compactions of the recommended setting than this, and the verdict is named as resting on too
# few: its facts-kept figure is then a mean of a handful of scores.
MIN_COMPACTIONS = 20
REMOVED, KEPT, KEPT_WHERE_COMPACTED, OVER = (
    "removed_share_mean",
    "preservation_or_untouched_mean",
    "preservation_k1_mean",
    "over_window_calls_total",
)
UNACTED = "over_window_unacted_calls_total"  # of those, in sessions where the setting could not act


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
            f"The verdict states how many compactions it rests on (fewer than {MIN_COMPACTIONS} are too few to go by), and "
            f"when another recommendable setting's {label('removed_share')} is not significantly below the "
            "recommendation's (paired bootstrap over sessions, Holm-adjusted p < 0.05) there is no clear winner: those "
            "settings are named with it. Sessions no setting can keep under the window (their smallest possible prompt, "
            "the smallest recorded prompt plus the largest single step, is over it) are named and left out. "
            f"{label('unrecoverable_loss').capitalize()} and {label('reacquisition_tokens')} are shown beside the rule, "
            f"not used by it: the facts kept already count every lost fact, and the split of the lost ones into "
            f"recoverable, unrecoverable and unknown rests on a reading of the session that no threshold has been "
            f"checked against."
        )

    def why_not(self, row: pd.Series) -> list[str]:
        """The conditions a setting fails (none: it is recommendable)."""
        failed = []
        over = row.get(OVER, 0)
        if over and not (isinstance(over, float) and math.isnan(over)):
            unacted = row.get(UNACTED, 0)
            unacted = 0 if _nan(unacted) else int(unacted)
            failed.append(
                f"{int(over):,} calls over the context window"
                + (f" ({unacted:,} in sessions where every attempt removed nothing: it could not act)" if unacted else "")
            )
        removed, kept, where = row.get(REMOVED), row.get(KEPT), row.get(KEPT_WHERE_COMPACTED)
        if removed is None or kept is None or _nan(removed) or _nan(kept):
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
    setting: str | None  # None: no setting is recommendable
    reason: str  # why this one, or why none
    rule: Rule = field(default_factory=Rule)
    frontier: tuple[str, ...] = ()  # the Pareto frontier of the recommendable settings, by tokens removed
    not_recommendable: dict[str, str] = field(default_factory=dict)  # label -> the conditions it fails
    ties: tuple[str, ...] = ()  # other recommendable settings with exactly the same figures
    # Sessions no setting can keep under the window (compactlab.results.unfit_sessions): left out, with why.
    unfit: dict[str, str] = field(default_factory=dict)
    # The evidence (`with_evidence`): the recommended setting's compactions in the ranked sessions, and the
    # recommendable settings not significantly behind it on tokens removed.
    compactions: int | None = None
    tied: tuple[str, ...] = ()
    # The window the verdict is at ("at each model's real window", "at a simulated 64,000-token window (a
    # stress test)"), set by the run that knows it (`compactlab.runs.verdict_window`); "" where unknown.
    window: str = ""

    @property
    def too_few(self) -> bool:
        return self.compactions is not None and self.compactions < MIN_COMPACTIONS

    @property
    def clear(self) -> bool:
        """A verdict one can act on: a setting, significantly ahead of the rest, on enough compactions."""
        return self.setting is not None and not self.tied and not self.too_few

    def evidence(self) -> str:
        """What the verdict rests on, in one sentence ('' without a recommendation or a count)."""
        if self.setting is None or self.compactions is None:
            return ""
        parts = [f"the verdict rests on {self.compactions:,} compaction{'s' if self.compactions != 1 else ''}"]
        if self.too_few:
            parts[0] += f": too few to go by (fewer than {MIN_COMPACTIONS}); replay more or longer sessions"
        if self.tied:
            parts.append(
                f"no clear winner: {self.setting} is not significantly ahead of {', '.join(self.tied)} on "
                f"{label('removed_share')} (paired bootstrap, Holm-adjusted p ≥ 0.05); any of them does as well on this data"
            )
        return "; ".join(parts)

    def as_json(self) -> dict:
        return {
            "setting": self.setting,
            "reason": self.reason,
            "rule": self.rule.text,
            "min_kept": self.rule.min_kept,
            "frontier": list(self.frontier),
            "not_recommendable": dict(self.not_recommendable),
            "ties": list(self.ties),
            "unfit_sessions": dict(self.unfit),
            "compactions": self.compactions,
            "tied": list(self.tied),
            "clear": self.clear,
            "evidence": self.evidence(),
            "window": self.window,
        }

    @classmethod
    def from_json(cls, document: dict) -> Recommendation:
        return cls(
            document.get("setting"),
            document.get("reason", ""),
            Rule(document.get("min_kept", MIN_KEPT)),
            tuple(document.get("frontier", ())),
            dict(document.get("not_recommendable", {})),
            tuple(document.get("ties", ())),
            dict(document.get("unfit_sessions", {})),
            document.get("compactions"),
            tuple(document.get("tied", ())),
            document.get("window", ""),
        )

    @property
    def verdict_word(self) -> str:
        """'recommended', 'no clear winner; best' or 'tentatively recommended' (a setting is recommended)."""
        return "recommended" if self.clear else "no clear winner; best" if self.tied else "tentatively recommended"

    def short(self) -> str:
        """The verdict in a few words, its window and what it rests on: 'no clear winner; best at … : X (rests
        on 19 compactions)' (a second verdict beside a first one says no more)."""
        at = f" {self.window}" if self.window else ""
        if self.setting is None:
            return f"no recommendation{at}: {self.reason}"
        rests = (
            f" (rests on {self.compactions:,} compaction{'s' if self.compactions != 1 else ''})"
            if self.compactions is not None
            else ""
        )
        return f"{self.verdict_word}{at}: {self.setting}{rests}"

    def summary(self) -> str:
        """The recommendation and the rule, as the CLI prints them."""
        at = f" {self.window}" if self.window else ""
        if self.setting is None:
            head = f"no recommendation{at}: {self.reason}"
        else:
            head = f"{self.verdict_word}{at}: {self.setting} — {self.reason}"
        evidence = self.evidence()
        lines = [
            head,
            *([evidence[0].upper() + evidence[1:]] if evidence else []),
            *self.unfit_lines(),
            f"rule: {self.rule.text}",
        ]
        return "\n".join(lines)

    def unfit_lines(self) -> list[str]:
        """The sessions left out because no setting can keep them under the window, each with why."""
        if not self.unfit:
            return []
        return [
            f"{len(self.unfit)} session{'s' if len(self.unfit) > 1 else ''} left out: no setting can keep "
            f"{'them' if len(self.unfit) > 1 else 'it'} under the window, so {'they' if len(self.unfit) > 1 else 'it'} "
            "would veto every setting",
            *(f"  – {session}: {why}" for session, why in self.unfit.items()),
        ]


def recommend(figures: pd.DataFrame, rule: Rule = Rule(), unfit: dict[str, str] | None = None) -> Recommendation:
    """The rule applied to one row of figures per setting (`setting` plus the columns named above),
    computed without the sessions `unfit` names (no setting can keep them under the window)."""
    unfit = dict(unfit or {})
    if figures.empty:
        return Recommendation(None, "no setting was replayed on sessions the statistics use", rule, unfit=unfit)
    failed = {row["setting"]: rule.why_not(row) for _, row in figures.iterrows()}
    eligible = figures[figures["setting"].map(lambda c: not failed[c])]
    excluded = {c: "; ".join(reasons) for c, reasons in failed.items() if reasons}
    if eligible.empty:
        return Recommendation(None, _why_none(figures, failed, rule), rule, (), excluded, unfit=unfit)
    frontier = pareto_frontier(eligible, (REMOVED, KEPT))
    best = eligible.sort_values([REMOVED, KEPT, "setting"], ascending=[False, False, True], kind="stable").iloc[0]
    ties = eligible[
        (eligible["setting"] != best["setting"]) & (eligible[REMOVED] == best[REMOVED]) & (eligible[KEPT] == best[KEPT])
    ]
    if best[REMOVED] <= 0:
        # Every setting left every prompt as it was: "use X, it removes 0.0%" would be no advice at all.
        reason = (
            f"nothing compacted: none of the {len(figures)} settings removed any prompt tokens in any session (no trigger fired "
            "at this window), so there is nothing to choose between (the next steps name a smaller window, lower triggers)"
        )
        return Recommendation(best["setting"], reason, rule, tuple(frontier["setting"]), excluded, tuple(ties["setting"]), unfit)
    reason = (
        f"it removes {_pct(best[REMOVED])} of the prompt tokens and keeps {_pct(best[KEPT])} of the next step's facts "
        f"({_pct(best[KEPT_WHERE_COMPACTED]) if not _nan(best.get(KEPT_WHERE_COMPACTED, math.nan)) else 'none scored'} where it "
        f"compacted) with no call over the window: the most tokens removed of the {len(eligible)} recommendable "
        f"of {len(figures)} settings"
    )
    return Recommendation(best["setting"], reason, rule, tuple(frontier["setting"]), excluded, tuple(ties["setting"]), unfit)


def _why_none(figures: pd.DataFrame, failed: dict[str, list[str]], rule: Rule) -> str:
    over = figures[figures[OVER].fillna(0) > 0] if OVER in figures else figures.iloc[0:0]
    parts = []
    if len(over):
        fewest = over.sort_values([OVER, "setting"], kind="stable").iloc[0]
        parts.append(
            f"{len(over)} of {len(figures)} settings let calls exceed the context window "
            f"(fewest: {fewest['setting']}, {int(fewest[OVER]):,} calls)"
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


def with_evidence(recommendation: Recommendation, compactions: int, behind: dict[str, bool]) -> Recommendation:
    """The recommendation with what it rests on: `compactions`, the recommended setting's compactions in the
    ranked sessions; `behind`, per other setting, whether its tokens removed is significantly below the
    recommendation's (`compactlab.results.leaderboard.comparisons`). Settings with exactly the same figures
    (`ties`) are named apart, and settings that are not recommendable are not candidates."""
    if recommendation.setting is None:
        return recommendation
    tied = tuple(
        sorted(
            other
            for other, significant in behind.items()
            if not significant and other not in recommendation.not_recommendable and other not in recommendation.ties
        )
    )
    return replace(recommendation, compactions=int(compactions), tied=tied)
