"""The report's cost section: each setting's bill split into its parts, with and without compaction,
and what it did to the provider's prompt cache (summary.json's `costs`, `compactlab.results.cost_split`)."""

from __future__ import annotations

from typing import Any

from compactlab.report.run_data import RunData
from compactlab.results.cache_metrics import PART_LABELS
from compactlab.results.catalogue import metric

PART_NAMES = {**{part: label for part, (label, _) in PART_LABELS.items()}, "summarizer": "summarizer"}
CACHE_SHOWN = (
    "cache_write_tokens",
    "invalidated_tokens",
    "unread_write_tokens",
    "expired_tokens",
    "prefix_breaks",
    "cache_expiries",
)


def _dollars(value: float | None, signed: bool = False) -> str:
    return "–" if value is None else f"{value:{'+' if signed else ''},.4f}"


def _number(name: str, value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:,.1f}" if metric(name).kind == "count" else f"{value:,.0f}"


def cost_context(run: RunData) -> dict[str, Any]:
    """What run_costs.html.j2 shows; `costs` None for a run whose summary.json holds no split."""
    costs = run.summary.get("costs")
    if not costs:
        return {"costs": None}
    rows = []
    for entry in costs["settings"]:
        parts = entry["parts"]
        rows.append(
            {
                "setting": entry["setting"],
                "sessions": entry["sessions"],
                "unpriced": entry["unpriced_sessions"],
                "parts": [
                    {"with": _dollars(parts[kind]["with"]), "change": _dollars(parts[kind]["change"], signed=True)}
                    for kind in PART_NAMES
                ],
                "total": {"with": _dollars(entry["total"]["with"]), "change": _dollars(entry["total"]["change"], signed=True)},
                "cache": [_number(name, entry["cache"][name]) for name in CACHE_SHOWN],
                "cache_costs": {name: _dollars(entry["cache"][name]) for name in ("invalidation_cost", "unread_write_cost")},
            }
        )
    lifetimes = costs.get("lifetimes_seconds", {})
    return {
        "costs": {
            "rows": rows,
            "part_names": list(PART_NAMES.values()),
            "cache_labels": [metric(name).label.replace(" per session", "") for name in CACHE_SHOWN],
            "untimed": costs.get("untimed_sessions", []),
            "lifetimes": ", ".join(f"{family} {seconds / 60:g} min" for family, seconds in lifetimes.items()),
        }
    }
