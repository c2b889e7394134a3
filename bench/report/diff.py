"""`compactlab diff RUN_A RUN_B`: what got better or worse between two runs, per metric and per session.

Strategies are matched by label, sessions by id. For each strategy in both runs and each
metric, the change B − A is a paired bootstrap over the sessions both runs replayed (the
same session is the pair, so its own difficulty cancels out). Per session, a change beyond
the metric's tolerance in the good direction is "better", in the bad one "worse".
Only `sessions.csv` and `config.json` of each run are needed (plus sweep.json if there is one).
Like the leaderboard, the comparison leaves out `recorded` and sessions with damaged records.
The metrics, their labels, directions and tolerances are those of `compactlab.results.catalogue.REPORTED`, and
a run's recommendation is its summary.json's (`compactlab.results.recommendation`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from markupsafe import Markup

from compactlab.report.page import environment, render_page
from compactlab.report.run_data import RunData, figures_and_recommendation, load_light, ranked_rows
from compactlab.results.catalogue import REPORTED, Metric
from compactlab.results.catalogue import metric as metric_named
from compactlab.results.recommendation import Recommendation
from compactlab.scoring.statistics import paired_bootstrap

# Per session, so the totals (over-window calls added up) are compared as their per-session values.
METRICS = tuple(metric_named(name) for name in REPORTED)


@dataclass(frozen=True)
class RunDiff:
    a: RunData
    b: RunData
    metrics: pd.DataFrame  # label, metric, a, b, change, low, high, n, p, verdict
    sessions: pd.DataFrame  # label, session, metric, a, b, change, verdict (only changes beyond tolerance)
    only_a: tuple[str, ...]
    only_b: tuple[str, ...]
    shared_sessions: int
    sessions_only_a: int
    sessions_only_b: int


def diff_runs(a_dir: str | Path, b_dir: str | Path, resamples: int = 10_000) -> RunDiff:
    a, b = load_light(a_dir), load_light(b_dir)
    fa, fb = ranked_rows(a), ranked_rows(b)
    labels_a, labels_b = set(fa["setting"]), set(fb["setting"])
    ids_a, ids_b = set(fa["session"]), set(fb["session"])
    metric_rows, session_rows = [], []
    for label in sorted(labels_a & labels_b):
        left = fa[fa["setting"] == label].set_index("session")
        right = fb[fb["setting"] == label].set_index("session")
        shared = sorted(set(left.index) & set(right.index))
        for metric in METRICS:
            x, y = left.loc[shared, metric.name].to_numpy(float), right.loc[shared, metric.name].to_numpy(float)
            paired = paired_bootstrap(y, x, resamples=resamples)
            # Judged on per-session means; a metric the catalogue adds up is shown as its total, as everywhere.
            scale = paired.n if metric.aggregate == "sum" else 1
            # A and B over the same pairs as B − A (a figure one run lacks, e.g. a strategy that
            # compacted a session in one run only, is in neither), so that B − A is their difference.
            pairs = ~(np.isnan(x) | np.isnan(y))
            metric_rows.append(
                {
                    "label": label,
                    "metric": metric.label,
                    "kind": metric.kind,
                    "a": scale * _mean(x[pairs]),
                    "b": scale * _mean(y[pairs]),
                    "change": scale * paired.mean_diff,
                    "low": scale * paired.low,
                    "high": scale * paired.high,
                    "n": paired.n,
                    "p": paired.p_value,
                    "verdict": _verdict(metric, paired.mean_diff, paired.low, paired.high),
                }
            )
            for session, before, after in zip(shared, x, y):
                if (
                    math.isnan(before)
                    or math.isnan(after)
                    or abs(after - before) <= metric.tolerance
                    or metric.direction == "neither"
                ):
                    continue
                better = (after - before) * _sign(metric) > 0
                session_rows.append(
                    {
                        "label": label,
                        "session": session,
                        "metric": metric.label,
                        "kind": metric.kind,
                        "a": before,
                        "b": after,
                        "change": after - before,
                        "verdict": "better" if better else "worse",
                    }
                )
    return RunDiff(
        a=a,
        b=b,
        metrics=pd.DataFrame(metric_rows),
        sessions=pd.DataFrame(session_rows),
        only_a=tuple(sorted(labels_a - labels_b)),
        only_b=tuple(sorted(labels_b - labels_a)),
        shared_sessions=len(ids_a & ids_b),
        sessions_only_a=len(ids_a - ids_b),
        sessions_only_b=len(ids_b - ids_a),
    )


def _sign(metric: Metric) -> int:
    return {"higher": 1, "lower": -1}.get(metric.direction, 0)


def _mean(values: np.ndarray) -> float:
    kept = values[~np.isnan(values)]
    return float(kept.mean()) if len(kept) else math.nan


def _verdict(metric: Metric, change: float, low: float, high: float) -> str:
    """'better'/'worse' when the whole 95% interval is on one side of zero and the change is material
    (at least a fifth of the per-session tolerance); 'negligible' when it is real but smaller;
    else 'same' ('changed' for metrics with no good direction)."""
    if any(isinstance(v, float) and math.isnan(v) for v in (change, low, high)):
        return "n/a"
    if low <= 0 <= high:
        return "same"
    if abs(change) < metric.tolerance / 5:
        return "negligible"
    if metric.direction == "neither":
        return "changed"
    return "better" if change * _sign(metric) > 0 else "worse"


KINDS = {m.kind: m for m in METRICS}  # a metric of each kind, to format a row by its kind


def fmt(value: float, kind: str, signed: bool = False) -> str:
    """As the catalogue formats a figure of this kind (a true minus sign)."""
    return KINDS[kind].format(value, signed).replace("-", "−")


def recommendations(diff: RunDiff) -> tuple[Recommendation, Recommendation]:
    return figures_and_recommendation(diff.a)[1], figures_and_recommendation(diff.b)[1]


def format_diff(diff: RunDiff, limit: int = 25) -> str:
    rec_a, rec_b = recommendations(diff)
    lines = [
        f"A: {diff.a.path}   B: {diff.b.path}",
        f"{diff.shared_sessions} sessions in both runs ({diff.sessions_only_a} only in A, {diff.sessions_only_b} only in B)",
        f"recommended: A {rec_a.setting or '– (' + rec_a.reason + ')'}; B {rec_b.setting or '– (' + rec_b.reason + ')'}",
        f"rule: {rec_b.rule.text}",
    ]
    if diff.only_a or diff.only_b:
        lines.append(f"strategies only in A: {', '.join(diff.only_a) or '–'}; only in B: {', '.join(diff.only_b) or '–'}")
    lines += [
        "",
        "A, B: means over the sessions where both runs have the figure for the strategy; B − A: paired bootstrap over them",
        f"{'strategy':24} {'metric':44} {'A':>9} {'B':>9} {'B − A [95% CI]':>32}  verdict",
    ]
    for row in diff.metrics.itertuples():
        ci = f"{fmt(row.change, row.kind, True)} [{fmt(row.low, row.kind, True)}, {fmt(row.high, row.kind, True)}]"
        lines.append(
            f"{row.label:24} {row.metric:44} {fmt(row.a, row.kind):>9} {fmt(row.b, row.kind):>9} {ci:>32}  {row.verdict}"
        )
    changed = diff.sessions
    lines.append("")
    if changed.empty:
        lines.append("no session changed beyond the tolerances")
        return "\n".join(lines)
    counts = changed.groupby("verdict").size().to_dict()
    lines.append(
        f"per session, beyond tolerance: {counts.get('better', 0)} better, {counts.get('worse', 0)} worse "
        f"(tolerances: {', '.join(f'{m.label} {fmt(m.tolerance, m.kind)}' for m in METRICS if m.direction != 'neither')})"
    )
    biggest = changed.assign(size=changed["change"].abs()).sort_values("size", ascending=False).head(limit)
    for row in biggest.itertuples():
        lines.append(
            f"  {row.verdict:6} {row.label:20} {row.session[:44]:44} {row.metric}: {fmt(row.a, row.kind)} → {fmt(row.b, row.kind)}"
        )
    if len(changed) > limit:
        lines.append(f"  … {len(changed) - limit} more in the HTML page")
    return "\n".join(lines)


def render_diff_page(diff: RunDiff) -> str:
    recommended_a, recommended_b = recommendations(diff)
    rule = recommended_b.rule.text
    rec_a, rec_b = recommended_a.setting, recommended_b.setting
    metrics = [
        {
            **row,
            "a_text": fmt(row["a"], row["kind"]),
            "b_text": fmt(row["b"], row["kind"]),
            "change_text": fmt(row["change"], row["kind"], True),
            "ci": f"[{fmt(row['low'], row['kind'], True)}, {fmt(row['high'], row['kind'], True)}]",
            "p_text": "–" if math.isnan(row["p"]) else f"{row['p']:.3f}",
        }
        for row in diff.metrics.to_dict("records")
    ]
    changed = [
        {
            **row,
            "a_text": fmt(row["a"], row["kind"]),
            "b_text": fmt(row["b"], row["kind"]),
            "change_text": fmt(row["change"], row["kind"], True),
        }
        for row in diff.sessions.to_dict("records")
    ]
    section = (
        environment()
        .get_template("diff.html.j2")
        .render(
            a=str(diff.a.path),
            b=str(diff.b.path),
            rec_a=rec_a,
            rec_b=rec_b,
            rule=rule,
            metrics=metrics,
            changed=changed,
            material=[m for m in metrics if m["verdict"] in ("better", "worse", "changed")],
            only_a=list(diff.only_a),
            only_b=list(diff.only_b),
            shared=diff.shared_sessions,
            sessions_only_a=diff.sessions_only_a,
            sessions_only_b=diff.sessions_only_b,
            tolerances=[{"name": m.label, "value": fmt(m.tolerance, m.kind)} for m in METRICS if m.direction != "neither"],
        )
    )
    return render_page([Markup(section)], "compactlab: what changed between two runs")


def write_diff(a_dir: str | Path, b_dir: str | Path, out: str | Path | None = None) -> tuple[str, Path]:
    """The plain-text summary and the path of the HTML page (default: B/diff.html)."""
    diff = diff_runs(a_dir, b_dir)
    path = Path(out) if out is not None else Path(b_dir) / "diff.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_diff_page(diff), encoding="utf-8")
    return format_diff(diff), path
