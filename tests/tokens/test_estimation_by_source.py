"""Estimator error per source and per model family beside the pooled figure, and lenient estimation
that keeps the files with damaged records (issue 27 §4), on the bundled real sessions."""

from __future__ import annotations

import json

import pytest

from compactlab.cli.main import main
from compactlab.sessions.loading import load_inputs
from compactlab.tokens.estimation import run_estimation, summarize_by_source


@pytest.fixture(scope="module")
def loaded():
    return load_inputs(["m-claude", "claude-code-log"], lenient=True).sessions


def test_lenient_estimation_keeps_the_files_with_damaged_records_and_counts_them(loaded) -> None:
    damaged = [t for t in loaded if t.skipped]
    assert damaged  # the m-claude owner's redaction broke some lines
    strict = run_estimation(loaded, ["tiktoken-o200k"])
    kept = run_estimation(loaded, ["tiktoken-o200k"], keep_damaged=True)
    assert set(strict.calls["session"]).isdisjoint(t.id for t in damaged)
    assert {t.id for t in damaged if t.calls} <= set(kept.calls["session"])
    # among them the session holding the bundled real auto-compaction
    assert any(t.startswith("3af9b1a7") for t in kept.calls[kept.calls["damaged"]]["session"])
    assert kept.damaged_kept and not strict.damaged_kept
    assert kept.skipped_records == sum(len(t.skipped) for t in damaged) > 0
    assert set(kept.damaged_sessions) == set(strict.damaged_sessions) == {t.id for t in damaged}


def test_bias_per_source_and_family_stands_beside_the_pooled_figure(loaded) -> None:
    calls = run_estimation(loaded, ["calibrated", "hybrid"], keep_damaged=True).calls
    table = summarize_by_source(calls).set_index(["estimator", "source"])
    scored = calls[~calls["first_call"]]
    for estimator in ("calibrated", "hybrid"):
        sources = table.loc[estimator].drop(index="all")
        assert set(sources.index) == {"m-claude", "claude-code-log"} & set(scored[scored["estimator"] == estimator]["source"])
        pooled = table.loc[(estimator, "all")]
        assert pooled["calls"] == sources["calls"].sum() == (scored["estimator"] == estimator).sum()
        # the pooled bias is the calls-weighted mean of the sources': it can hide one high and one low
        weighted = (sources["bias_pct"] * sources["calls"]).sum() / sources["calls"].sum()
        assert pooled["bias_pct"] == pytest.approx(weighted)
        assert sources["bias_pct"].min() <= pooled["bias_pct"] <= sources["bias_pct"].max()
    by_family = summarize_by_source(calls, by="family")
    assert set(by_family["source"]) == {"claude", "all"}


def test_the_cli_prints_and_writes_the_figures_per_source(tmp_path, capsys) -> None:
    assert main(["estimate", "--lenient", "--estimators", "hybrid", "--out", str(tmp_path), "m-claude"]) == 0
    out = capsys.readouterr().out
    assert "per source, beside the pooled figure (all):" in out and "kept (--lenient):" in out
    document = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    assert {row["source"] for row in document["by_source"]} == {"m-claude", "all"}
    assert {row["source"] for row in document["by_family"]} == {"claude", "all"}
    assert document["left_out"]["damaged_kept"] and document["left_out"]["skipped_records"] > 0
