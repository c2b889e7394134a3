"""The two measurements of issue 28 on real bundled sessions: the smallest loss of summary recall
a suite's check detects (`tests.scripts.gate_sensitivity`) and what a baseline run asks a
model for (`tests.scripts.gate_baseline_cost`)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from compactlab.gate.gate import run_suite
from compactlab.gate.suite import MetricSpec, load_suite
from compactlab.runs import runs
from tests.conftest import bundled
from tests.gate.test_worse_summary_prompt import SESSIONS
from tests.scripts.gate_baseline_cost import CountingSummarizer
from tests.scripts.gate_sensitivity import detection, recall_points


@pytest.fixture(scope="module")
def replayed(tmp_path_factory) -> tuple:
    """Ten real mini-swe-agent sessions through `summarize`, offline, as a suite's check replays them."""
    folder = tmp_path_factory.mktemp("sensitivity")
    datasets = ", ".join(f'"{bundled("mini-swe-agent-pr816", stem).as_posix()}"' for stem in SESSIONS)
    (folder / "suite.toml").write_text(
        f'datasets = [{datasets}]\nwindow = 20000\n\n[[strategy]]\nname = "summarize"\n'
        'settings = { keep_recent_tokens = 4000 }\n\n[metrics.summary_recall_k5]\ndirection = "higher"\ntolerance = 0.05\n',
        encoding="utf-8",
    )
    suite = load_suite(folder / "suite.toml")
    run_suite(suite, folder / "run")
    return suite, recall_points(folder / "run", "summary_recall_k5")["summarize"]


def test_no_loss_never_fails_and_losing_every_kept_fact_always_does(replayed) -> None:
    suite, points = replayed
    kept = sum(k for ps in points.values() for _, k, _ in ps)
    needed = sum(n for ps in points.values() for _, _, n in ps)
    assert len(points) >= 5 and 0 < kept < needed
    spec = MetricSpec("summary_recall_k5", "higher", 0.05)
    assert detection(suite, "summarize", spec, points, 0.0, trials=3) == (0.0, 0.0)
    change, failed = detection(suite, "summarize", spec, points, 1.0, trials=3)
    assert change < -0.05 and failed == 1.0
    # Between the two: a loss well under the tolerance passes every time.
    small, failed = detection(suite, "summarize", spec, points, 0.02, trials=5)
    assert -0.05 < small < 0 and failed == 0.0


def test_the_counting_summarizer_counts_what_a_baseline_would_send(replayed, tmp_path: Path) -> None:
    suite, _ = replayed
    config = replace(
        suite.config,
        strategies=tuple(replace(s, settings=(*s.settings, ("summarizer", "llm"))) for s in suite.config.strategies),
    )
    counting = CountingSummarizer()
    result = runs.run(config, tmp_path / "run", summarizer=counting)
    compactions = result.compactions
    done = compactions[compactions["failed"].isna()]
    assert counting.calls >= len(done) > 0  # one request per compaction, two for a split turn
    assert counting.input_tokens > counting.calls * 1000  # each request carries the conversation it summarizes
    assert counting.budget == 4096 * counting.calls and 0 < counting.extractive_tokens < counting.budget
