"""The token-estimation error section: how far each estimator is from what the provider billed.

`estimation_context` turns an `EstimationResult` and its `summarize` frame into plain data (rows
of formatted cells, SVG strings, counts); the jinja2 templates only lay it out. The section
template is reusable: a full report renders it with `render_estimation_section` and puts it in
the same page shell next to other sections.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from markupsafe import Markup

from compactlab.report.charts import clipped_share, error_distribution_chart, scatter_chart
from compactlab.report.page import environment, render_page  # noqa: F401  (render_page: part of this module's API)
from compactlab.tokens.estimation import DEFAULT_ESTIMATORS, IN_SAMPLE, THRESHOLDS, EstimationResult

DEFAULT_TITLE = "compactlab: token-estimation error"
# Relative-error range shown in the distribution chart: wide enough for every estimator's box
# on the bundled data, narrow enough that the good estimators are not squeezed to a line.
ERROR_CLIP = (-0.6, 0.3)
# Estimators worth a scatter panel: the best exact tokenizer, the provider-anchored one, the fitted one.
SCATTER_ESTIMATORS = ("tiktoken-o200k", "hybrid", "calibrated")
MAIN_THRESHOLD = 0.8

# (key, header, tooltip, kind): kind picks the number format.
SUMMARY_COLUMNS: tuple[tuple[str, str, str, str], ...] = (
    ("estimator", "Estimator", "How the prompt size is guessed (see the estimator table in bench/tokens/estimators.py).", "text"),
    ("family", "Family", "Model family: the provider's tokenizer that billed the calls.", "text"),
    (
        "calls",
        "Calls",
        "Scored calls: every recorded call but each session's first (calibrated: sessions its shipped fit was not trained on; calibrated (in-sample): the others).",
        "count",
    ),
    ("sessions", "Sessions", "Sessions these calls come from.", "count"),
    (
        "bias_pct",
        "Bias%",
        "Signed mean relative error, 100·mean((estimate − billed) / billed). Negative: the estimator runs low, so compaction would fire late.",
        "signed",
    ),
    ("mape_pct", "MAPE%", "Mean absolute percentage error, 100·mean(|estimate − billed| / billed). Lower is better.", "pct"),
    ("median_abs", "Median |err|", "Median absolute error in tokens.", "tokens"),
    ("p95_abs", "p95 |err|", "95th percentile of the absolute error in tokens: how bad a bad call gets.", "tokens"),
    (
        "under5_pct",
        "Under >5%",
        "Share of calls whose estimate is more than 5% below the billed count (the risky direction).",
        "pct",
    ),
    (
        f"over_{MAIN_THRESHOLD}",
        "Billed ≥80%",
        "Share of calls whose billed prompt is at or over 80% of the context window: the scale for the two columns after it.",
        "share",
    ),
    (
        f"late_{MAIN_THRESHOLD}",
        "Late @80%",
        "Share of calls where the billed prompt is at or over 80% of the window but the estimate is under: a compaction at 80% would fire too late (overflow risk).",
        "share",
    ),
    (
        f"early_{MAIN_THRESHOLD}",
        "Early @80%",
        "Share of calls where the estimate is at or over 80% of the window but the billed prompt is under: a compaction would fire too early (wasted context).",
        "share",
    ),
    ("other_thresholds", "@75% · @90%", "Late / early shares (in%) with the trigger at 75% and at 90% of the window.", "text"),
)


def render_estimation_section(result: EstimationResult, summary: pd.DataFrame, lazy_charts: bool = False) -> Markup:
    """The section; `lazy_charts`: each chart closed until opened (`compactlab.report.lazy`), as the run report has them."""
    context = estimation_context(result, summary)
    return Markup(environment().get_template("estimation_section.html.j2").render(**context, lazy_charts=lazy_charts))


def render_estimation_page(result: EstimationResult, summary: pd.DataFrame, title: str = DEFAULT_TITLE) -> str:
    return render_page([render_estimation_section(result, summary)], title)


def write_estimation_report(result: EstimationResult, summary: pd.DataFrame, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_estimation_page(result, summary), encoding="utf-8")
    return path


def estimation_context(result: EstimationResult, summary: pd.DataFrame) -> dict[str, Any]:
    """Everything the section template shows, as plain data (numbers already formatted)."""
    calls = result.calls
    # astype(bool): an empty frame has an object column, and `frame[~empty_object]` selects no columns.
    first = calls["first_call"].astype(bool)
    scored = calls[~first]
    estimators = _ordered(summary["estimator"].unique() if not summary.empty else [], (*DEFAULT_ESTIMATORS, IN_SAMPLE))
    families = sorted(summary["family"].unique()) if not summary.empty else []
    one_row_per_call = calls[~calls.duplicated(["session", "call"])]
    scored_calls = one_row_per_call[~first[one_row_per_call.index]]
    charts = []
    if families:
        clipped = {
            e: clipped_share(scored.loc[scored["estimator"] == e, "rel_error"].to_numpy(float), ERROR_CLIP) for e in estimators
        }
        charts.append(
            {
                "id": "estimation-error-distribution",
                "title": "Relative error per estimator",
                "svg": error_distribution_chart(scored, estimators, families, ERROR_CLIP),
                "caption": _distribution_caption(clipped),
            }
        )
        key = [e for e in SCATTER_ESTIMATORS if e in estimators]
        if key:
            charts.append(
                {
                    "id": "estimation-scatter",
                    "title": "Estimated against billed prompt tokens",
                    "svg": scatter_chart(scored, key, families, result.fits),
                    "caption": _scatter_caption(result),
                }
            )
    return {
        "counts": {
            "sessions": _count(one_row_per_call["session"].nunique()),
            "calls": _count(len(one_row_per_call)),
            "scored_calls": _count(len(scored_calls)),
            "first_calls": _count(len(one_row_per_call) - len(scored_calls)),
            "without_calls": _count(result.sessions_without_calls),
            "estimators": len(estimators),
        },
        "damaged": list(result.damaged_sessions),
        "families": _family_rows(scored_calls),
        "columns": [
            {"key": k, "label": label, "title": tip, "numeric": kind != "text"} for k, label, tip, kind in SUMMARY_COLUMNS
        ],
        "summary_rows": _summary_rows(summary, estimators),
        "charts": charts,
        "fits": _fit_rows(result),
        "sessions": _session_rows(scored),
        "session_estimators": list(SCATTER_ESTIMATORS),
        "threshold_note": _threshold_note(scored_calls),
    }


def _ordered(names: Sequence[str], preferred: Sequence[str]) -> list[str]:
    """Known estimators in their usual order (cheap to precise), then any others alphabetically."""
    names = list(names)
    return [n for n in preferred if n in names] + sorted(n for n in names if n not in preferred)


def _summary_rows(summary: pd.DataFrame, estimators: list[str]) -> list[dict[str, Any]]:
    if summary.empty:
        return []
    order = {name: i for i, name in enumerate(estimators)}
    frame = summary.assign(_order=summary["estimator"].map(order)).sort_values(["family", "_order"], kind="stable")
    best = frame.groupby("family")["mape_pct"].transform("min")
    rows = []
    for (_, record), is_best in zip(frame.iterrows(), frame["mape_pct"] == best):
        cells = []
        for key, _, _, kind in SUMMARY_COLUMNS:
            if key == "other_thresholds":
                text = " · ".join(
                    f"{_share(record[f'late_{t}'])}/{_share(record[f'early_{t}'])}" for t in THRESHOLDS if t != MAIN_THRESHOLD
                )
                cells.append({"text": text, "value": text})
            else:
                cells.append({"text": _format(record[key], kind), "value": _sort_value(record[key])})
        rows.append({"cells": cells, "best": bool(is_best)})
    return rows


def _format(value: Any, kind: str) -> str:
    if kind == "text":
        return str(value)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if kind == "count":
        return _count(value)
    if kind == "tokens":
        return f"{value:,.0f}"
    if kind == "signed":
        return f"{value:+.1f}".replace("-", "−")
    if kind == "share":
        return _share(value)
    return f"{value:.1f}"


def _share(value: float) -> str:
    # Trigger shares are often a few tenths of a percent: two decimals keep them visible.
    return f"{value:.2f}"


def _count(value: Any) -> str:
    return f"{int(value):,}"


def _sort_value(value: Any) -> str:
    # A plain machine-readable number for the sorting script (the shown text has separators and signs).
    return repr(float(value)) if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def _distribution_caption(clipped: dict[str, float]) -> str:
    low, high = (f"{100 * v:+.0f}%".replace("-", "−") for v in ERROR_CLIP)
    outside = [f"{name} {_small_pct(share)}" for name, share in clipped.items() if share > 0]
    tail = (
        f" Calls outside that range (not shown, whiskers cut): {', '.join(outside)}." if outside else " No call falls outside it."
    )
    return (
        "Box: middle half of the calls; line: median; diamond: mean; whiskers: 5th to 95th percentile. "
        f"Left of the zero line the estimator runs low. The axis is clipped to {low} … {high}.{tail}"
    )


def _small_pct(share: float) -> str:
    # A handful of calls out of thousands must not print as "0.0%".
    return "<0.1%" if 0 < share < 0.001 else f"{100 * share:.1f}%"


def _scatter_caption(result: EstimationResult) -> str:
    bases = sorted({fit.base for fit in result.fits.values()})
    fitted = (
        (
            f" The dotted grey line in the {', '.join(bases)} panels is the calibration line of families fitted on whole "
            "prompts; the calibrated panels show only sessions the shipped fit was not trained on."
        )
        if bases
        else ""
    )
    return (
        "Each dot is one scored call, coloured by model. On the dashed line the estimate equals the billed count; "
        f"dots below it are underestimates.{fitted}"
    )


def _family_rows(scored_calls: pd.DataFrame) -> list[dict[str, Any]]:
    rows = []
    for family, group in scored_calls.groupby("family", sort=True):
        models = group.groupby("model").size().sort_values(ascending=False, kind="stable")
        rows.append(
            {
                "family": family,
                "calls": _count(len(group)),
                "sessions": _count(group["session"].nunique()),
                "formats": ", ".join(sorted(group["source_format"].unique())),
                "models": [{"name": m, "calls": _count(n)} for m, n in models.items()],
            }
        )
    return rows


def _fit_rows(result: EstimationResult) -> list[dict[str, str]]:
    return [
        {
            "family": fit.family,
            "base": fit.base,
            "slope": f"{fit.slope:.4f}",
            "intercept": f"{fit.intercept:+,.0f}".replace("-", "−"),
            "train_calls": _count(fit.train_calls),
            "train_sessions": _count(fit.train_sessions),
        }
        for _, fit in sorted(result.fits.items())
    ]


def _session_rows(scored: pd.DataFrame) -> list[dict[str, str]]:
    """Per-session errors of the key estimators, so an odd session can be traced back to its file."""
    if scored.empty:
        return []
    mape = scored.assign(abs_rel=scored["rel_error"].abs()).pivot_table(
        index="session", columns="estimator", values="abs_rel", aggfunc="mean"
    )
    info = scored.groupby("session").agg(
        family=("family", "first"),
        source_format=("source_format", "first"),
        split=("split", "first"),
        calls=("call", "nunique"),
        models=("model", lambda m: ", ".join(sorted(m.unique()))),
    )
    rows = []
    for session, record in info.sort_values(["family", "source_format"], kind="stable").iterrows():
        errors = {e: mape.at[session, e] if e in mape.columns else math.nan for e in SCATTER_ESTIMATORS}
        rows.append(
            {
                "session": str(session),
                "family": record["family"],
                "format": record["source_format"],
                "models": record["models"],
                "split": record["split"],
                "calls": _count(record["calls"]),
                "mape": [_format(100 * v, "pct") for v in errors.values()],
            }
        )
    return rows


def _threshold_note(scored_calls: pd.DataFrame) -> str:
    over = {t: int((scored_calls["true_tokens"] >= t * scored_calls["window"]).sum()) for t in THRESHOLDS}
    counts = [f"{_count(n)} reached {t:.0%}" for t, n in over.items()]
    return (
        f"Of {_count(len(scored_calls))} scored calls, only {', '.join(counts[:-1])} and {counts[-1]} "
        "of their context window with the billed prompt."
    )
