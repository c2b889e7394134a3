"""The real cost of each production compaction, beside the replay's model of the same compaction.

What a compaction costs is what it bills and what it makes the next call bill. Two parts, each
priced with `compactlab.llm.prices` (the run's table):
- **the summarizer**: the real one is its call's usage where the log records it
  (`CompactionMarker.usage`: Anthropic's server-side compaction, in `usage.iterations`; pi's
  compaction entry, Claude Code's `compact_boundary` and Codex's rollout record none: "not
  recorded"). The replay's is the compaction row's own summarizer cost, which the `recorded`
  strategy, replaying the production summary, does not have: "not modelled";
- **the first call after it**: the prompt it billed, rewritten after the summary, i.e. its uncached
  input, cache reads and cache writes as the log records them (`cost_of` of the recorded call). The
  replay's is its cost model (`compactlab.results.metrics.calls_frame`'s `cost_context` less its
  `cost_output`: the
  prompt's prefix shared with the previous prompt read from the cache, the rest new) on the
  `recorded` replay's row of the same call (`context_tokens`, `prefix_tokens`). Output is left out
  of both: a compaction does not change it, and the replay copies it from the log, so it would only
  pad the agreement.
The relative difference, (modelled − real) / real, is taken over the parts both sides have (`compared`);
a part one side lacks is shown as not recorded or not modelled, never as 0. A real compaction no call
followed (checked against a `/context` reading) has no first call: "no call after it".

Each compaction is counted once, per family, as the fidelity figures count them
(`compactlab.results.fidelity_figures`: a sub-agent copy's compaction and the same compaction in
another file are left out, with why).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import pandas as pd

from compactlab.llm.prices import PriceTable, cost_of, resolve_prices
from compactlab.results.fidelity_figures import FAMILIES, family_of, repeats_of, summary_sha
from compactlab.sessions.model import LLMCall, Session

RECORDED = "recorded"  # the strategy whose compaction rows are the production agent's own
WITHIN = 0.10  # the goal's agreement: modelled within ±10% of real
SUMMARIZER, FIRST_CALL = "summarizer", "first call"
NOT_RECORDED, NOT_MODELLED, NO_CALL = "not recorded", "not modelled", "no call after it"
COLUMNS = (
    "session",
    "setting",
    "call",
    "message_index",
    "family",
    "model",
    "summary_sha",
    "summarizer_real",
    "summarizer_modelled",
    "first_call_real",
    "first_call_modelled",
    "real_cache_read",
    "real_cache_write",
    "real_input",
    "modelled_cache_read",
    "modelled_new",
    "compared",
    "real",
    "modelled",
    "relative_difference",
)


# The token counts among them (a frame column with a None in it holds them as floats).
COUNTS = frozenset(
    {"call", "message_index", "real_cache_read", "real_cache_write", "real_input", "modelled_cache_read", "modelled_new"}
)


def real_costs(
    calls: pd.DataFrame, compactions: pd.DataFrame, sessions: Sequence[object], prices: PriceTable | None
) -> pd.DataFrame:
    """One row per compaction of the `recorded` strategy (`COLUMNS`) in the rows of these sessions:
    `calls` and `compactions` as `compactlab.results.metrics` frames them; `sessions`: the sessions
    replayed (a `compactlab.sessions.loading.ReadSession` holds no markers: its compactions get no row)."""
    if compactions.empty or "strategy" not in compactions or calls.empty:
        return pd.DataFrame(columns=COLUMNS)
    by_id = {s.id: s for s in sessions if isinstance(s, Session)}
    real = compactions[(compactions["strategy"] == RECORDED) & compactions["failed"].isna() & compactions["session"].isin(by_id)]
    table = resolve_prices(None) if prices is None else prices
    rows = []
    for row in real.to_dict("records"):
        session = by_id[row["session"]]
        marker = next((m for m in session.compactions if m.at_message == row["message_index"]), None)
        after = calls[
            (calls["session"] == row["session"]) & (calls["setting"] == row["setting"]) & (calls["call"] == row["call"])
        ]
        recorded = session.calls[row["call"]] if row["call"] < len(session.calls) and not after.empty else None
        rows.append(_row(row, session, marker.usage if marker is not None else None, recorded, after, table))
    return pd.DataFrame(rows, columns=list(COLUMNS))


def _row(row: dict, session: Session, usage: LLMCall | None, recorded: LLMCall | None, after: pd.DataFrame, prices) -> dict:
    # The model of the call after it, else of the last call before (as the fidelity figures take it), else the summarizer's.
    before = session.calls[min(row["call"], len(session.calls)) - 1].model if row["call"] > 0 and session.calls else None
    model = recorded.model if recorded is not None else before or (usage.model if usage is not None else None)
    summarizer = row.get("summarizer_cost_usd")
    modelled_summarizer = None if summarizer is None or pd.isna(summarizer) else float(summarizer)
    found = {
        "session": row["session"],
        "setting": row["setting"],
        "call": row["call"],
        "message_index": row["message_index"],
        "family": family_of(session.source_format, model),
        "model": model,
        "summary_sha": summary_sha(row.get("summary")),
        "summarizer_real": cost_of(usage, prices) if usage is not None else None,
        "summarizer_modelled": modelled_summarizer,
        "first_call_real": None,
        "first_call_modelled": None,
    }
    if recorded is not None:
        prompt = replace(recorded, output_tokens=0)  # what the compaction changed: the prompt, not the reply
        found["first_call_real"] = cost_of(prompt, prices)
        found |= {"real_cache_read": recorded.cache_read_tokens, "real_cache_write": recorded.cache_write_tokens}
        found["real_input"] = recorded.input_tokens
        # The run's own row, priced by its cost model: the prompt's parts, without the output.
        modelled = after["cost_context"].iloc[0] - after["cost_output"].iloc[0]
        found["first_call_modelled"] = None if pd.isna(modelled) else float(modelled)
        prefix, context = int(after["prefix_tokens"].iloc[0]), int(after["context_tokens"].iloc[0])
        found |= {"modelled_cache_read": prefix, "modelled_new": context - prefix}
    return found | _compared(found)


def _compared(found: Mapping) -> dict:
    """The parts both sides have, their sums and the relative difference (None where nothing compares)."""
    parts = [
        (name, found[f"{key}_real"], found[f"{key}_modelled"])
        for name, key in ((SUMMARIZER, "summarizer"), (FIRST_CALL, "first_call"))
        if found[f"{key}_real"] is not None and found[f"{key}_modelled"] is not None
    ]
    if not parts:
        return {"compared": "", "real": None, "modelled": None, "relative_difference": None}
    real, modelled = sum(p[1] for p in parts), sum(p[2] for p in parts)
    return {
        "compared": " and ".join(p[0] for p in parts),
        "real": real,
        "modelled": modelled,
        "relative_difference": (modelled - real) / real if real else None,
    }


def costs_document(frame: pd.DataFrame) -> dict:
    """What summary.json holds of the real costs: every row with why it is in no figure ("" if it is
    counted: `compactlab.results.fidelity_figures.repeats_of`), and per family how many compactions
    compare and how many of them the replay models within ±10%."""
    if frame.empty:
        return {"within": WITHIN, "rows": [], "families": {}}
    records: list[dict] = [{str(k): _plain(v, str(k) in COUNTS) for k, v in r.items()} for r in frame.to_dict("records")]
    for record, why in zip(records, repeats_of(records)):
        record["left_out"] = why
    families: dict[str, dict] = {}
    for record in records:
        entry = families.setdefault(
            str(record["family"]), {"compactions": 0, "compared": 0, "within": 0, "summarizer_recorded": 0}
        )
        if record["left_out"]:
            continue
        entry["compactions"] += 1
        entry["summarizer_recorded"] += record["summarizer_real"] is not None
        if record["relative_difference"] is not None:
            entry["compared"] += 1
            entry["within"] += abs(float(record["relative_difference"])) <= WITHIN
    order = sorted(families, key=lambda f: (FAMILIES.index(f) if f in FAMILIES else len(FAMILIES), f))
    return {"within": WITHIN, "rows": records, "families": {f: {**families[f], "line": family_line(families[f])} for f in order}}


def family_line(entry: Mapping) -> str:
    """One family's figures in words."""
    summarizer = (
        f"the summarizer's usage recorded for {entry['summarizer_recorded']}"
        if entry["summarizer_recorded"]
        else "no summarizer usage recorded"
    )
    return (
        f"{entry['compactions']} compactions ({summarizer}); of the {entry['compared']} whose cost both sides give, "
        f"{entry['within']} modelled within ±{100 * WITHIN:.0f}% of the real cost"
    )


def part_text(real: float | None, modelled: float | None, missing_real: str = NOT_RECORDED) -> tuple[str, str]:
    """A part's real and modelled cost in words ("not recorded" / "not modelled" where a side lacks it)."""
    return (missing_real if real is None else usd(real)), (NOT_MODELLED if modelled is None else usd(modelled))


def usd(value: float) -> str:
    return f"${value:,.4f}"


def _plain(value: object, count: bool = False) -> object:
    if isinstance(value, float) and pd.isna(value):
        return None
    value = value.item() if hasattr(value, "item") else value
    return int(value) if count and isinstance(value, float) else value  # a column with None holds its counts as floats
