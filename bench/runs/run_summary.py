"""A finished run's summary.json: what `compactlab run`, `compactlab sweep` and the Python API
(`RunResult.summary`) all write and read, made in one place so the three cannot disagree.

Beside the statistics (`compactlab.results.leaderboard.summary_document`) it holds what a verdict
needs to be acted on: the settings identical by construction, how many sessions the costs cover
and which configured price keys price nothing, and the window the replay simulated beside the
windows the sessions' models really have.
"""

from __future__ import annotations

import json
from pathlib import Path

from compactlab.llm.prices import resolve_prices
from compactlab.results.cost_coverage import cost_coverage, unmatched_price_keys
from compactlab.results.leaderboard import summary_document
from compactlab.results.recommendation import Rule
from compactlab.results.same_by_construction import same_groups
from compactlab.runs.run_checks import resolve
from compactlab.runs.run_config import RunConfig
from compactlab.runs.run_files import write_atomic
from compactlab.runs.verdict_window import real_windows, scaled_rules, verdict_window


def run_summary(result, config: RunConfig, rule: Rule = Rule(), all_pairs: bool = False) -> dict:
    """summary.json of `result` (a `compactlab.runs.run_result.RunResult`), replayed with `config`."""
    document = summary_document(result, rule=rule, all_pairs=all_pairs)
    config, instances = resolve(config)
    # Settings identical by construction: one result under several names (every label keeps its figures above).
    document["same_by_construction"] = [g.as_json() for g in same_groups(config.strategies, config.estimator)]
    prices = resolve_prices(config.prices) if config.prices else None
    document["cost_coverage"] = cost_coverage(result.sessions, result.call_models, prices)
    replayed = _models(result)
    models = replayed + [config.summarizer.get("model", ""), config.judge.get("model", "")]
    document["unmatched_price_keys"] = unmatched_price_keys(
        {k: v for k, v in (prices or {}).items() if k in config.prices}, models
    )
    document["windows"] = {
        "simulated": config.window,
        "recorded": real_windows(config, replayed),
        "scaled_rules": scaled_rules(config, config.strategies, instances, replayed),
    }
    # Every verdict says the window it is at, and whether it is simulated (`compactlab.runs.verdict_window`).
    document["verdict_window"] = verdict_window(config, replayed)
    if document.get("recommendation"):
        document["recommendation"]["window"] = document["verdict_window"]["short"]
    return document


def write_summary(result, config: RunConfig, rule: Rule = Rule(), all_pairs: bool = False) -> dict:
    """`run_summary`, written to the run directory's summary.json (atomically)."""
    document = run_summary(result, config, rule, all_pairs)
    write_atomic(Path(result.out) / "summary.json", json.dumps(document, indent=2, default=str) + "\n")
    return document


def _models(result) -> list[str]:
    frame = result.call_models
    return [] if frame.empty or "model" not in frame else [m for m in frame["model"].dropna().unique() if isinstance(m, str)]
