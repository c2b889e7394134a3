"""Strategy-level results: each setting's figures with bootstrap CIs, the recommendation, comparisons.

`setting_figures` is the one computation of a setting's figures: every metric of
`compactlab.results.catalogue.REPORTED` over the sessions it replayed (means with 95% bootstrap intervals;
sessions are the unit, as calls of one session are not independent; sums where the catalogue
says so). The CLI, summary.json, the sweep, the report and `compactlab diff` all read it, and
`compactlab.results.recommendation.recommend` picks the setting to use from it.

Significance: the recommended setting against each other setting, on the sessions both have
(paired bootstrap, 10,000 resamples, two-sided p), Holm-adjusted over those n − 1 tests per metric.
Every pair of settings is compared only on request (`all_pairs`): Holm over all pairs of twenty
settings (190 per metric) would hide real differences behind tests nobody asked for.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from compactlab.results.catalogue import REPORTED, metric
from compactlab.results.cost_split import cost_split
from compactlab.results.fidelity_figures import fidelity_document, with_families
from compactlab.results.metrics import compression_label, with_derived
from compactlab.results.reacquisition_figures import reacquisition_summary
from compactlab.results.real_costs import costs_document
from compactlab.results.recommendation import Recommendation, Rule, recommend, with_evidence
from compactlab.results.recorded_results import recorded_rows
from compactlab.results.run_failures import INCOMPLETE, failure_ranks, failure_records
from compactlab.results.same_by_construction import SameGroup, one_note, one_row_each
from compactlab.results.terminal_table import fitted_table, wrapped
from compactlab.results.unfit_sessions import fitting, unfit_sessions
from compactlab.scoring.statistics import pairwise_comparisons, summarize_by_strategy

# How a row of settings identical by construction names them (`format_leaderboard`).
SAME_NAMES = " = "
# Not a strategy one can choose: the production agent's own compactions, scored where they happened.
NOT_RANKED = frozenset({"recorded"})

MEAN_COLUMNS = tuple(name for name in (*REPORTED, "total_cost", "cost_full") if metric(name).aggregate == "mean")
# (and why over-window calls happened: the setting could not act, `compactlab.results.recommendation`)
SUM_COLUMNS = tuple(name for name in REPORTED if metric(name).aggregate == "sum") + ("over_window_unacted_calls",)
# The leaderboard's columns in a terminal too narrow for all: the figures the rule weighs first.
NARROW_ORDER = (
    "removed_share",
    "preservation_or_untouched",
    "preservation_k1",
    "over_window_calls",
    "cost_change",
    *(
        name
        for name in REPORTED
        if name not in {"removed_share", "preservation_or_untouched", "preservation_k1", "over_window_calls", "cost_change"}
    ),
)
# The metrics the recommended setting is compared on: the two axes of the rule and of the Pareto plot.
COMPARED = ("removed_share", "preservation_or_untouched")


def ranked(sessions: pd.DataFrame) -> pd.DataFrame:
    """The rows statistics are computed on: choosable strategies on undamaged sessions that some
    setting can keep under the window (`compactlab.results.unfit_sessions`), leaving out strategies
    whose compactions failed or fell back too often (bench/results/run_failures.py)."""
    sessions = fitting(sessions)
    keep = ~sessions["setting"].isin(NOT_RANKED)
    for flag in ("damaged", INCOMPLETE):
        if flag in sessions:
            keep &= ~sessions[flag].astype(bool)
    return with_derived(sessions[keep])


def setting_figures(sessions: pd.DataFrame, resamples: int = 10_000) -> pd.DataFrame:
    """One row per setting, most tokens removed first: `<metric>_mean/_low/_high/_n` for the mean
    metrics, `<metric>_total` for the summed ones, `sessions`, `compacted_in` (sessions it
    compacted) and `compression` ('3.7% removed, 1.04×'). Empty when nothing is ranked (e.g. a run
    of `recorded` alone, or only damaged sessions)."""
    frame = ranked(sessions)
    if frame.empty:
        return pd.DataFrame()
    board = summarize_by_strategy(frame, MEAN_COLUMNS, strategy_col="setting", resamples=resamples)
    grouped = frame.groupby("setting")
    for name in SUM_COLUMNS:
        board[f"{name}_total"] = board["setting"].map(grouped[name].sum()).astype(int)
    board["compacted_in"] = board["setting"].map(grouped["compactions"].agg(lambda s: int((s > 0).sum())))
    board["compression"] = board["removed_share_mean"].map(lambda s: compression_label(s) if not math.isnan(s) else "")
    return board.sort_values(["removed_share_mean", "setting"], ascending=[False, True]).reset_index(drop=True)


# The leaderboard of a run is its settings' figures.
leaderboard = setting_figures


def comparisons(sessions: pd.DataFrame, against: str | None, resamples: int = 10_000) -> dict[str, pd.DataFrame]:
    """Paired comparisons of `against` (the recommended setting) with each other setting, per
    compared metric, Holm-adjusted over those n − 1 tests; empty without a setting to compare against."""
    frame = ranked(sessions)
    if against is None or against not in set(frame["setting"]):
        return {}
    return {
        column: pairwise_comparisons(frame, column, baseline=against, strategy_col="setting", resamples=resamples)
        for column in COMPARED
    }


def all_pair_comparisons(sessions: pd.DataFrame, resamples: int = 10_000) -> dict[str, pd.DataFrame]:
    """Every pair of settings, per compared metric, Holm-adjusted over all pairs (on request only)."""
    frame = ranked(sessions)
    return {column: pairwise_comparisons(frame, column, strategy_col="setting", resamples=resamples) for column in COMPARED}


def evidenced(recommendation: Recommendation, sessions: pd.DataFrame, versus: dict[str, pd.DataFrame]) -> Recommendation:
    """The recommendation with what it rests on: the recommended setting's compactions in the ranked
    sessions, and which settings its tokens removed is significantly ahead of (`versus`, `comparisons`)."""
    if recommendation.setting is None:
        return recommendation
    frame = ranked(sessions)
    compactions = int(frame.loc[frame["setting"] == recommendation.setting, "compactions"].sum())
    table = versus.get("removed_share", pd.DataFrame())
    behind = {row["strategy_a"]: bool(row["significant"]) for _, row in table.iterrows()} if not table.empty else {}
    return with_evidence(recommendation, compactions, behind)


def comparisons_document(tables: dict[str, pd.DataFrame], against: str | None, family: str) -> dict:
    return {"against": against, "family": family, "metrics": {k: json_records(v) for k, v in tables.items()}}


def summary_document(result, resamples: int = 10_000, rule: Rule = Rule(), all_pairs: bool = False) -> dict:
    """Everything `summary.json` holds: with `all_pairs`, every pair of settings compared too."""
    sessions = result.sessions
    document: dict = {
        "sessions": int(sessions["session"].nunique()) if not sessions.empty else 0,
        "strategies": sorted(sessions["setting"].unique().tolist()) if not sessions.empty else [],
        "left_out": {
            "files_not_read": [{"path": str(f.path), "error": f.error} for f in result.read.failed],
            "sessions_without_calls": sorted({t.id for t in result.read.sessions if not t.call_count}),
            "skipped_records": {t.id: len(t.skipped) for t in result.read.sessions if t.skipped},
            "not_ranked": "sessions with skipped records are replayed but left out of the statistics; "
            "'recorded' (the production agent's own compactions) is reported separately; so are strategies "
            "with more failed or fallen-back compactions than max_failed_share allows (see failures)",
        },
        # Per strategy setting with failed or fallen-back compactions (bench/results/run_failures.py).
        "failures": failure_records(sessions, getattr(result, "max_failed_share", 0.0)),
    }
    document["complete"] = not failure_ranks(document, ranked=False)
    if sessions.empty:
        return document
    document["recorded"] = json_records(recorded_rows(sessions))
    document["costs"] = cost_split(ranked(sessions), [t.id for t in result.read.sessions if t.call_count and not t.timed])
    figures = setting_figures(sessions, resamples)
    document["left_out"]["unfit_sessions"] = unfit = unfit_sessions(sessions)
    recommendation = recommend(figures, rule, unfit)
    document["leaderboard"] = json_records(figures)
    document["recommendation"] = recommendation.as_json()
    against = recommendation.setting
    versus = comparisons(sessions, against, resamples)
    recommendation = evidenced(recommendation, sessions, versus)
    document["recommendation"] = recommendation.as_json()
    document["comparisons"] = comparisons_document(
        versus,
        against,
        f"{against} against each other setting, Holm-adjusted over those {max(len(figures) - 1, 0)} tests per metric"
        if against
        else "none: no setting is recommended",
    )
    if all_pairs:
        document["all_pairs"] = comparisons_document(
            all_pair_comparisons(sessions, resamples), None, "every pair of settings, Holm-adjusted over all pairs per metric"
        )
    # Gathered session by session as the replays came in (compactlab.runs.session_results).
    # Each real compaction counted once, by family (compactlab.results.fidelity_figures).
    formats = {t.id: t.source_format for t in result.read.sessions}
    fidelity = with_families(result.recorded_fidelity, formats)
    document["recorded_fidelity"] = json_records(fidelity)
    document["fidelity"] = fidelity_document(fidelity)
    # How far to trust the numbers: at the real compactions, was what the metric calls lost really gone?
    # (the rows that carry the counts only: reading every compaction row was most of this document's time)
    document["trust"] = {"reacquisition": reacquisition_summary(result.compactions_holding("reacquisition"))}
    # Where each engine's preset would have compacted beside where the real engine did (compactlab.results.real_engines).
    document["presets_vs_engines"] = getattr(result, "engines", None) or {}
    document["cost_model_check"] = json_records(result.cost_model_check)
    # The real cost of each production compaction beside the replay's model of it (compactlab.results.real_costs).
    document["real_costs"] = costs_document(getattr(result, "real_costs", pd.DataFrame()))
    return document


def json_records(frame: pd.DataFrame) -> list[dict]:
    """A frame as JSON-ready rows: NaN (a metric that cannot be computed) becomes null, numpy
    scalars plain Python values."""
    return [{k: _plain(v) for k, v in row.items()} for row in frame.to_dict(orient="records")]


def _plain(value: object) -> object:
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "item"):
        return value.item()
    return value


def format_leaderboard(
    board: pd.DataFrame, recommendation: Recommendation | None = None, same: Sequence[SameGroup] = (), width: int | None = None
) -> str:
    """The figures of `REPORTED` under their catalogue labels, one row per setting; the intervals of
    the two the recommendation weighs; ★ recommended, ◆ on the frontier, ✗ not recommendable.
    Settings identical by construction (`same`, `compactlab.results.same_by_construction`) are one row naming them all.
    `width`: a terminal's columns, which every line then fits (`compactlab.results.terminal_table`); the
    full figures stay in summary.json and --json."""
    board, merged = one_row_each(board, same, recommendation.setting if recommendation is not None else None)
    order = REPORTED if width is None else NARROW_ORDER  # fitted to a terminal, the rule's figures come first
    rows = []
    for _, row in board.iterrows():
        setting, mark = row["setting"], ""
        labels = merged[setting].labels if setting in merged else (setting,)
        if recommendation is not None:
            mark = (
                " ★"
                if setting == recommendation.setting
                else " ◆"
                if set(labels) & set(recommendation.frontier)
                else (" ✗" if setting in recommendation.not_recommendable else "")
            )
        rows.append([f"{SAME_NAMES.join(labels)}{mark}"] + [_cell(row, name) for name in order])
    table = fitted_table(["setting"] + [metric(name).label for name in order], rows, width)
    lines: list[str] = []  # what follows the table: prose, wrapped to the width
    if merged:
        lines.append(one_note(list(merged.values())))
    if recommendation is not None:
        lines += [
            "",
            "★ recommended, ◆ on the Pareto frontier of recommendable settings, ✗ not recommendable; "
            "means over sessions, [95% bootstrap interval]",
            recommendation.summary(),
        ]
        for setting, why in recommendation.not_recommendable.items():
            lines.append(f"  ✗ {setting}: {why}")
    return "\n".join(table + (lines if width is None else wrapped(lines, width)))


def _cell(row: pd.Series, name: str) -> str:
    entry = metric(name)
    if entry.aggregate == "sum":
        return entry.format(row.get(f"{name}_total"))
    text = entry.format(row.get(f"{name}_mean"))
    if name in COMPARED and text != "–":
        text += f" [{entry.format(row.get(f'{name}_low'))}, {entry.format(row.get(f'{name}_high'))}]"
    return text
