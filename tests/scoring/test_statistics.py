"""compactlab.scoring.statistics on synthetic data whose right answers are known."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from compactlab.report.run_data import load_light
from compactlab.results.leaderboard import MEAN_COLUMNS, ranked
from compactlab.scoring.statistics import (
    _per_unit,
    bootstrap_ci,
    holm_adjust,
    paired_bootstrap,
    pairwise_comparisons,
    pareto_frontier,
    summarize_by_strategy,
)


def test_ci_covers_true_mean_about_95_percent_of_the_time():
    # 500 experiments: the share is known to about ±1 point (the percentile bootstrap runs a little
    # narrow at n = 50, near 93-94%), so the 90-99% band is not at the mercy of a few seeds.
    covered = 0
    for seed in range(500):
        sample = np.random.default_rng(seed).normal(loc=3.0, scale=2.0, size=50)
        ci = bootstrap_ci(sample, resamples=1_000, seed=seed)
        covered += ci.low <= 3.0 <= ci.high
    assert 0.90 <= covered / 500 <= 0.99


def test_ci_is_deterministic_and_brackets_the_mean():
    sample = np.random.default_rng(1).exponential(size=150)
    first, again = bootstrap_ci(sample, seed=7), bootstrap_ci(sample, seed=7)
    assert first == again
    assert first.low < first.mean < first.high
    assert first.mean == pytest.approx(sample.mean())
    assert first.n == 150 and first.dropped == 0


def test_constant_sample_gives_zero_width_interval():
    ci = bootstrap_ci([0.8] * 20)
    assert ci.low == pytest.approx(0.8) and ci.high == pytest.approx(0.8) and ci.mean == pytest.approx(0.8)


def test_ci_drops_and_counts_nan_and_handles_tiny_samples():
    ci = bootstrap_ci([1.0, np.nan, 3.0, np.nan])
    assert (ci.n, ci.dropped, ci.mean) == (2, 2, 2.0)
    single = bootstrap_ci([np.nan, 5.0])
    assert (single.mean, single.low, single.high, single.n, single.dropped) == (5.0, 5.0, 5.0, 1, 1)
    empty = bootstrap_ci([np.nan])
    assert math.isnan(empty.mean) and math.isnan(empty.low) and (empty.n, empty.dropped) == (0, 1)
    with pytest.raises(ValueError):
        bootstrap_ci([1.0, 2.0], confidence=1.5)


def test_paired_bootstrap_finds_a_clear_shift():
    rng = np.random.default_rng(2)
    b = rng.normal(size=60)
    a = b + 1.0 + rng.normal(scale=0.5, size=60)
    r = paired_bootstrap(a, b)
    assert r.p_value < 0.01
    assert r.low > 0 and r.low < r.mean_diff < r.high
    assert r.mean_diff == pytest.approx((a - b).mean())


def test_paired_bootstrap_finds_nothing_between_identical_distributions():
    rng = np.random.default_rng(3)
    r = paired_bootstrap(rng.normal(size=80), rng.normal(size=80))
    assert r.p_value > 0.2
    assert r.low < 0 < r.high


def test_paired_bootstrap_p_values_are_calibrated_under_the_null():
    # Under no difference, p < 0.05 should happen in roughly 5% of experiments, not much more.
    rejections = 0
    for seed in range(200):
        rng = np.random.default_rng(seed)
        r = paired_bootstrap(rng.normal(size=40), rng.normal(size=40), resamples=1_000, seed=seed)
        rejections += r.p_value < 0.05
    assert rejections / 200 <= 0.10


def test_pairs_are_really_paired():
    # Each session has its own difficulty (sd 10) that swamps the 0.3 effect unless pairs are kept.
    rng = np.random.default_rng(4)
    difficulty = rng.normal(scale=10.0, size=50)
    a = difficulty + 0.3 + rng.normal(scale=0.2, size=50)
    b = difficulty + rng.normal(scale=0.2, size=50)
    assert paired_bootstrap(a, b).p_value < 0.01
    # The same values with the pairing broken: the offset swamps the effect.
    assert paired_bootstrap(a, rng.permutation(b)).p_value > 0.05


def test_paired_bootstrap_drops_and_counts_incomplete_pairs():
    a = [1.0, 2.0, np.nan, 4.0, 5.0]
    b = [0.0, np.nan, 3.0, np.nan, 4.0]
    r = paired_bootstrap(a, b)
    assert (r.n, r.dropped, r.mean_diff) == (2, 3, 1.0)
    one = paired_bootstrap([1.0, np.nan], [0.0, 0.0])
    assert (one.n, one.dropped, one.mean_diff) == (1, 1, 1.0) and math.isnan(one.p_value)
    with pytest.raises(ValueError):
        paired_bootstrap([1.0, 2.0], [1.0])


def test_identical_strategies_give_p_of_one():
    assert paired_bootstrap([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]).p_value == 1.0


def test_holm_adjustment_matches_hand_computation():
    # Sorted: 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 = 0.04 → raised to 0.06 (monotone).
    adjusted = holm_adjust([0.01, 0.04, 0.03, 0.005])
    assert adjusted == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # NaN is neither adjusted nor counted among the tests; values are capped at 1.
    with_nan = holm_adjust([0.5, np.nan, 0.4])
    assert with_nan[0] == pytest.approx(0.8) and math.isnan(with_nan[1]) and with_nan[2] == pytest.approx(0.8)
    assert holm_adjust([0.7, 0.6]).tolist() == [1.0, 1.0]


def _long_frame() -> pd.DataFrame:
    """Three strategies over 40 sessions; 'good' is 0.2 above 'base', 'same' equals 'base' in distribution."""
    rng = np.random.default_rng(5)
    difficulty = rng.normal(size=40)
    rows = []
    for t in range(40):
        for strategy, shift in (("base", 0.0), ("good", 0.2), ("same", 0.0)):
            if strategy == "same" and t >= 30:
                continue  # 'same' ran on fewer sessions
            value = difficulty[t] + shift + rng.normal(scale=0.1)
            # Two events per session: the mean of the two is the session's value.
            rows += [
                {"strategy": strategy, "session": f"t{t}", "score": value - 0.05, "cost": 1.0},
                {"strategy": strategy, "session": f"t{t}", "score": value + 0.05, "cost": 1.0},
            ]
    return pd.DataFrame(rows)


def test_summarize_by_strategy_resamples_sessions():
    frame = _long_frame()
    summary = summarize_by_strategy(frame, ["score", "cost"], resamples=2_000)
    assert list(summary["strategy"]) == ["base", "good", "same"]
    assert list(summary["sessions"]) == [40, 40, 30]
    assert list(summary["score_n"]) == [40, 40, 30]
    base = summary.iloc[0]
    assert base["score_mean"] == pytest.approx(frame[frame.strategy == "base"]["score"].mean())
    assert base["score_low"] < base["score_mean"] < base["score_high"]
    assert base["cost_low"] == base["cost_high"] == 1.0
    with pytest.raises(ValueError, match="missing columns: nope"):
        summarize_by_strategy(frame, ["nope"])


def test_pairwise_comparisons_against_baseline_and_all_pairs():
    frame = _long_frame()
    vs_base = pairwise_comparisons(frame, "score", baseline="base", resamples=2_000)
    assert list(zip(vs_base.strategy_a, vs_base.strategy_b)) == [("good", "base"), ("same", "base")]
    good, same = vs_base.iloc[0], vs_base.iloc[1]
    assert good["significant"] and good["mean_diff"] > 0 and good["n"] == 40
    assert not same["significant"] and (same["n"], same["dropped"]) == (30, 10)
    assert (vs_base["p_holm"] >= vs_base["p_value"]).all()
    everything = pairwise_comparisons(frame, "score", resamples=2_000)
    assert len(everything) == 3
    assert everything["p_holm"].tolist() == pytest.approx(holm_adjust(everything["p_value"]).tolist())
    with pytest.raises(ValueError, match="baseline 'missing'"):
        pairwise_comparisons(frame, "score", baseline="missing")


def test_batched_pairs_match_paired_bootstrap_one_by_one():
    frame = _long_frame()
    per_unit = frame.groupby(["strategy", "session"])["score"].mean().unstack(0)  # sessions sorted
    table = pairwise_comparisons(frame, "score", resamples=2_000, seed=3)
    for row in table.itertuples():
        alone = paired_bootstrap(per_unit[row.strategy_a], per_unit[row.strategy_b], resamples=2_000, seed=3)
        assert (row.mean_diff, row.low, row.high) == pytest.approx((alone.mean_diff, alone.low, alone.high))
        assert (row.p_value, row.n, row.dropped) == (alone.p_value, alone.n, alone.dropped)


def test_results_do_not_depend_on_row_order():
    frame = _long_frame()
    shuffled = frame.sample(frac=1.0, random_state=0)
    shuffled = pd.concat([shuffled[shuffled.strategy == s] for s in ("base", "good", "same")])  # same strategy order
    summary = summarize_by_strategy(frame, ["score"], resamples=500)
    pd.testing.assert_frame_equal(summarize_by_strategy(shuffled, ["score"], resamples=500), summary)
    pairs = pairwise_comparisons(frame, "score", resamples=500)
    pd.testing.assert_frame_equal(pairwise_comparisons(shuffled, "score", resamples=500), pairs)


def test_pairwise_with_one_strategy_or_one_shared_session():
    assert pairwise_comparisons(_long_frame().query("strategy == 'base'"), "score").empty
    tiny = pd.DataFrame({"strategy": ["x", "y", "x", "y"], "session": ["t1", "t1", "t2", "t3"], "v": [1, 0, 2, 5]})
    row = pairwise_comparisons(tiny, "v").iloc[0]
    assert (row["n"], row["dropped"], row["mean_diff"]) == (1, 2, 1.0)
    assert math.isnan(row["p_value"]) and math.isnan(row["p_holm"]) and not row["significant"]


def test_pareto_frontier_on_hand_made_points():
    points = pd.DataFrame(
        {
            "name": ["a", "b", "c", "d", "e", "f", "g", "h"],
            "tokens_removed": [0.1, 0.5, 0.5, 0.3, 0.8, 0.8, np.nan, 0.2],
            "preservation": [0.99, 0.9, 0.85, 0.8, 0.6, 0.6, 1.0, 0.99],
        }
    )
    # c is beaten by b (same savings, less kept), d by b, a by h (same kept, less saved);
    # e and f are duplicates and both stay; g has NaN and is reported, never on the frontier.
    frontier = pareto_frontier(points)
    assert list(frontier["name"]) == ["h", "b", "e", "f"]
    assert frontier.attrs["nan_rows"] == [6]
    assert list(frontier.index) == [7, 1, 4, 5]  # traceable to the input rows
    with pytest.raises(ValueError, match="missing: speed"):
        pareto_frontier(points, maximize=("tokens_removed", "speed"))


def test_object_columns_of_one_row_per_session_average_as_pandas_averages_them() -> None:
    # A run's sessions frame holds its cost columns as objects (None where a model has no price);
    # `_per_unit` reads them as floats when each (setting, session) has one row: the same means.
    frame = ranked(load_light(Path(__file__).parents[2] / "reports" / "reference").sessions)
    costs = [c for c in ("total_cost", "cost_change", "summarizer_cost") if c in MEAN_COLUMNS]
    assert costs and frame[costs].isna().any().any(), "the reference run must hold unpriced sessions for this to test"
    frame = frame.assign(**{c: frame[c].astype(object).where(frame[c].notna(), None) for c in costs})
    expected = frame.groupby(["setting", "session"], sort=False)[list(MEAN_COLUMNS)].mean().reset_index()
    found = _per_unit(frame, MEAN_COLUMNS, "setting", "session").sort_index()
    for column in MEAN_COLUMNS:
        assert np.array_equal(found[column].to_numpy(float), expected[column].to_numpy(float), equal_nan=True), column
