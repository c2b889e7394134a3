"""Regenerate the shipped calibration: `python -m tests.scripts.fit_calibration`.

Fits `calibrated`'s line per model family (`compactlab.tokens.calibration.fit_families`) on the training half
of the bundled datasets (a stable hash split by session: a sub-agent's file goes with its parent
session, `compactlab.sessions.session_family`, so none of a training session's text is scored
as out of sample) and writes
`bench/tokens/calibration_fit.json` with the lines and the ids of the sessions each was trained on.
Rerun it whenever the bundled datasets or the base estimator change; `compactlab estimate` then
scores the new lines on every session not named in the file.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

from compactlab.sessions.datasets import list_datasets
from compactlab.sessions.loading import load_inputs
from compactlab.sessions.session_family import session_family
from compactlab.tokens.calibration import SHIPPED_FIT, fit_document, fit_families, is_training
from compactlab.tokens.estimation import run_estimation
from compactlab.tokens.estimators import Calibrated

TRAIN_FRACTION = 0.5


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.scripts.fit_calibration", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "out", nargs="?", type=Path, default=SHIPPED_FIT, help=f"where to write the fits (default: {SHIPPED_FIT})"
    )
    parser.add_argument(
        "--datasets", nargs="+", help="bundled datasets to fit on (default: every bundled dataset); the file names them"
    )
    args = parser.parse_args(argv)
    out = args.out
    datasets = args.datasets or [dataset.name for dataset in list_datasets()]
    base = Calibrated().base
    sessions = load_inputs(datasets).sessions
    family_of = {t.id: session_family(t) for t in sessions}
    calls = run_estimation(sessions, [base]).calls
    train = calls[calls["session"].map(lambda t: is_training(family_of[t], TRAIN_FRACTION))]
    fits = {
        name: replace(fit, families=tuple(sorted({family_of[t] for t in fit.sessions})))
        for name, fit in fit_families(train, base).items()
    }
    out.write_text(json.dumps(fit_document(fits, datasets, TRAIN_FRACTION), indent=1) + "\n", encoding="utf-8")
    for fit in fits.values():
        print(
            f"{fit.family}: tokens ≈ {fit.slope:.4f} × {fit.base} + {fit.intercept:.0f} ({fit.train_calls} calls, {fit.train_sessions} sessions)"
        )
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
