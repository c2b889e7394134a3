"""The run report: one standalone HTML file answering "which strategy should I use, and what does it cost me?".

Sections: overview (recommendation, leaderboard with CIs, significance, Pareto plot), token
estimation error (the estimation section, on the run's sessions), how far to trust these
numbers (the replay checked against what really happened, `compactlab.report.trust`), session by
session (saw-tooth charts and every compaction), real compactions (production summary beside each
strategy's), run metadata. `write_run_report(run_dir)` writes `run_dir/report.html`.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

from markupsafe import Markup
from tqdm import tqdm

from compactlab.replay.setting import window_and_trigger
from compactlab.report.cost_section import cost_context
from compactlab.report.estimation_section import render_estimation_section
from compactlab.report.first_screen import pareto_key_rows
from compactlab.report.overview_section import overview_context, pct
from compactlab.report.page import environment, render_page
from compactlab.report.real_compactions_section import real_compactions_context
from compactlab.report.run_charts import colours_for, pareto_chart
from compactlab.report.run_data import RunData, figures_and_recommendation, load_run, ranked_rows
from compactlab.report.sessions import select_sessions, sessions_context
from compactlab.report.trust import trust_context
from compactlab.results.leaderboard import all_pair_comparisons, comparisons_document
from compactlab.results.same_by_construction import rendered_prompts
from compactlab.runs.run_config import RunConfig, strategies_of_run, windows_of
from compactlab.runs.run_files import write_atomic
from compactlab.strategies.registry import get_strategy
from compactlab.tokens.estimation import DEFAULT_ESTIMATORS, IN_SAMPLE, summarize

TITLE = "compactlab: which compaction strategy, at what cost"
NAV = (
    ("overview", "Recommendation"),
    ("pareto-chart", "Pareto plot"),
    ("leaderboard", "Leaderboard"),
    ("significance", "Significance"),
    ("costs", "Cost and the prompt cache"),
    ("estimation", "Token estimation"),
    ("trust", "How far to trust these numbers"),
    ("sessions", "Session by session"),
    ("real-compactions", "Real compactions"),
    ("engines", "Presets against the real engines"),
    ("metadata", "Run metadata"),
)


def write_run_report(
    run_dir: str | Path, out: str | Path | None = None, estimation: bool = True, all_pairs: bool = False, progress: bool = False
) -> Path:
    """Render the report of the run in `run_dir` to `out` (default: run_dir/report.html) and return its path.
    `all_pairs`: compare every pair of settings too (when the run's summary.json does not hold them).
    `progress`: show on stderr which section is being written (several seconds on a large run)."""
    with tqdm(total=8, desc="report", unit="step", disable=not progress, leave=False) as bar:
        bar.set_postfix_str("reading the run")
        run = load_run(run_dir)
        bar.update()
        path = Path(out) if out is not None else Path(run_dir) / "report.html"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, render_run_report(run, estimation=estimation, all_pairs=all_pairs, bar=bar))
        bar.update()
    return path


def render_run_report(run: RunData, estimation: bool = True, all_pairs: bool = False, bar=None) -> str:
    def step(name: str) -> None:
        if bar is not None:
            bar.set_postfix_str(name)
            bar.update()

    env = environment()
    # The sections show the compaction rows of the sessions shown alone: only their parts are read.
    run = replace(run, rows_of=tuple(select_sessions(run)))
    figures, recommendation = figures_and_recommendation(run)
    pairs = run.summary.get("all_pairs")
    if pairs is None and all_pairs:
        pairs = comparisons_document(all_pair_comparisons(ranked_rows(run)), None, "every pair of settings")
    colours = colours_for(run.labels)
    overview = overview_context(run, figures, recommendation, pairs)
    overview["failures"] = run.summary.get("failures", [])  # bench/results/run_failures.py
    # No setting to place when every one failed or fell back: the failures above are the report's news.
    overview["pareto_svg"], key = pareto_chart(figures, recommendation, colours) if len(figures) else ("", [])
    overview["pareto_key"] = pareto_key_rows(key, figures, recommendation, colours)
    sections = [Markup(env.get_template("run_overview.html.j2").render(**overview))]
    sections.append(Markup(env.get_template("run_costs.html.j2").render(**cost_context(run))))
    step("token estimation")
    if estimation:
        sections.append(_estimation_section(run))
    step("how far to trust these numbers")
    sections.append(Markup(env.get_template("run_trust.html.j2").render(**trust_context(run))))
    step("session by session")
    sections.append(Markup(env.get_template("run_sessions.html.j2").render(**sessions_context(run, colours))))
    step("real compactions")
    sections.append(Markup(env.get_template("run_real.html.j2").render(**real_compactions_context(run))))
    sections.append(Markup(env.get_template("run_engines.html.j2").render(engines=run.summary.get("presets_vs_engines"))))
    step("run metadata")
    sections.append(Markup(env.get_template("run_meta.html.j2").render(**metadata_context(run))))
    nav = [(anchor, label) for anchor, label in NAV if estimation or anchor != "estimation"]
    version = (run.meta.get("versions") or {}).get("compactlab") or "?"
    lead = (
        f"Run directory {run.path} · {run.sessions['session'].nunique()} sessions replayed × "
        f"{len(run.labels)} strategy settings · compactlab {version}"
    )
    return render_page(sections, TITLE, nav=nav, lead=lead)


def _estimation_section(run: RunData) -> Markup:
    """The estimation the run measured, on the benchmark's estimators (the run's settings may add others, for the trust section)."""
    if run.estimation is None:
        return Markup(
            '<section id="estimation"><h2>Token estimation</h2><p class="warn">Not measured by this run (a sweep never '
            "measures it; <code>compactlab run</code> does unless <code>estimation = false</code>): "
            "<code>compactlab estimate</code> on the run's datasets measures it.</p></section>"
        )
    result = run.estimation.result
    shown = result.calls[result.calls["estimator"].isin((*DEFAULT_ESTIMATORS, IN_SAMPLE))]
    result = replace(result, calls=shown.reset_index(drop=True)) if len(shown) < len(result.calls) else result
    return render_estimation_section(result, summarize(result.calls), lazy_charts=True)


def metadata_context(run: RunData) -> dict[str, Any]:
    config, meta, left = run.config, run.meta, run.summary.get("left_out", {})
    reasons = {t: facts["skipped"] for t, facts in run.session_facts.items() if facts["skipped"]}
    damaged = [{"id": k, "count": v, "reasons": reasons.get(k, "")} for k, v in sorted(left.get("skipped_records", {}).items())]
    window = config.get("window") or 0
    ran_at = _windows(run)
    summarizer = config.get("summarizer") or {}
    return {
        "run_dir": str(run.path),
        "datasets": ", ".join(config.get("datasets") or []) or "all bundled datasets",
        "window": f"{window:,} tokens for every model (simulated, so that compaction has work to do)"
        if window
        else "each model's real window",
        "estimator": config.get("estimator", ""),
        "summarizer": ", ".join(f"{k} = {v}" for k, v in sorted(summarizer.items()))
        or (
            "none configured: summarizing strategies used the extractive stand-in, which reads no prompt, so no summary prompt was "
            "rendered; comparing summary prompts needs an LLM [summarizer] in the configuration"
        ),
        "versions": sorted((meta.get("versions") or {}).items()),
        "replayed": f"{run.sessions['session'].nunique()} × {len(run.labels)} strategy settings = {len(run.sessions):,} replays",
        "session_facts_recorded": bool(run.session_facts),
        "without_calls": list(left.get("sessions_without_calls", [])),
        "damaged": damaged,
        "damaged_total": sum(d["count"] for d in damaged),
        "not_read": left.get("files_not_read", []),
        "fidelity": [_fidelity(r) for r in run.summary.get("recorded_fidelity", [])],
        "cost_check": _cost_check(run.summary.get("cost_model_check", [])),
        "strategies": [_strategy(s, ran_at.get(s.get("label", ""), ()), window, run) for s in config.get("strategies", [])],
        "files": sorted((Path(k).name if len(k) > 60 else k, v or "unreadable") for k, v in (meta.get("datasets") or {}).items()),
        **_prompts(run),
        "config_json": json.dumps(config, indent=2, ensure_ascii=False),
    }


def _prompts(run: RunData) -> dict[str, Any]:
    """The prompt templates the run's compactions rendered, with their hashes, and the others by
    name only: a hash would name a prompt no compaction used (meta.json keeps every template's)."""
    hashes = run.meta.get("prompts") or {}
    try:
        rendered = rendered_prompts(strategies_of_run(run.config))
    except (KeyError, TypeError, ValueError, FileNotFoundError):  # a strategy this install cannot build: no claim
        return {"prompts": sorted(hashes.items()), "prompts_not_rendered": []}
    return {
        "prompts": sorted((k, v) for k, v in hashes.items() if k in rendered),
        "prompts_not_rendered": sorted(set(hashes) - rendered),
    }


def _fidelity(row: dict) -> dict[str, str]:
    return {
        "session": row["session"],
        "call": row["call"],
        "predicted": f"{row['fidelity_predicted']:,.0f}",
        "recorded": f"{row['fidelity_recorded']:,.0f}",
        "error": pct(row.get("relative_error"), signed=True),
    }


def _cost_check(rows: list[dict]) -> dict[str, str | None] | None:
    if not rows:
        return None
    reads = [r["cache_read_mean_abs_error_share"] for r in rows if r.get("cache_read_mean_abs_error_share") is not None]
    costs = [r for r in rows if r.get("cost_relative_error") is not None]
    cost = None
    if costs:
        recorded = sum(r["recorded_cost"] for r in costs)
        cost = pct((sum(r["modelled_cost"] for r in costs) - recorded) / recorded, signed=True) if recorded else None
    return {
        "read": pct(sum(reads) / len(reads)) if reads else "–",
        "sessions": str(len(reads)),
        "cost": cost,
        "cost_sessions": str(len(costs)),
    }


def _windows(run: RunData) -> dict[str, tuple[int, ...]]:
    """The windows each setting's calls ran at (a session's calls run at one window: sessions.csv's)."""
    return {label: tuple(sorted(int(w) for w in group.unique())) for label, group in run.sessions.groupby("setting")["window"]}


def _window_text(entry: dict, windows: tuple[int, ...], simulated: int, run: RunData) -> str:
    """Which windows a setting ran at, how a preset's absolute sizes met a simulated one, and in how many
    sessions its trigger lay above the window (so that it never fired there: what it shows there is
    over-window calls, not compactions)."""
    text = ", ".join(f"{w:,}" for w in windows) or "–"
    try:
        made = get_strategy(entry.get("name", ""), **(entry.get("settings") or {}))
    except (KeyError, TypeError, ValueError, ImportError, OSError):  # a strategy no longer where the run found it
        return text
    harness, trigger = getattr(made, "harness", None), getattr(made, "trigger", None)
    if entry.get("trigger") is not None or harness is None or trigger is None:
        return text
    if simulated and harness.window == "real":
        text += " (the model's real window, whatever the run simulates)"
    elif simulated and (trigger.absolute or trigger.reserve_tokens or trigger.reserve_by_model):
        text += f" (the preset's absolute sizes scaled by {simulated:,} ÷ the model's real window)"
    above = _above_the_window(made, run)
    if above:
        text += f"; its trigger lies above the window in {above} session{'s' if above > 1 else ''}: it never fires there"
    return text


def _above_the_window(made: object, run: RunData) -> int:
    """Sessions where a preset's trigger, sized as the replay sizes it, fires only above the window."""
    config = run.config
    windows = windows_of(
        replace(RunConfig(), window=config.get("window") or 0, context_windows=dict(config.get("context_windows") or {}))
    )
    count = 0
    for facts in run.session_facts.values():
        if facts["model"] is not None:  # a session with calls
            window, trigger = window_and_trigger(made, None, windows, facts["model"], facts["context_window"])
            count += trigger.fires_from(window) > window
    return count


def _strategy(entry: dict, windows: tuple[int, ...], simulated: int, run: RunData) -> dict[str, str]:
    trigger = entry.get("trigger")
    return {
        "window": _window_text(entry, windows, simulated, run),
        "label": entry.get("label", ""),
        "name": entry.get("name", ""),
        "settings": json.dumps(entry.get("settings") or {}, ensure_ascii=False) if entry.get("settings") else "defaults",
        "trigger": ", ".join(
            f"{k}={v}" for k, v in trigger.items() if v not in (None, 0) and not (isinstance(v, float) and math.isnan(v))
        )
        if trigger
        else "the strategy's own (else 0.8 of the window)",
        "estimator": entry.get("estimator") or "the strategy's own",
    }
