"""Families of the catalogue's metrics made by one rule (`compactlab.results.catalogue` lists them):
per k (the next step, the next five), per item kind, per unit of re-acquisition cost."""

from __future__ import annotations

from compactlab.results.metric import Metric, items_of, kind_items_of, kind_score_of, loss_of, score_of

ITEM_KINDS = ("path", "identifier", "command", "url", "error", "number")
SMALL_SHARE_TOLERANCE = 0.25  # the relative default tolerance of shares whose baseline is often small


def kind_metrics() -> tuple[Metric, ...]:
    """Next-step preservation per item kind and k: computed by the gate from the compaction values (not table columns)."""
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


def reacquisition_metric(unit: str, label: str, kind: str, tolerance: float, description: str) -> Metric:
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


def preservation_metric(k: int, label: str, description: str) -> Metric:
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


def summary_recall_metric(k: int, description: str) -> Metric:
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
