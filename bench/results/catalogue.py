"""The metric catalogue: every figure compactlab reports, under the one label every surface shows.

Each metric is a column of the per-session table (`compactlab.results.metrics.session_summary`: one row per
session × strategy setting), which its entry defines (`compactlab.results.metric.Metric`: its rows, its
per-row value and how a session's rows give its value). A setting's figure is that column over the sessions it replayed,
averaged (`aggregate = "mean"`, with a bootstrap interval over sessions: the session is the unit)
or added up (`"sum"`). The CLI tables, `summary.json`, the report, `compactlab diff`, the sweep and
the CI gate all take their figures from `compactlab.results.leaderboard.setting_figures` and their labels,
directions and default tolerances from here, so one label has one meaning everywhere.

A new metric is its entry here (one of the compaction rows: in `compactlab.results.catalogue_compactions`)
and, when it needs a new score of a compaction, that scorer
(`compactlab.scoring.compaction_scores`): the per-session table, the compaction frame, the gate's
per-compaction values, the report's columns and an older run's table (the column read as empty)
follow the entries.
"""

from __future__ import annotations

from compactlab.results.catalogue_compactions import COMPACTION_ENTRIES
from compactlab.results.catalogue_compactions import ITEM_KINDS as ITEM_KINDS  # (the item kinds the gate names)
from compactlab.results.metric import Metric

METRICS: tuple[Metric, ...] = (
    Metric(
        "removed_share",
        "tokens removed",
        "higher",
        "share",
        0.01,
        "Share of the session's prompt tokens the setting removed: 1 − (prompt tokens sent with compaction) / (without).",
        value=lambda s: 1 - s["billed_context"] / s["billed_full"],
    ),
    Metric(
        "preservation_or_untouched",
        "next-step facts kept (k=1)",
        "higher",
        "share",
        0.05,
        "Share of the facts (paths, identifiers, commands, ...) the next recorded step used that are still in the compacted "
        "context, averaged over the session's compactions; a session the setting never compacted lost nothing and counts as 100%.",
        value=lambda s: s["preservation_k1"].where(s["compactions"] > 0, 1.0),
    ),
    Metric(
        "over_window_share",
        "calls over the window",
        "lower",
        "share",
        0.01,
        "Share of the session's calls whose replayed prompt exceeds the model's context window: the provider would refuse them.",
        value=lambda s: s["over_window_calls"] / s["calls"],
    ),
    Metric(
        "over_window_unacted_calls",
        "over-window calls where it could not act (total)",
        "lower",
        "count",
        0.0,
        "Over-window calls of the sessions where the setting tried to compact and every attempt removed nothing (no "
        "compaction at all): the overflow comes from a strategy that finds nothing it may remove, not from a trigger "
        "that fired too late. Added up over the sessions.",
        aggregate="sum",
        value=lambda s: s["over_window_calls"].where((s["compactions"] == 0) & (s["noop_compactions"] > 0), 0),
    ),
    Metric(
        "over_window_calls",
        "over-window calls (total)",
        "lower",
        "count",
        0.0,
        "Calls whose replayed prompt exceeds the context window, added up over the sessions. A setting with any is not "
        "recommendable: an over-window request fails in production.",
        aggregate="sum",
        source="calls",
        value="over_window",
        per_session="sum",
    ),
    Metric(
        "total_cost",
        "cost per session ($)",
        "lower",
        "dollars",
        0.005,
        "Modelled bill of the replayed session with the setting, summarizer calls included, in US dollars.",
        value=lambda s: s["cost_context"] + s["summarizer_cost"].fillna(0),
    ),
    Metric(
        "cost_change",
        "cost change per session ($)",
        "lower",
        "dollars",
        0.005,
        "Modelled bill with the setting minus without compaction (cache reads and writes, output, summarizer calls), in US dollars.",
        value=lambda s: s["total_cost"] - s["cost_full"],
    ),
    Metric(
        "calls",
        "calls per session",
        "neither",
        "number",
        0.0,
        "Recorded LLM calls replayed.",
        source="calls",
        per_session="size",
    ),
    Metric(
        "peak_full",
        "peak prompt without compaction",
        "neither",
        "tokens",
        0.0,
        "Largest prompt of the session without compaction.",
        source="calls",
        value="full_tokens",
        per_session="max",
    ),
    Metric(
        "peak_context",
        "peak prompt with compaction",
        "lower",
        "tokens",
        0.0,
        "Largest replayed prompt of the session with the setting.",
        source="calls",
        value="context_tokens",
        per_session="max",
    ),
    Metric(
        "fixed_tokens",
        "smallest recorded prompt",
        "neither",
        "tokens",
        0.0,
        "The session's smallest recorded prompt (usually its first): it holds the system prompt, instructions and task "
        "(which every strategy keeps verbatim) and the tools the provider counted.",
        source="calls",
        value="full_tokens",
        per_session="min",
    ),
    Metric(
        "floor_tokens",
        "smallest possible prompt",
        "neither",
        "tokens",
        0.0,
        "The largest over the session's calls of the smallest prompt any strategy could send there: the smallest recorded "
        "prompt plus the newest step (what the prompt grew by past every earlier one). Over the window, no setting can keep "
        "the session under it.",
        source="calls",
        value="floor_tokens",
        per_session="max",
    ),
    Metric(
        "window",
        "context window",
        "neither",
        "tokens",
        0.0,
        "The context window the session was replayed with.",
        source="calls",
        value="window",
        per_session="max",
    ),
    Metric(
        "billed_full",
        "prompt tokens without compaction",
        "neither",
        "tokens",
        0.0,
        "Prompt tokens over the session without compaction.",
        source="calls",
        value="full_tokens",
        per_session="sum",
    ),
    Metric(
        "billed_context",
        "prompt tokens with compaction",
        "lower",
        "tokens",
        0.0,
        "Prompt tokens over the session with the setting.",
        source="calls",
        value="context_tokens",
        per_session="sum",
    ),
    Metric(
        "kept_ratio",
        "times smaller",
        "higher",
        "number",
        0.0,
        "Prompt tokens without compaction divided by with it (1 / (1 − tokens removed)).",
        value=lambda s: s["billed_full"] / s["billed_context"],
    ),
    Metric(
        "cost_full",
        "cost per session without compaction ($)",
        "neither",
        "dollars",
        0.005,
        "Modelled bill of the uncompacted session, in US dollars.",
        source="calls",
        value="cost_full",
        per_session="total",
    ),
    Metric(
        "cost_context",
        "prompt and output cost per session ($)",
        "lower",
        "dollars",
        0.005,
        "Modelled bill of the replayed session with the setting, without summarizer calls, in US dollars.",
        source="calls",
        value="cost_context",
        per_session="total",
    ),
    Metric(
        "noop_compactions",
        "no-op compactions per session",
        "neither",
        "count",
        0.0,
        "Attempts whose strategy changed nothing (no compaction): the run's bookkeeping, counted, not compared.",
        source="calls",
        value="noop_before",
        per_session="sum",
    ),
) + COMPACTION_ENTRIES

BY_NAME = {metric.name: metric for metric in METRICS}
KIND_METRICS = tuple(
    metric.name for metric in COMPACTION_ENTRIES if not metric.in_table
)  # computed from the compaction rows (compactlab.gate.suite)

# The figures of a setting that every run surface shows (the CLI table, summary.json's leaderboard,
# the report's leaderboard, `compactlab diff`), in this order.
REPORTED = (
    "removed_share",
    "preservation_or_untouched",
    "preservation_k1",
    "preservation_k5",
    "unrecoverable_loss",
    "reacquisition_tokens",
    "reacquisition_calls",
    "summary_recall_k5",
    "summary_drift",
    "over_window_share",
    "over_window_calls",
    "compactions",
    "cost_change",
)


def metric(name: str) -> Metric:
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown metric {name!r}; known: {', '.join(BY_NAME)}") from None


def label(name: str) -> str:
    return metric(name).label
