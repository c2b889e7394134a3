"""Writing the estimation benchmark: per-call table, summary JSON, HTML page."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pandas as pd

from compactlab.results.leaderboard import json_records
from compactlab.sessions.neutralise import write_csv
from compactlab.tokens.calibration import SHIPPED_FIT
from compactlab.tokens.estimation import IN_SAMPLE, THRESHOLDS, EstimationResult, summarize, summarize_by_source


def summary_document(result: EstimationResult, settings: dict, summary: pd.DataFrame | None = None) -> dict:
    """Everything a reader needs to trust the numbers: settings, what was left out, fits, summary."""
    summary = summarize(result.calls) if summary is None else summary
    return {
        "settings": {**settings, "thresholds": list(THRESHOLDS)},
        "sessions": int(result.calls["session"].nunique()),
        "calls": int(result.calls[["session", "call"]].drop_duplicates().shape[0]),
        "left_out": {
            # with `damaged_kept` they were estimated (their rows say `damaged`), not left out
            "damaged_sessions": list(result.damaged_sessions),
            "damaged_kept": result.damaged_kept,
            "skipped_records": result.skipped_records,
            "sessions_without_calls": result.sessions_without_calls,
            "first_calls": int(result.calls.loc[result.calls["first_call"], ["session"]].drop_duplicates().shape[0]),
        },
        "calibration": [asdict(fit) for fit in result.fits.values()],
        "uncalibrated_calls": result.uncalibrated_calls or {},
        "summary": json_records(summary),
        # bias and error per source and per model family, each beside the pooled figure ("all")
        "by_source": json_records(summarize_by_source(result.calls)),
        "by_family": json_records(summarize_by_source(result.calls, by="family")),
    }


def write_estimation(
    result: EstimationResult, out: Path, settings: dict, table_format: str = "csv", summary: pd.DataFrame | None = None
) -> list[Path]:
    summary = summarize(result.calls) if summary is None else summary
    out.mkdir(parents=True, exist_ok=True)
    written = []
    if table_format == "parquet":
        try:
            import pyarrow  # noqa: F401  (pandas needs it for parquet)
        except ImportError as exc:
            raise ValueError("--table parquet needs pyarrow: pip install pyarrow (or use --table csv)") from exc
        calls_path = out / "calls.parquet"
        result.calls.to_parquet(calls_path, index=False)
    else:
        calls_path = out / "calls.csv"
        write_csv(result.calls, calls_path)  # ids and models come from sessions: no formulas
    written.append(calls_path)
    summary_path = out / "summary.json"
    summary_path.write_text(json.dumps(summary_document(result, settings, summary), indent=2) + "\n", encoding="utf-8")
    written.append(summary_path)
    from compactlab.report.estimation_section import write_estimation_report

    written.append(write_estimation_report(result, summary, out / "estimation.html"))
    return written


def format_summary(result: EstimationResult, summary: pd.DataFrame | None = None) -> str:
    summary = summarize(result.calls) if summary is None else summary
    if summary.empty:
        return "no recorded LLM calls to compare with"
    columns = [
        "estimator",
        "family",
        "calls",
        "bias_pct",
        "mape_pct",
        "median_abs",
        "p95_abs",
        "under5_pct",
        "late_0.8",
        "early_0.8",
    ]
    table = summary[columns].round(
        {"bias_pct": 1, "mape_pct": 1, "median_abs": 0, "p95_abs": 0, "under5_pct": 1, "late_0.8": 2, "early_0.8": 2}
    )
    lines = [table.to_string(index=False), "", "per source, beside the pooled figure (all):"]
    by_source = summarize_by_source(result.calls).round({"bias_pct": 1, "mape_pct": 1, "under5_pct": 1, "over5_pct": 1})
    lines += [by_source.to_string(index=False), ""]
    for fit in result.fits.values():
        lines.append(
            f"calibrated {fit.family}: tokens ≈ {fit.slope:.4f} × {fit.base} + {fit.intercept:.0f}  ({fit.train_calls} calls, {fit.train_sessions} sessions)"
        )
    if result.fits:
        lines.append(
            f"calibrated: the shipped fit ({SHIPPED_FIT.name}); {IN_SAMPLE!r} is its error on the sessions it was trained on, never its score"
        )
    for family, count in sorted((result.uncalibrated_calls or {}).items()):
        lines.append(f"not calibrated: {count} calls of model family {family!r}, which has no shipped calibration")
    if result.damaged_sessions and result.damaged_kept:
        lines.append(
            f"kept (--lenient): {len(result.damaged_sessions)} sessions with damaged records, {result.skipped_records} "
            "records skipped in them (a lost message reads as estimator error; their rows in calls.csv say `damaged`)"
        )
    elif result.damaged_sessions:
        lines.append(
            f"left out: {len(result.damaged_sessions)} sessions with damaged records (a lost message would read as estimator error)"
        )
    if result.sessions_without_calls:
        lines.append(f"left out: {result.sessions_without_calls} sessions with no recorded LLM calls")
    lines.append("first call of each session not scored: it sets the per-session constant for sources without the system prompt")
    return "\n".join(lines)
