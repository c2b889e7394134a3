"""How many sessions a run's costs cover, and which models had no price.

A session's cost is unknown when any of its calls is (a model the price table lacks, or no model
recorded): averaging cost over the priced sessions only is then what every cost figure does, and
this says over how many, and why the others are missing, so that a "–" or a mean over 10 of 27
sessions is never unexplained.
"""

from __future__ import annotations

import pandas as pd

from compactlab.compaction.llm.prices import PriceTable, price_for, resolve_prices

NO_MODEL = "(no model recorded)"


def cost_coverage(transcripts: pd.DataFrame, calls: pd.DataFrame, prices: PriceTable | None = None) -> dict:
    """{sessions, priced, unpriced_models: {model: sessions}}, over the run's sessions (a session's
    uncompacted cost, `cost_full`, is the same for every setting). `calls`: the run's call rows,
    or only their transcript and model columns (all that is read of them)."""
    if transcripts.empty or "cost_full" not in transcripts:
        return {"sessions": 0, "priced": 0, "unpriced_models": {}}
    table = resolve_prices() if prices is None else prices
    per_session = transcripts.groupby("transcript")["cost_full"].first()
    unpriced: dict[str, set[str]] = {}
    if not calls.empty and "model" in calls:
        firsts = calls.drop_duplicates(["transcript", "model"])[["transcript", "model"]]
        for transcript, model in firsts.itertuples(index=False):
            name = model if isinstance(model, str) and model and model != "unknown" else NO_MODEL
            if name == NO_MODEL or price_for(name, table) is None:
                unpriced.setdefault(name, set()).add(transcript)
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
