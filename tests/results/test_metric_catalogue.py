"""One metric catalogue, read by every surface: a new metric is its entry (plus, for a new score, its scorer).

On a real run: every figure the per-session table computes is catalogued (or is named below as the
run's own bookkeeping), every catalogued figure is computed, and the leaderboard, summary.json, the
report, `compactlab diff` and the CI gate all take the reported metrics and their labels from the
catalogue, so none of them has a list of its own to extend.
"""

from __future__ import annotations

import html
import json
import subprocess
import sys

import pandas as pd
import pytest

from compactlab.gate.suite import KNOWN_METRICS
from compactlab.report.diff import METRICS as DIFF_METRICS
from compactlab.results.catalogue import BY_NAME, KIND_METRICS, REPORTED, metric
from tests.conftest import SharedRun, bundled

# Columns of sessions.csv that are not figures: the row's keys and the run's own bookkeeping
# (damaged records, incomplete sessions). No-op and fallback compactions are catalogued: the table's
# columns all come from entries.
NOT_FIGURES = {"session", "setting", "damaged", "incomplete"}


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


# A metric as a maintainer adds one: its scorer and its entry, and no other line. Run in its own
# interpreter, the entry joining the catalogue before any module reads it.
_TRIAL = """
from compactlab.results import catalogue
from compactlab.results.metric import Metric, score_of
from compactlab.scoring import compaction_scores

def last_user(messages, index, before, compacted):
    last = next((m for m in reversed(before) if m.role == "user" and not m.instruction), None)
    kept = None if last is None else float(any(m is last for m in compacted))
    return {"last_user": {"score": kept}}

compaction_scores.SCORERS += (last_user,)
catalogue.METRICS += (
    Metric("last_user_kept", "last user message kept", "higher", "share", 0.05, "The trial.",
           source="compactions", value=score_of("last_user")),
)

import json, sys
import pandas as pd
from compactlab.replay.replay import replay
from compactlab.replay.setting import Setting
from compactlab.results.compaction_values import compaction_values
from compactlab.results.metrics import calls_frame, compactions_frame, session_summary
from compactlab.results.summary_arrays import summary_from_arrays
from compactlab.runs.run_format import TABLE_COLUMNS
from compactlab.sessions.importers import load_file
from compactlab.tokens.context_windows import ContextWindows

[session] = load_file(sys.argv[1])
replayed = replay(session, Setting("summarize", "summarize"), ContextWindows(overrides={"": 12_000}))
rows = [row.values() for row in replayed.compactions]
calls, compactions = calls_frame(replayed.calls), compactions_frame(rows)
plain = session_summary(calls, compactions)
pd.testing.assert_frame_equal(summary_from_arrays(calls, compactions), plain, check_exact=True)
values = [v.value for v in compaction_values(rows) if v.metric == "last_user_kept"]
print(json.dumps({"table": float(plain["last_user_kept"].iloc[0]), "values": values,
                  "frame": compactions["last_user_kept"].tolist(), "older": "last_user_kept" in TABLE_COLUMNS}))
"""


def test_a_new_metric_is_its_entry_and_its_scorer() -> None:
    """The trial metric of issue 46 (was the last user message kept?) declared by one scorer and one
    entry: the compaction frame, the per-session table (plain and fast, equal to the bit), the gate's
    per-compaction values and the columns an older run reads as empty all have it."""
    session = bundled("mini-swe-agent-pr816", "deepseek_reasoner_dev_marshmallow-code__marshmallow-1343")
    done = subprocess.run([sys.executable, "-c", _TRIAL, str(session)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout)
    assert len(found["values"]) >= 2 and set(found["values"]) <= {0.0, 1.0}, (
        "the session must compact for the test to mean anything"
    )
    assert found["frame"] == found["values"] and found["older"]
    assert found["table"] == sum(found["values"]) / len(found["values"])
