"""Real compactions: the production agent's summary next to each strategy's summary of the same history.

The `recorded` strategy replays the production agent's own compactions, so its rows carry the
production summary and the replay's prediction of the next prompt against the recorded one. For
each of them, every other strategy's compaction in the same session nearest to that call (at or
before it on a tie) is shown beside it. Sources without LLM calls (condenser logs) cannot be
replayed; their production summaries are listed from what the run wrote of them (session_facts.json).
Each real compaction's cost, real and modelled, comes from summary.json's `real_costs`
(`compactlab.results.real_costs`, which defines both).
"""

from __future__ import annotations

import hashlib
from typing import Any

from compactlab.report.overview_section import pct
from compactlab.report.run_data import RunData
from compactlab.report.sessions import compaction_view, recorded_rows, source_of
from compactlab.results.real_costs import NO_CALL, part_text, usd

REAL_SUMMARY_CHARS = 20_000  # production summaries are shown whole up to this length
STRATEGY_SUMMARY_CHARS = 6_000
CONDENSER_SUMMARY_CHARS = 4_000


def real_compactions_context(run: RunData) -> dict[str, Any]:
    sources = source_of(run)
    costs = {(r["session"], r["setting"], r["call"]): r for r in run.summary.get("real_costs", {}).get("rows", [])}
    shown = []
    for row in recorded_rows(run):
        production = compaction_view(row, None, REAL_SUMMARY_CHARS)
        predicted, recorded = row.get("fidelity_predicted"), row.get("fidelity_recorded")
        shown.append(
            {
                "session": row["session"],
                "source": sources.get(row["session"], ""),
                "production": production,
                "fidelity": {
                    "predicted": f"{predicted:,}",
                    "recorded": f"{recorded:,}",
                    "error": pct((predicted - recorded) / recorded, signed=True),
                }
                if predicted is not None and recorded
                else None,
                "cost": _cost(costs.get((row["session"], row["setting"], row["call"]))),
                "others": _others(run, row),
                "untouched": _untouched(run, row),
            }
        )
    return {"shown": shown, "condenser": _unreplayed(run), "session_facts_recorded": bool(run.session_facts)}


def _cost(row: dict | None) -> dict[str, Any] | None:
    """A real compaction's cost, real and modelled, per part and compared (None: the run has none for it)."""
    if row is None:
        return None
    called = row["real_cache_read"] is not None
    summarizer = part_text(row["summarizer_real"], row["summarizer_modelled"])
    first = part_text(row["first_call_real"], row["first_call_modelled"], "no price" if called else NO_CALL)
    difference = row["relative_difference"]
    return {
        "summarizer": summarizer,
        "first_call": first if called else (NO_CALL, NO_CALL),
        "real_tokens": f"{row['real_cache_read']:,} read, {row['real_cache_write']:,} written, {row['real_input']:,} uncached"
        if called
        else "",
        "modelled_tokens": f"{row['modelled_cache_read']:,} read, {row['modelled_new']:,} new" if called else "",
        "compared": row["compared"],
        "real": usd(row["real"]) if row["real"] is not None else "",
        "modelled": usd(row["modelled"]) if row["modelled"] is not None else "",
        "difference": pct(difference, signed=True) if difference is not None else "",
        "left_out": row.get("left_out") or "",
    }


def _others(run: RunData, real: dict) -> list[dict[str, Any]]:
    """Each other strategy's nearest compaction in the session; strategies with the same text share a card."""
    nearest: dict[str, dict] = {}
    for row in run.compaction_rows:
        if row["session"] != real["session"] or row["setting"] == real["setting"] or row.get("failed"):
            continue
        if (row.get("note") or "").startswith("nothing") and not row["messages_removed"]:
            continue  # a compaction that found nothing to do is not a summary of this history
        current = nearest.get(row["setting"])
        if current is None or _distance(row, real) < _distance(current, real):
            nearest[row["setting"]] = row
    cards: dict[str, dict[str, Any]] = {}
    for label in sorted(nearest):
        row = nearest[label]
        text = row.get("summary") or ""
        key = hashlib.sha256(f"{text}\0{row['call']}\0{row['tokens_after']}".encode()).hexdigest()
        if key in cards:
            cards[key]["labels"].append(label)
            continue
        offset = row["call"] - real["call"]
        cards[key] = {
            "labels": [label],
            "view": compaction_view(row, None, STRATEGY_SUMMARY_CHARS),
            "when": "at the same call"
            if offset == 0
            else f"{abs(offset)} calls {'before' if offset < 0 else 'after'} the production compaction",
        }
    return list(cards.values())


def _distance(row: dict, real: dict) -> tuple[int, int]:
    offset = row["call"] - real["call"]
    return abs(offset), 0 if offset <= 0 else 1


def _untouched(run: RunData, real: dict) -> list[str]:
    labels = set(run.sessions.loc[run.sessions["session"] == real["session"], "setting"])
    compacted = {
        r["setting"]
        for r in run.compaction_rows
        if r["session"] == real["session"]
        and not r.get("failed")
        and not ((r.get("note") or "").startswith("nothing") and not r["messages_removed"])
    }
    return sorted(labels - compacted - {real["setting"]})


def _unreplayed(run: RunData) -> list[dict[str, Any]]:
    """Production summaries of sessions the replay skipped because they hold no LLM calls."""
    replayed = set(run.sessions["session"])
    rows = []
    for session, facts in run.session_facts.items():
        if session in replayed:
            continue
        for marker in facts["unreplayed"]:
            text = marker["summary"]
            rows.append(
                {
                    "session": session,
                    "format": facts["format"],
                    "trigger": marker["trigger"],
                    "messages": f"{marker['at_message']:,}",
                    "chars": f"{len(text):,}",
                    "summary": text[:CONDENSER_SUMMARY_CHARS],
                    "cut": f"{max(0, len(text) - CONDENSER_SUMMARY_CHARS):,}" if len(text) > CONDENSER_SUMMARY_CHARS else "",
                }
            )
    return rows
