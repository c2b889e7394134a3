"""The metric catalogue: every figure compactlab reports, under the one label every surface shows.

Each metric is a column of the per-session table (`compactlab.results.metrics.session_summary`: one row per
session × strategy setting), which its entry defines (`compactlab.results.metric.Metric`: its rows, its
per-row value and how a session's rows give its value). A setting's figure is that column over the sessions it replayed,
averaged (`aggregate = "mean"`, with a bootstrap interval over sessions: the session is the unit)
or added up (`"sum"`). The CLI tables, `summary.json`, the report, `compactlab diff`, the sweep and
the CI gate all take their figures from `compactlab.results.leaderboard.setting_figures` and their labels,
directions and default tolerances from here, so one label has one meaning everywhere.

A new metric is its entry here and, when it needs a new score of a compaction, that scorer
(`compactlab.scoring.compaction_scores`): the per-session table, the compaction frame, the gate's
per-compaction values, the report's columns and an older run's table (the column read as empty)
follow the entries.
"""

from __future__ import annotations

from compactlab.results.cache_metrics import cache_metrics
from compactlab.results.metric import Metric, items_of, loss_of
from compactlab.results.metric_families import ITEM_KINDS as ITEM_KINDS  # (the item kinds the gate names)
from compactlab.results.metric_families import (
    kind_metrics,
    preservation_metric,
    reacquisition_metric,
    summary_recall_metric,
)

METRICS: tuple[Metric, ...] = (
    (
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
        preservation_metric(
            1,
            "next-step facts kept where compacted (k=1)",
            "The same share, over the sessions where the setting compacted only (no value where it never compacted).",
        ),
        preservation_metric(
            5,
            "next-5-steps facts kept where compacted (k=5)",
            "Share of the facts the next five recorded steps used that are still in the compacted context; sessions where "
            "the setting compacted only.",
        ),
        Metric(
            "unrecoverable_loss",
            "next-5-steps facts lost for good (k=5)",
            "lower",
            "share",
            0.05,
            "Share of the facts the next five recorded steps used that the compaction lost and the agent could not read "
            "again: they were only in the conversation (user messages, the agent's own text, errors, output of commands with "
            "side effects or that depend on the time, text since removed from its file). Lost items that could be re-read, "
            "and those the session cannot judge, are not counted. Sessions where the setting compacted only; see "
            "docs/recoverability.md.",
            source="compactions",
            value=loss_of("k5", "lost_unrecoverable"),
            lost=items_of("k5", "lost_unrecoverable"),
        ),
        reacquisition_metric(
            "tokens",
            "tokens",
            "tokens",
            500.0,
            "Tokens (characters / 4) of the tool results the agent would read again to get back the lost facts of the next "
            "five steps that can be re-read (each result once), per compaction; sessions where the setting compacted only.",
        ),
        reacquisition_metric(
            "calls",
            "tool calls",
            "number",
            0.5,
            "Tool calls the agent would make to get back the lost facts of the next five steps that can be re-read (one per "
            "tool result that held them), per compaction; sessions where the setting compacted only.",
        ),
        summary_recall_metric(
            5,
            "Of the facts the next five recorded steps used that a compaction dropped (in the context before it only in the "
            "messages it removed), the share its new content holds: the summary, placeholders, re-attached files. What the "
            "summary itself carries, apart from the verbatim tail; averaged over the compactions that dropped such a fact.",
        ),
        summary_recall_metric(1, "The same share for the facts the next recorded step used."),
        Metric(
            "compactions",
            "compactions per session",
            "neither",
            "number",
            0.5,
            "Compactions that changed the context, per session.",
            source="compactions",
            per_session="size",
            when_none=0,
        ),
        Metric(
            "failed_compactions",
            "failed compactions per session",
            "lower",
            "number",
            0.0,
            "Compactions that failed (the strategy raised).",
            source="compactions",
            per_session="size",
            rows="failed",
            when_none=0,
        ),
        Metric(
            "summarizer_input_tokens",
            "summarizer input tokens per session",
            "lower",
            "tokens",
            0.0,
            "Tokens sent to an LLM summarizer.",
            source="compactions",
            value="summarizer_input_tokens",
            per_session="sum",
            when_none=0,
        ),
        Metric(
            "summarizer_output_tokens",
            "summarizer output tokens per session",
            "lower",
            "tokens",
            0.0,
            "Tokens an LLM summarizer wrote.",
            source="compactions",
            value="summarizer_output_tokens",
            per_session="sum",
            when_none=0,
        ),
        Metric(
            "summarizer_cost",
            "summarizer cost per session ($)",
            "lower",
            "dollars",
            0.005,
            "What the LLM summarizer calls cost; unknown without a priced LLM summarizer.",
            source="compactions",
            value="summarizer_cost_usd",
            per_session="sum_known",
        ),
        Metric(
            "summary_drift",
            "facts dropped between summaries",
            "lower",
            "share",
            0.05,
            "In sessions compacted two or more times with a summary: of the facts a summary carried that the five steps "
            "after the next compaction still needed, the share the next summary dropped (pooled over the session's "
            "consecutive summaries; no value without two summaries). See bench/scoring/drift.py.",
            source="compactions",
            value=("drift_dropped", "drift_carried"),
            per_session="ratio",
        ),
        Metric(
            "summary_pairs",
            "consecutive summaries compared per session",
            "neither",
            "number",
            0.0,
            "Pairs of consecutive, different summaries in the session: what summary drift is measured on.",
            source="compactions",
            value="drift_carried",
            per_session="count",
            when_none=0,
        ),
        Metric(
            "preservation_applicable",
            "compactions scored per session",
            "neither",
            "number",
            0.0,
            "Compactions whose next step relied on facts from before it (the others are not applicable).",
            source="compactions",
            value="preservation_k1",
            per_session="count",
        ),
        Metric(
            "fallback_compactions",
            "fallback compactions per session",
            "lower",
            "number",
            0.0,
            "Compactions done by a fallback after a step failed (`compactlab.contract.FALLBACK_MARK`): counted apart.",
            source="compactions",
            per_session="size",
            rows="fell_back",
            when_none=0,
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
    )
    + cache_metrics()
    + kind_metrics()
)

BY_NAME = {metric.name: metric for metric in METRICS}
KIND_METRICS = tuple(metric.name for metric in kind_metrics())  # computed from the compaction rows (compactlab.gate.suite)

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
