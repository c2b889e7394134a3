"""The catalogue's metrics of the compaction rows (`compactlab.results.catalogue` holds them all).

Each is counted, added up or averaged over a session's compaction rows; those whose per-row value is a
function of a compaction's scores (`compactlab.scoring.compaction_scores`) read it through their
entry (`compactlab.results.metric`), so a new score's metric is one entry here.
"""

from __future__ import annotations

from compactlab.results.metric import Metric, items_of, kind_items_of, kind_score_of, loss_of, score_of

ITEM_KINDS = ("path", "identifier", "command", "url", "error", "number")
SMALL_SHARE_TOLERANCE = 0.25  # the relative default tolerance of shares whose baseline is often small


def _kind_metrics() -> tuple[Metric, ...]:
    metrics = []
    for k, steps in ((1, "next step"), (5, "next five steps")):
        for kind in ITEM_KINDS:
            metrics.append(
                Metric(
                    f"preservation_k{k}_{kind}",
                    f"{steps}' {kind} items kept where compacted (k={k})",
                    "higher",
                    "share",
                    0.05,
                    f"Share of the {kind} items the {steps} used that are still in the compacted context, "
                    "averaged over the session's compactions.",
                    relative_tolerance=SMALL_SHARE_TOLERANCE,
                    source="compactions",
                    value=kind_score_of(f"k{k}", kind),
                    lost=kind_items_of(f"k{k}", kind),
                    in_table=False,
                )
            )
    return tuple(metrics)


def _reacquisition(unit: str, label: str, kind: str, tolerance: float, description: str) -> Metric:
    """What getting back the recoverable lost facts of the next five steps costs, in `unit`s."""
    return Metric(
        f"reacquisition_{unit}",
        f"re-acquisition cost ({label})",
        "lower",
        kind,
        tolerance,
        description,
        source="compactions",
        value=loss_of("k5", f"reacquisition_{unit}"),
        lost=items_of("k5", "lost_recoverable"),
    )


def _preservation(k: int, label: str, description: str) -> Metric:
    """The share of the facts the next `k` steps used that the compacted context still holds."""
    return Metric(
        f"preservation_k{k}",
        label,
        "higher",
        "share",
        0.05,
        description,
        source="compactions",
        value=score_of(f"k{k}"),
        lost=items_of(f"k{k}", "lost"),
    )


def _summary_recall(k: int, description: str) -> Metric:
    """Of the facts the next `k` steps used that a compaction dropped, the share its new content holds."""
    return Metric(
        f"summary_recall_k{k}",
        f"dropped facts the summary kept (k={k})",
        "higher",
        "share",
        0.05,
        description,
        relative_tolerance=SMALL_SHARE_TOLERANCE,
        source="compactions",
        value=score_of(f"k{k}", "summary_recall"),
        lost=items_of(f"k{k}", "summary_lost"),
    )


COMPACTION_ENTRIES: tuple[Metric, ...] = (
    _preservation(
        1,
        "next-step facts kept where compacted (k=1)",
        "The same share, over the sessions where the setting compacted only (no value where it never compacted).",
    ),
    _preservation(
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
    _reacquisition(
        "tokens",
        "tokens",
        "tokens",
        500.0,
        "Tokens (characters / 4) of the tool results the agent would read again to get back the lost facts of the next "
        "five steps that can be re-read (each result once), per compaction; sessions where the setting compacted only.",
    ),
    _reacquisition(
        "calls",
        "tool calls",
        "number",
        0.5,
        "Tool calls the agent would make to get back the lost facts of the next five steps that can be re-read (one per "
        "tool result that held them), per compaction; sessions where the setting compacted only.",
    ),
    _summary_recall(
        5,
        "Of the facts the next five recorded steps used that a compaction dropped (in the context before it only in the "
        "messages it removed), the share its new content holds: the summary, placeholders, re-attached files. What the "
        "summary itself carries, apart from the verbatim tail; averaged over the compactions that dropped such a fact.",
    ),
    _summary_recall(1, "The same share for the facts the next recorded step used."),
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
) + _kind_metrics()
