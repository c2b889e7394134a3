"""summary.json's `costs`: each setting's bill split into its parts, with and without compaction, and
what it did to the prompt cache (`compactlab.results.cache_metrics` defines each figure).

Means per session over the sessions the price table prices completely (a part is never guessed:
a session with an unpriced call is left out, and counted). These are plain means, without
intervals: the leaderboard's `cost_change` carries the interval of the whole bill.
"""

from __future__ import annotations

import math

import pandas as pd

from compactlab.replay.prompt_cache import LIFETIMES, LONG_LIFETIME
from compactlab.results.cache_metrics import CACHE_FIGURES
from compactlab.results.call_costs import PARTS


def _mean(values: pd.Series) -> float | None:
    value = float(values.mean()) if len(values) else math.nan
    return None if math.isnan(value) else value


def cost_split(ranked: pd.DataFrame, untimed: list[str]) -> dict:
    """The `costs` section from the ranked per-session table; `untimed`: the sessions whose calls
    record no time (no cache lifetime can be modelled there)."""
    settings = []
    for setting, rows in ranked.groupby("setting", sort=True):
        priced = rows[rows["total_cost"].notna() & rows["cost_full"].notna()]
        summarizer = priced["summarizer_cost"].fillna(0)
        parts = {
            kind: {
                "with": _mean(priced[f"cost_{kind}"]),
                "without": _mean(priced[f"cost_full_{kind}"]),
                "change": _mean(priced[f"cost_{kind}_change"]),
            }
            for kind in PARTS
        }
        parts["summarizer"] = {"with": _mean(summarizer), "without": 0.0 if len(priced) else None, "change": _mean(summarizer)}
        settings.append(
            {
                "setting": setting,
                "sessions": int(len(priced)),
                "unpriced_sessions": int(len(rows) - len(priced)),
                "parts": parts,
                "total": {
                    "with": _mean(priced["total_cost"]),
                    "without": _mean(priced["cost_full"]),
                    "change": _mean(priced["cost_change"]),
                },
                "cache": {name: _mean(priced[name]) for name in CACHE_FIGURES},
            }
        )
    return {
        "per": "mean per session over the sessions priced completely",
        "lifetimes_seconds": {**LIFETIMES, "claude with one-hour writes": LONG_LIFETIME},
        "untimed_sessions": sorted(untimed),
        "settings": settings,
    }
