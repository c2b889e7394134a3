"""The suite's own power: the smallest loss of each guarded metric its `check` detects.

`compactlab baseline` measures it from the run it records, by resampling (no model is asked again),
writes it in the baseline (`sensitivity`), and refuses a suite too weak for its own tolerances;
`compactlab check` states it. The method (issue 28's, `tests.scripts.gate_sensitivity`):

- the metrics simulated are the guarded shares of facts counted per compaction, higher is better:
  summary recall and next-step preservation (overall and per kind). Each compaction of the baseline
  run kept k of the n facts the metric counts there;
- a worse summary is simulated on those real compactions: each kept fact is lost with probability p,
  independently, so the compaction gets (k − Binomial(k, p)) / n; the mean falls by p of itself;
- each simulated run is compared with the baseline by the gate's own rule
  (`compactlab.gate.compare.compare`: the two-level and within-sessions intervals against the
  tolerance, a fall to 0), `TRIALS` times per p with different draws, the bootstrap with at most
  `RESAMPLES` resamples;
- the sensitivity is the smallest loss (points of the metric, at the smallest p of `LOSS_SHARES`)
  that fails the check in 95% of the trials; the requirement is that a loss of twice the metric's
  tolerance (capped at a total loss) does: the tolerance passes by design, and as much again is
  the room left to the bootstrap's noise. A setting whose compactions keep none of the facts has
  nothing to lose and is not held to it.

Other metrics (per-session figures such as tokens removed or cost) are not simulated: said so.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from compactlab.gate.compare import compare
from compactlab.gate.suite import MetricSpec, Suite
from compactlab.results.catalogue import BY_NAME, ITEM_KINDS
from compactlab.results.catalogue import label as metric_label
from compactlab.results.compaction_values import CompactionValue

LOSS_SHARES = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
TRIALS = 20
DETECTED = 0.95  # the share of trials that must fail the check
RESAMPLES = 2000  # per simulated check (the suite's own when fewer)

Counts = dict[str, list[tuple[int, int, int]]]  # session -> [(at, kept, needed)]


def simulated(name: str) -> bool:
    """A metric the method applies to: a share of facts counted per compaction, higher is better."""
    known = BY_NAME[name]
    return known.per_compaction and known.direction == "higher" and name.startswith(("summary_recall_k", "preservation_k"))


def fact_counts(rows: Iterable[dict], names: Iterable[str]) -> dict[str, dict[str, Counts]]:
    """metric -> setting -> session -> [(at, kept, needed)] from a run's compaction rows, for the
    simulated metrics among `names` (the counts behind each compaction's value)."""
    wanted = [n for n in names if simulated(n)]
    found: dict[str, dict[str, Counts]] = {}
    for row in rows:
        if row.get("failed"):
            continue
        for key, scores in (row.get("preservation") or {}).items():
            for name in wanted:
                counts = _counts(name, key, scores)
                if counts is not None:
                    per = found.setdefault(name, {}).setdefault(row["setting"], {})
                    per.setdefault(row["session"], []).append((int(row["message_index"]), *counts))
    return found


def _counts(name: str, key: str, scores: dict) -> tuple[int, int] | None:
    """(kept, needed) of metric `name` in one compaction's scores at `key` ("k1", "k5"), as
    `compactlab.results.compaction_values` computes its value; None where it has none."""
    if name == f"summary_recall_{key}":
        if scores.get("summary_recall") is None:
            return None
        needed = len(scores["only_dropped"])
        return needed - len(scores.get("summary_lost", ())), needed
    if name == f"preservation_{key}":
        if scores.get("score") is None:
            return None
        needed = len(scores.get("needed", ()))
        return needed - len(scores.get("lost", ())), needed
    kind = name.removeprefix(f"preservation_{key}_")
    if kind == name or kind not in ITEM_KINDS:
        return None
    needed = Counter(item.split(":", 1)[0] for item in scores.get("needed", ()))[kind]
    if not needed:
        return None
    return needed - sum(item.split(":", 1)[0] == kind for item in scores.get("lost", ())), needed


def _documents(label: str, metric: str, values: dict[str, list[tuple[int, float]]]) -> tuple[dict, pd.DataFrame, list]:
    """A baseline document, a metric table and compaction values holding these values."""
    table = pd.DataFrame(
        [{"session": t, "setting": label, metric: float(np.mean([v for _, v in vs]))} for t, vs in values.items()]
    )
    compactions = [CompactionValue(t, label, at, metric, v, ()) for t, vs in values.items() for at, v in vs]
    document = {
        "values": {label: {metric: dict(zip(table["session"], table[metric]))}},
        "compactions": {label: {metric: {t: [[at, v, []] for at, v in vs] for t, vs in values.items()}}},
    }
    return document, table, compactions


def detection(
    suite: Suite, label: str, spec: MetricSpec, points: Counts, p: float, trials: int = TRIALS, misses: int | None = None
) -> tuple[float, float]:
    """(mean change, share of trials failing the check) for a loss share p. `misses`: stop once more
    trials than this passed (the share is then of the trials run)."""
    one = replace(
        suite,
        metrics=(spec,),
        resamples=min(suite.resamples, RESAMPLES),
        config=replace(suite.config, strategies=tuple(s for s in suite.config.strategies if s.label == label)),
    )
    base = {t: [(at, kept / needed) for at, kept, needed in ps] for t, ps in points.items()}
    baseline, _, _ = _documents(label, spec.name, base)
    changes, failed = [], 0
    for trial in range(trials):
        rng = np.random.default_rng(trial)
        worse = {t: [(at, (kept - rng.binomial(kept, p)) / needed) for at, kept, needed in ps] for t, ps in points.items()}
        _, table, values = _documents(label, spec.name, worse)
        [comparison] = compare(one, baseline, table, values).comparisons
        changes.append(comparison.change)
        failed += comparison.verdict == "regression"
        if misses is not None and trial + 1 - failed > misses:
            break
    return float(np.mean(changes)), failed / len(changes)


@dataclass(frozen=True)
class Power:
    """What one setting's check of one metric detects (`sensitivity`)."""

    label: str
    metric: str
    compactions: int
    sessions: int
    baseline: float  # the mean over sessions
    required: float  # the loss it must detect: twice the tolerance at this baseline, at most all of it
    detects_required: bool
    loss: float | None  # the smallest loss detected in 95% of trials (points of the metric); None: none
    share: float | None  # the loss share p it took

    def document(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in ("label", "metric")}


def sensitivity(suite: Suite, counts: dict[str, dict[str, Counts]]) -> list[Power]:
    """The power of the suite's check of each simulated guarded metric, per setting (settings whose
    compactions keep none of the metric's facts left out: nothing to lose)."""
    found = []
    for spec in suite.metrics:
        for strategy in suite.config.strategies:
            points = counts.get(spec.name, {}).get(strategy.label, {})
            if sum(k for ps in points.values() for _, k, _ in ps):
                found.append(_power(suite, spec, strategy.label, points))
    return found


def _power(suite: Suite, spec: MetricSpec, label: str, points: Counts) -> Power:
    allowed_misses = int(TRIALS * (1 - DETECTED))

    def detected(p: float) -> tuple[float, bool]:
        change, rate = detection(suite, label, spec, points, p, misses=allowed_misses)
        return change, rate >= DETECTED

    base = float(np.mean([np.mean([k / n for _, k, n in ps]) for ps in points.values()]))
    need = min(1.0, max(LOSS_SHARES[0], 2 * spec.allowed(base) / base))
    _, enough = detected(need)
    low, high, smallest = 0, len(LOSS_SHARES) - 1, None  # bisection: detection grows with p
    while low <= high:
        middle = (low + high) // 2
        change, hit = detected(LOSS_SHARES[middle])
        if hit:
            smallest, high = (LOSS_SHARES[middle], -change), middle - 1
        else:
            low = middle + 1
    compactions = sum(len(ps) for ps in points.values())
    share, loss = smallest if smallest is not None else (None, None)
    return Power(label, spec.name, compactions, len(points), base, need * base, enough, loss, share)


def statement(power: Power) -> str:
    """'`summarize` · summary recall (k=5): this suite detects a loss of 12 points or more …'."""
    name = f"`{power.label}` · {metric_label(power.metric)} (`{power.metric}`)"
    over = f"over {power.compactions} compactions in {power.sessions} sessions, baseline {100 * power.baseline:.1f}%"
    if power.loss is None:
        return f"{name}: this suite detects no loss of it, not even of all it keeps ({over}): it cannot tell"
    return (
        f"{name}: this suite detects a loss of {100 * power.loss:.1f} points or more ({power.share:.0%} of what it keeps) "
        f"in {DETECTED:.0%} of simulated trials ({over}); a smaller loss passes"
    )


def shortfalls(suite: Suite, powers: list[Power], enforced: bool = True) -> list[str]:
    """The settings × metrics whose check cannot detect the loss required of it, one line each:
    `enforced`, those of metrics with a relative tolerance (the scaffold's, the catalogue's defaults
    for small shares), which `baseline` refuses; else the others, which it only warns about (a suite
    of absolute tolerances written before the requirement keeps working, its weakness stated)."""
    relative = {m.name for m in suite.metrics if m.relative_tolerance is not None or m.relative}
    return [
        f"{statement(p)}; it must detect a loss of {100 * p.required:.1f} points (twice its tolerance, at most all of it)"
        for p in powers
        if not p.detects_required and (p.metric in relative) == enforced
    ]


def from_document(document: dict) -> list[Power]:
    """The powers a baseline recorded (`sensitivity`: label -> metric -> fields)."""
    return [
        Power(label, metric, **fields)
        for label, per in (document.get("sensitivity") or {}).items()
        for metric, fields in per.items()
    ]


def to_document(powers: list[Power]) -> dict:
    document: dict = {}
    for p in powers:
        document.setdefault(p.label, {})[p.metric] = p.document()
    return document


def refusal(suite: Suite, short: list[str]) -> str:
    """Why `baseline` refuses a suite too weak for its tolerances, and what to do."""
    window = suite.config.window_tokens
    smaller = f"a smaller window than {window:,} tokens" if window else "a smaller simulated window (`window = ...`)"
    return (
        "this suite cannot detect a loss of its own tolerance, so its check would pass one:\n  "
        + "\n  ".join(short)
        + f"\nwhat to do: more sessions (datasets), {smaller} so that more compactions happen, or a larger "
        "tolerance for that metric (what it lets pass, said in its [metrics] table)"
    )


def check_lines(suite: Suite, baseline: dict) -> list[str]:
    """What the suite's check detects, from the baseline's measurement, for the check's markdown."""
    if "sensitivity" not in baseline:
        return [
            "The baseline records no sensitivity (it was made before compactlab measured it): "
            f"`compactlab baseline --suite {suite.path} --update` measures it; until then this check does not say "
            "how small a loss it detects."
        ]
    recorded = {(p.label, p.metric): p for p in from_document(baseline)}
    labels = {s.label for s in suite.config.strategies}
    lines = [
        statement(p)
        + ("" if p.detects_required else f"; weaker than its tolerance: it misses a loss of {100 * p.required:.1f} points")
        for key, p in recorded.items()
        if key[0] in labels
    ]
    kept_none = [m.name for m in suite.metrics if simulated(m.name) and not any(k[1] == m.name for k in recorded)]
    if kept_none:
        lines.append(
            f"{', '.join(f'`{n}`' for n in kept_none)}: no setting's compactions keep any of these facts: nothing to lose."
        )
    other = [m.name for m in suite.metrics if not simulated(m.name)]
    if other:
        lines.append(
            f"Not simulated (per-session figures): {', '.join(f'`{n}`' for n in other)}: a change counts beyond its "
            "tolerance, or a fall to 0."
        )
    return lines


def unseen_prompt_changes(comparisons: list, records: dict[str, dict], baseline: dict, powers: list[str]) -> list[str]:
    """Settings whose prompt templates changed since the baseline, read by a model, where no guarded
    figure moved beyond noise: the check cannot tell the new prompt from the old (the model may not
    follow what changed, or the loss is smaller than the suite detects), so it is no green pass."""
    lines = []
    for label, now in records.items():
        before = (baseline.get("strategies") or {}).get(label, {}).get("templates", {})
        changed = sorted(name for name, h in now["templates"].items() if h not in before.values())
        mine = [c for c in comparisons if c.label == label]
        if not (now["read_by"] and changed and mine) or any(c.verdict not in ("unchanged", "ok") for c in mine):
            continue
        same = all(c.verdict == "unchanged" for c in mine)
        lines.append(
            f"`{label}`: {', '.join(changed)} changed and model {now['read_by']} read it, but "
            + ("every guarded figure is exactly as in the baseline" if same else "no guarded figure moved beyond noise")
            + ": this suite cannot tell the new prompt from the old"
            + (" (the model's summaries do not follow what changed)" if same else "")
            + ("; it detects only the losses stated under 'What this suite detects'" if powers else "")
        )
    return lines
