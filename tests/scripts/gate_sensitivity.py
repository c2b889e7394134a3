"""How small a loss of summary recall a suite's `compactlab check` detects (issue 28 §5).

    python -m tests.scripts.gate_sensitivity [--suite SUITE] [--metric summary_recall_k5] [--trials 20]

Replays the suite once (as `check` does: its [summarizer], or offline the extractive stand-in) and
takes each compaction's summary recall as the baseline: of the facts the next steps used that the
compaction dropped (`only_dropped`), those its new content kept. A worse prompt is simulated on
those real compactions: each kept fact is lost with probability p, independently, so a compaction
with k of n facts kept gets (k − Binomial(k, p)) / n. Each simulated run is compared with the
baseline by the gate's own rule (`compactlab.gate.power.detection`, which `compactlab baseline` uses to
measure and record a suite's sensitivity: the two-level and within-sessions bootstrap intervals
against the suite's tolerance), `--trials` times per p with different draws.

Per setting it prints, for each p, the mean change in recall (percentage points) and the share of
trials the check failed (exit 1), and the smallest change detected in 95% of the trials and in half
of them. A loss smaller than that passes the check.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from compactlab.gate.gate import run_suite
from compactlab.gate.power import detection
from compactlab.gate.suite import MetricSpec, load_suite
from compactlab.results.catalogue import BY_NAME
from compactlab.runs.run_storage import run_compaction_rows

__all__ = ["detection", "recall_points"]

OWN_SUITE = Path(__file__).resolve().parents[2] / "reports" / "baselines" / "suite.toml"
LOSS_SHARES = (0.02, 0.04, 0.06, 0.08, 0.10, 0.12, 0.15, 0.20, 0.25, 0.30, 0.40)


def recall_points(out: Path, metric: str) -> dict[str, dict[str, list[tuple[int, int, int]]]]:
    """label -> session -> [(at, kept, needed)] for every compaction with a recall value."""
    k = metric.rsplit("_", 1)[1]  # "k1" or "k5"
    points: dict[str, dict[str, list[tuple[int, int, int]]]] = {}
    for row in run_compaction_rows(out):
        found = (row.get("preservation") or {}).get(k) or {}
        if row.get("failed") or found.get("summary_recall") is None:
            continue
        needed = len(found["only_dropped"])
        kept = needed - len(found["summary_lost"])
        points.setdefault(row["setting"], {}).setdefault(row["session"], []).append((int(row["message_index"]), kept, needed))
    return points


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", type=Path, default=OWN_SUITE, help="the suite (default: the repository's own)")
    parser.add_argument("--metric", default="summary_recall_k5", choices=("summary_recall_k1", "summary_recall_k5"))
    parser.add_argument("--trials", type=int, default=20, help="simulated runs per loss share")
    parser.add_argument("--offline", action="store_true", help="recorded answers only (as check --offline)")
    args = parser.parse_args()
    suite = load_suite(args.suite)
    spec = next(
        (m for m in suite.metrics if m.name == args.metric), MetricSpec(args.metric, "higher", BY_NAME[args.metric].tolerance)
    )
    with tempfile.TemporaryDirectory(prefix="compactlab-sensitivity-") as folder:
        run = run_suite(suite, Path(folder), args.offline)
        points = recall_points(Path(folder), args.metric)
        print(
            f"{suite.path}: {args.metric}, tolerance {spec.tolerance:g}, {suite.resamples} resamples, {args.trials} trials per loss share"
        )
        print(f"summaries from: {run.answers.model if run.answers else 'the extractive stand-in (no [summarizer])'}")
        for label, per in points.items():
            kept = sum(k for ps in per.values() for _, k, _ in ps)
            needed = sum(n for ps in per.values() for _, _, n in ps)
            if not kept:
                print(f"\n{label}: its summaries keep no dropped fact: no loss to simulate")
                continue
            compactions = sum(len(ps) for ps in per.values())
            print(f"\n{label}: {len(per)} sessions, {compactions} compactions, recall {kept}/{needed} facts")
            print("  loss share p   mean change (pp)   failed the check")
            most = half = None
            for p in LOSS_SHARES:
                change, share = detection(suite, label, spec, per, p, args.trials)
                print(f"  {p:12.2f}   {100 * change:16.1f}   {share:16.0%}")
                if share >= 0.5 and half is None:
                    half = change
                if share >= 0.95 and most is None:
                    most = change
            said = lambda c: "none up to p = 0.4" if c is None else f"{-100 * c:.1f} pp"  # noqa: E731
            print(f"  smallest loss detected in 95% of trials: {said(most)}; in half of them: {said(half)}")


if __name__ == "__main__":
    main()
