"""How many sessions a run's costs cover, and which models had no price.

A session's cost is unknown when any of its calls is (a model the price table lacks, or no model
recorded): averaging cost over the priced sessions only is then what every cost figure does, and
this says over how many, and why the others are missing, so that a "–" or a mean over 10 of 27
sessions is never unexplained.
"""

from __future__ import annotations

import difflib

import pandas as pd

from compactlab.llm.prices import PriceTable, normalize_model, price_for, resolve_prices

NO_MODEL = "(no model recorded)"


def cost_coverage(sessions: pd.DataFrame, calls: pd.DataFrame, prices: PriceTable | None = None) -> dict:
    """{sessions, priced, unpriced_models: {model: sessions}}, over the run's sessions (a session's
    uncompacted cost, `cost_full`, is the same for every setting). `calls`: the run's call rows,
    or only their session and model columns (all that is read of them)."""
    if sessions.empty or "cost_full" not in sessions:
        return {"sessions": 0, "priced": 0, "unpriced_models": {}}
    table = resolve_prices() if prices is None else prices
    per_session = sessions.groupby("session")["cost_full"].first()
    unpriced: dict[str, set[str]] = {}
    if not calls.empty and "model" in calls:
        firsts = calls.drop_duplicates(["session", "model"])[["session", "model"]]
        for session, model in firsts.itertuples(index=False):
            name = model if isinstance(model, str) and model and model != "unknown" else NO_MODEL
            if name == NO_MODEL or price_for(name, table) is None:
                unpriced.setdefault(name, set()).add(session)
    return {
        "sessions": int(len(per_session)),
        "priced": int(per_session.notna().sum()),
        "unpriced_models": {
            model: len(sessions) for model, sessions in sorted(unpriced.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        },
    }


def format_cost_coverage(coverage: dict) -> str:
    """'cost over 10 of 27 sessions; unpriced: gpt-5.1-codex-max (3 sessions), …' (what to do included)."""
    sessions, priced = coverage.get("sessions", 0), coverage.get("priced", 0)
    if not sessions:
        return "cost: no sessions replayed"
    if priced == sessions:
        return f"cost over all {sessions} sessions (every model priced)"
    models = ", ".join(f"{m} ({n} session{'s' if n != 1 else ''})" for m, n in coverage.get("unpriced_models", {}).items())
    return (
        f"cost over {priced} of {sessions} sessions; unpriced: {models or 'calls of a kind their model has no price for'} "
        '(add a [prices."MODEL"] table to the configuration to price them)'
    )


def unmatched_price_keys(prices: PriceTable, models: list[str]) -> list[str]:
    """A warning for each `[prices."MODEL"]` key of the configuration that prices none of `models` (the
    models the run's calls, summarizer and judge name): a misspelt key is otherwise ignored without a
    word, and the model it meant keeps its built-in price, or none."""
    seen = sorted({m for m in models if isinstance(m, str) and m and m != "unknown"})
    warnings = []
    for key, price in prices.items():
        if any(price_for(model, {key: price}) is not None for model in seen):
            continue
        close = difflib.get_close_matches(normalize_model(key), [normalize_model(m) for m in seen], n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        warnings.append(
            f'[prices."{key}"] matches no model of this run, so it prices nothing{hint} '
            f"(models seen: {', '.join(seen) or 'none'})"
        )
    return warnings
