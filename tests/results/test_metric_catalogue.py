"""One metric catalogue, read by every surface: a new metric is its computation plus its entry.

On a real run: every figure the per-session table computes is catalogued (or is named below as the
run's own bookkeeping), every catalogued figure is computed, and the leaderboard, summary.json, the
report, `compactlab diff` and the CI gate all take the reported metrics and their labels from the
catalogue, so none of them has a list of its own to extend.
"""

from __future__ import annotations

import html
import json

import pandas as pd
import pytest

from compactlab.gate.suite import KNOWN_METRICS
from compactlab.report.diff import METRICS as DIFF_METRICS
from compactlab.results.catalogue import BY_NAME, KIND_METRICS, REPORTED, metric
from tests.conftest import SharedRun

# Columns of sessions.csv that are not figures: the row's keys and the run's own bookkeeping
# (damaged records, incomplete sessions, no-op and fallback compactions are counted, not compared).
NOT_FIGURES = {"session", "setting", "damaged", "incomplete", "noop_compactions", "fallback_compactions"}


@pytest.fixture(scope="module")
def run(small_run: SharedRun) -> dict:
    """The session's small real run (tests/conftest.py): four bundled files, four strategies."""
    out = small_run.folder
    return {
        "table": pd.read_csv(out / "sessions.csv"),
        "summary": json.loads((out / "summary.json").read_text()),
        "page": html.unescape((out / "report.html").read_text(encoding="utf-8")),
        "printed": small_run.printed,
    }


def test_every_computed_figure_is_catalogued_and_every_entry_computed(run: dict) -> None:
    columns = set(run["table"].columns)
    assert columns - NOT_FIGURES <= set(BY_NAME), "a per-session figure without a catalogue entry"
    # The per-kind preservation figures come from the compaction rows (compactlab.results.compaction_values).
    assert set(BY_NAME) - set(KIND_METRICS) <= columns


def test_the_surfaces_show_the_reported_metrics_under_their_catalogue_labels(run: dict) -> None:
    for name in REPORTED:
        entry = metric(name)
        assert entry.label in run["printed"], f"{name}: not in the leaderboard printed by `run`"
        assert entry.label in run["page"], f"{name}: not in the report"
        column = f"{name}_mean" if entry.aggregate == "mean" else f"{name}_total"
        assert all(column in row for row in run["summary"]["leaderboard"]), f"{name}: not in summary.json"


def test_diff_and_gate_read_the_catalogue() -> None:
    assert tuple(m.name for m in DIFF_METRICS) == REPORTED
    assert set(KNOWN_METRICS) == set(BY_NAME)
