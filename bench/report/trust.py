"""How far to trust a run's numbers: four checks of the replay against what really happened.

1. Fidelity at each real compaction: the replay's prediction of the first prompt after the
   production agent compacted against the one the provider billed (summary.json's
   `recorded_fidelity`).
2. Validity against behaviour: of the items the facts-kept metric marks lost at a real
   compaction, how many the agent re-acquired before using them, against the same share of the
   items marked kept (summary.json's `trust.reacquisition`, `compactlab.scoring.reacquisition`).
3. The token estimators' error on the run's sessions, out of sample: the calibrated fit is
   scored only on sessions it was not trained on (`compactlab.tokens.estimation`).
4. The replay's own size error: the measured-size rule (`compactlab.replay.prompt_size`) against the
   recorded sizes of prompts that keep a tail of the session (`tests.scripts.prompt_size_check`).

The run's summary.json holds 1 and 2; the run measured 3 and 4 while it read its sessions, when
it measured token estimation (`compactlab.runs.report_inputs`; a sweep does not).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from compactlab.replay.prompt_size_errors import error_table
from compactlab.report.overview_section import pct
from compactlab.report.run_data import RunData
from compactlab.results.fidelity_figures import counts_line
from compactlab.results.reacquisition_figures import per_compaction_line, pooled_line
from compactlab.scoring.recoverability import LABELS
from compactlab.tokens.estimation import IN_SAMPLE, summarize_by_source

SIZE_CHECK = "python -m tests.scripts.prompt_size_check"
ESTIMATE = "compactlab estimate"


def trust_context(run: RunData) -> dict[str, Any]:
    estimators = run.estimation.estimators if run.estimation is not None else []
    return {
        "fidelity": _fidelity(run),
        "fidelity_families": _fidelity_families(run),
        "fidelity_counts": counts_line(run.summary.get("fidelity", {})) if "fidelity" in run.summary else "",
        "reacquisition": _reacquisition(run),
        "estimators": _estimator_errors(run, estimators),
        "size": _size_error(run, estimators[0] if estimators else "hybrid"),
        "datasets": " ".join(run.config.get("datasets") or []) or "(the bundled datasets)",
    }


NOT_MEASURED = "the run did not measure token estimation (a sweep never does; `compactlab run` does unless `estimation = false`)"


def _fidelity(run: RunData) -> list[dict[str, str]]:
    return [
        {
            "session": r["session"],
            "call": str(r["call"]),
            "family": r.get("family") or "",
            "predicted": f"{r['fidelity_predicted']:,.0f}",
            "recorded": f"{r['fidelity_recorded']:,.0f}",
            "error": pct(r.get("relative_error"), signed=True),
            "counted": "yes" if not r.get("left_out") else f"no: {r['left_out']}",
        }
        for r in run.summary["recorded_fidelity"]
    ]


def _fidelity_families(run: RunData) -> list[dict[str, str]]:
    """Summary.json's figures per family (`compactlab.results.fidelity_figures`; a summary written before them has none)."""
    families = run.summary.get("fidelity", {}).get("families", {})
    return [
        {
            "family": family,
            "count": str(f["count"]),
            "within_5pct": pct(f["within_5pct"]),
            "within_10pct": pct(f["within_10pct"]),
            "within_3000": pct(f["within_3000"]),
            "within_7500": pct(f["within_7500"]),
            "median": f"{pct(f['median_pct'])} ({f['median_tokens']:,.0f} tokens)",
            "apart": f.get("apart") or "",
        }
        for family, f in families.items()
    ]


def _reacquisition(run: RunData) -> dict[str, Any]:
    found = run.summary["trust"]["reacquisition"]
    return {
        "rows": [
            {
                "session": r["session"],
                "call": str(r["call"]),
                "left_out": r.get("left_out") or "",
                "lost": _count(r["lost_reacquired"], r["lost"] - r.get("lost_incidental", 0)),
                "kept": _count(r["kept_reacquired"], r["kept"] - r.get("kept_incidental", 0)),
                "at_once": str(r.get("lost_at_once", 0)),
                "not_back": r["lost_not_reacquired"],
            }
            for r in found["compactions"]
        ],
        # Per compaction first (issue 41): the items of one compaction are not independent.
        "per_compaction": per_compaction_line(found) if "per_compaction" in found else None,
        "pooled": pooled_line(found) if "per_compaction" in found else None,
        "lost": _count(found["lost_reacquired"], found["lost"]),
        "kept": _count(found["kept_reacquired"], found["kept"]),
        "lost_share": found["lost_share"],
        "lost_total": found["lost"],
        "at_once": found.get("lost_at_once", 0),
        # The lost items by recoverability (docs/recoverability.md); a summary.json before the split lacks it.
        "by_label": [
            (label, _count(found.get(f"lost_{label}_reacquired", 0), found.get(f"lost_{label}", 0))) for label in LABELS
        ],
        "k": next((r.get("k") for r in found["compactions"] if r.get("k")), 5),
    }


def _count(back: int, of: int) -> str:
    return f"{back} of {of} ({pct(back / of, 0)})" if of else "0 of 0"


def _estimator_errors(run: RunData, estimators: list[str]) -> dict[str, Any]:
    if run.estimation is None:
        return {"rows": [], "missing": f"{NOT_MEASURED}: `{ESTIMATE} --dataset …` on the run's datasets measures them"}
    estimation = run.estimation.result
    calls = estimation.calls  # (with the estimators of the run's settings that the estimation section does not compare)
    scored = calls[~calls["first_call"].astype(bool)]
    rows = []
    for name in estimators:
        own = scored[scored["estimator"] == name]
        rel = own["rel_error"].to_numpy(float)
        left_out = int((scored["estimator"] == IN_SAMPLE).sum()) if name == "calibrated" else 0
        rows.append(
            {
                "estimator": name,
                "calls": f"{len(own):,}",
                "sessions": f"{own['session'].nunique():,}",
                "mape": pct(float(np.abs(rel).mean())) if len(rel) else "–",
                "bias": pct(float(rel.mean()), signed=True) if len(rel) else "–",
                "under5": pct(float((rel < -0.05).mean())) if len(rel) else "–",
                "in_sample": f"{left_out:,}" if left_out else "",
            }
        )
    # Per source beside the pooled figure: a pooled bias can hide a source run high and another run low.
    wanted = calls[calls["estimator"].isin(estimators)]
    by_source = [
        {
            "estimator": r["estimator"],
            "source": r["source"],
            "calls": f"{r['calls']:,}",
            "bias": pct(r["bias_pct"] / 100, signed=True),
            "mape": pct(r["mape_pct"] / 100),
            "under5": pct(r["under5_pct"] / 100),
            "over5": pct(r["over5_pct"] / 100),
        }
        for r in summarize_by_source(wanted).to_dict("records")
    ]
    return {"rows": rows, "missing": "", "damaged": len(estimation.damaged_sessions), "by_source": by_source}


def _size_error(run: RunData, estimator: str) -> dict[str, Any]:
    if run.estimation is None:
        return {"row": None, "why": f"{NOT_MEASURED}: `{SIZE_CHECK} DATASET …` measures it"}
    table = error_table(run.estimation.size_rows)
    if table.empty:
        return {
            "row": None,
            "why": "no session of this run qualifies (it needs at least 10 calls, no real compaction and no damaged "
            f"records): `{SIZE_CHECK}` measures it on every bundled session",
        }
    row = table.loc["all"]
    return {
        "row": {
            "sessions": f"{int(row['sessions']):,}",
            "pairs": f"{int(row['pairs']):,}",
            "median": f"{row['measured_median_abs_pct']:.1f}%",
            "p90": f"{row['measured_p90_abs_pct']:.1f}%",
            "signed": f"{row['measured_median_pct']:+.1f}%".replace("-", "−"),
        },
        "why": "",
        "estimator": estimator,
    }
