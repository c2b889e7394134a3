"""Strategy-level results: means with bootstrap CIs over transcripts, paired comparisons, fidelity.

Metrics per transcript × strategy (from `bench.metrics.transcript_summary`) are averaged per
strategy over transcripts, with 95% bootstrap confidence intervals (transcripts are the unit:
calls of one session are not independent). Strategies are compared pairwise on the transcripts
they share (paired bootstrap, 10,000 resamples, two-sided p, Holm-adjusted).
"""

from __future__ import annotations

import math

import pandas as pd

from bench.metrics import compression_label, cost_model_check
from bench.run_failures import INCOMPLETE, failure_ranks, failure_records
from bench.statistics import pairwise_comparisons, summarize_by_strategy

# Not a strategy one can choose: the production agent's own compactions, scored where they happened.
NOT_RANKED = frozenset({"recorded"})

LEADERBOARD_COLUMNS = ("removed_share", "preservation_k1", "preservation_k5", "compactions", "total_cost", "cost_change")


def ranked(transcripts: pd.DataFrame) -> pd.DataFrame:
    """The rows statistics are computed on: choosable strategies on undamaged transcripts, leaving
    out strategies whose compactions failed or fell back too often (bench/run_failures.py)."""
    keep = ~transcripts["config"].isin(NOT_RANKED)
    for flag in ("damaged", INCOMPLETE):
        if flag in transcripts:
            keep &= ~transcripts[flag].astype(bool)
    return transcripts[keep]


def leaderboard(transcripts: pd.DataFrame, resamples: int = 10_000) -> pd.DataFrame:
    transcripts = ranked(transcripts)
    frame = transcripts.assign(cost_change=transcripts["total_cost"] - transcripts["cost_full"])
    board = summarize_by_strategy(frame, LEADERBOARD_COLUMNS, strategy_col="config", resamples=resamples)
    board["compression"] = board["removed_share_mean"].map(lambda s: compression_label(s) if not math.isnan(s) else "")
    return board.sort_values("removed_share_mean", ascending=False).reset_index(drop=True)


def comparisons(transcripts: pd.DataFrame, resamples: int = 10_000) -> dict[str, pd.DataFrame]:
    """Paired comparisons of every pair of strategies, per key metric."""
    transcripts = ranked(transcripts)
    return {
        column: pairwise_comparisons(transcripts, column, strategy_col="config", resamples=resamples)
        for column in ("removed_share", "preservation_k1")
    }


def recorded_fidelity(compactions: pd.DataFrame) -> pd.DataFrame:
    """Real compactions: the replay's predicted prompt of the first call after it vs the recorded one."""
    if compactions.empty or "fidelity_recorded" not in compactions:
        return pd.DataFrame()
    rows = compactions[compactions["fidelity_recorded"].notna()]
    frame = rows[["transcript", "config", "call", "fidelity_predicted", "fidelity_recorded"]].copy()
    frame["relative_error"] = (frame["fidelity_predicted"] - frame["fidelity_recorded"]) / frame["fidelity_recorded"]
    return frame.reset_index(drop=True)


def summary_document(result, resamples: int = 10_000) -> dict:
    """Everything `summary.json` holds."""
    transcripts = result.transcripts
    document: dict = {
        "transcripts": int(transcripts["transcript"].nunique()) if not transcripts.empty else 0,
        "strategies": sorted(transcripts["config"].unique().tolist()) if not transcripts.empty else [],
        "left_out": {
            "files_not_read": [{"path": str(f.path), "error": f.error} for f in result.read.failed],
            "transcripts_without_calls": sorted({t.id for t in result.read.transcripts if not t.calls}),
            "skipped_records": {t.id: len(t.skipped) for t in result.read.transcripts if t.skipped},
            "not_ranked": "transcripts with skipped records are replayed but left out of the statistics; "
            "'recorded' (the production agent's own compactions) is reported separately; so are strategies "
            "with more failed or fallen-back compactions than max_failed_share allows (see failures)",
        },
        # Per strategy setting with failed or fallen-back compactions (bench/run_failures.py).
        "failures": failure_records(transcripts, getattr(result, "max_failed_share", 0.0)),
    }
    document["complete"] = not failure_ranks(document, ranked=False)
    if transcripts.empty:
        return document
    document["leaderboard"] = json_records(leaderboard(transcripts, resamples))
    document["comparisons"] = {k: json_records(v) for k, v in comparisons(transcripts, resamples).items()}
    document["recorded_fidelity"] = json_records(recorded_fidelity(result.compactions))
    document["cost_model_check"] = json_records(cost_model_check(result.calls, result.read.transcripts))
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


def format_leaderboard(board: pd.DataFrame) -> str:
    def ci(row, column, scale=100.0, digits=1):
        mean, low, high = (row[f"{column}_{p}"] for p in ("mean", "low", "high"))
        if mean is None or (isinstance(mean, float) and math.isnan(mean)):
            return "n/a"
        return f"{mean * scale:.{digits}f} [{low * scale:.{digits}f}, {high * scale:.{digits}f}]"

    lines = [f"{'strategy':24} {'tokens removed % [95% CI]':28} {'next step kept % (k=1)':26} {'compactions':>11} {'cost change $':>14}"]
    for _, row in board.iterrows():
        cost = row["cost_change_mean"]
        lines.append(
            f"{row['config']:24} {ci(row, 'removed_share'):28} {ci(row, 'preservation_k1'):26} "
            f"{row['compactions_mean']:11.1f} {('n/a' if math.isnan(cost) else f'{cost:+.4f}'):>14}"
        )
    return "\n".join(lines)
