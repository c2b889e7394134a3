"""One measured size for every replayed prompt (bench/replay/prompt_size.py), checked on real sessions."""

from __future__ import annotations

import numpy as np

from compactlab.cli.main import main
from compactlab.compaction.engine import Engine
from compactlab.contract import Context, Trigger
from compactlab.replay.prompt_size import measured_size, own_estimate
from compactlab.replay.prompt_size_errors import error_table, kept_tail_errors
from compactlab.replay.replay import replay
from compactlab.replay.setting import Setting
from compactlab.replay.uncompacted import uncompacted
from compactlab.results.metrics import calls_frame, compactions_frame, session_summary
from compactlab.sessions.importers import load_file
from compactlab.sessions.loading import load_inputs
from compactlab.sessions.messages import is_summary
from compactlab.strategies.registry import get_strategy
from compactlab.tokens.context_windows import ContextWindows
from compactlab.tokens.metering import Meter
from tests.conftest import bundled

MINI_PATH = bundled("mini-swe-agent-pr816", "deepseek_reasoner_dev_marshmallow-code__marshmallow-1343")
MINI = load_file(MINI_PATH)[0]
[CLAUDE] = load_file(bundled("m-claude", "3af9b1a7"), lenient=True)


def test_the_measured_size_is_close_where_the_truth_is_known_and_the_old_rule_was_not() -> None:
    # Prompts that keep the first messages and a tail: their true size comes from recorded counts.
    loaded = load_inputs(["m-claude", "claude-code-log", "mini-swe-agent-pr816"], lenient=True)
    rows = [row for session in loaded.sessions for row in kept_tail_errors(session)]
    table = error_table(rows)
    whole = table.loc["all"]
    assert whole["pairs"] > 500
    assert whole["measured_median_abs_pct"] < 3 and whole["measured_p90_abs_pct"] < 12
    assert whole["anchored_median_abs_pct"] > 3 * whole["measured_median_abs_pct"]
    # The history's size after a production compaction, from the ratio measured then, does not drift.
    assert whole["drift_now_median_abs_pct"] < 4 and abs(whole["drift_now_median_pct"]) < 2
    assert whole["drift_before_median_pct"] < -5  # the plain estimate runs low, more so as the session grows


def test_every_replayed_size_is_the_one_definition() -> None:
    config = Setting("s", "summarize", trigger=Trigger(fraction=0.6))
    windows = ContextWindows(overrides={"": 40_000})
    replayed = replay(CLAUDE, config, windows)
    calls = calls_frame(replayed.calls)
    meter = Meter(CLAUDE, "hybrid")
    base = uncompacted(meter, 40_000)
    fixed = meter.local.prompt_overhead + meter.offset
    assert len(replayed.compactions) >= 3
    for row, context in zip(replayed.compactions, replayed.compacted):
        at = calls.iloc[row.call]
        estimate = sum(meter.message_tokens(m) for m in context)
        # The call after a compaction is the compacted context at that call's ratio, but for its
        # summary, which the Claude fit sizes on its own text...
        written = meter.written(context)
        [summary] = [m for m in context if is_summary(m)]
        assert written.tokens == meter.family_fit.message_tokens(summary, meter.framing, meter.cache) > 0
        assert written.estimate == meter.message_tokens(summary)
        size = measured_size(fixed, estimate, base.ratios[row.call], written)
        assert at["context_tokens"] == size == row.event.tokens_after
        assert size == round(fixed + written.tokens + (estimate - written.estimate) * base.ratios[row.call])
        # ...and its tokens_before the uncompacted context measured the same way.
        assert row.event.tokens_before > row.event.tokens_after
    untouched = calls[calls["compactions_so_far"] == 0]
    assert (untouched["context_tokens"] == untouched["recorded_prompt_tokens"]).all()


def test_the_hybrid_trigger_sees_the_measured_size_after_a_compaction() -> None:
    # The engine used to trigger on its own estimate after a compaction while the rows showed the
    # anchored size: half the calls after a compaction sat above the trigger line uncompacted, and
    # emergencies followed. Now a call above the line goes uncompacted while the loop guard holds
    # (after an attempt that changed nothing, until a compaction works again), or by the hybrid's
    # own lag: it adds the plain estimate of the messages since the last call, as a real agent does.
    # With the kept tail budgeted in measured tokens (issue 27 §3) compactions no longer follow one
    # another at every call, and one large tool result after a compaction lags by up to 8.6% (9 of
    # 643 calls after a compaction lag at all; the largest: 21037e11 call 127).
    line, after, lagging = 0.8 * 64_000, 0, 0
    for session in load_inputs(["m-claude"], lenient=True).sessions:
        replayed = replay(
            session, Setting("s", "summarize", trigger=Trigger(fraction=0.8)), ContextWindows(overrides={"": 64_000})
        )
        stalls = {row.call for row in replayed.compactions if row.event.stalled}  # a compaction that removed under 5%
        guard_holds = False
        for row in calls_frame(replayed.calls).itertuples():
            guard_holds = (guard_holds and not row.compacted_before) or row.noop_before > 0 or row.call in stalls
            if row.compactions_so_far and not row.compacted_before:
                after += 1
                if row.context_tokens >= line and not guard_holds:
                    lagging += 1
                    assert row.context_tokens < 1.1 * line, (session.id, row.call)
    assert after > 300 and lagging <= 0.02 * after


def test_a_compaction_that_changes_nothing_is_no_compaction() -> None:
    # opencode's pruning protects the newest 40,000 tokens of tool output: in this session's first
    # 60 messages there is nothing older to clear.
    meter = Meter(MINI, "hybrid")
    engine = Engine(get_strategy("prune"), 20_000, meter, meter.count, Trigger(fraction=0.1))
    context = Context(MINI.messages[:60])
    after, event = engine.before_call(context)
    assert after is context and not event.changed and not event.compacted
    assert event.tokens_before == event.tokens_after and event.reduction == 0 and event.stalled
    assert engine.before_call(context) == (context, None)  # the guard holds
    # In a replay: not a compaction row, not scored, counted.
    replayed = replay(MINI, Setting("p", "prune", trigger=Trigger(fraction=0.3)), ContextWindows(overrides={"": 20_000}))
    summary = session_summary(calls_frame(replayed.calls), compactions_frame(replayed.compactions)).iloc[0]
    assert replayed.compactions == [] and summary["compactions"] == 0 and summary["noop_compactions"] >= 1
    assert summary["removed_share"] == 0


def test_prune_on_the_bundled_sessions_rows_only_real_compactions() -> None:
    loaded = load_inputs(["m-claude"], lenient=True)
    windows = ContextWindows(overrides={"": 64_000})
    noops = 0
    for session in loaded.sessions:
        replayed = replay(session, Setting("prune", "prune"), windows)
        noops += sum(replayed.calls["noop_before"])
        for row in replayed.compactions:
            assert row.event.failed is None and row.event.tokens_after < row.event.tokens_before
    assert noops > 0


def test_compact_prints_one_set_of_numbers_when_nothing_changes(capsys) -> None:
    assert main(["compact", str(MINI_PATH), "--strategy", "prune", "--at", "40"]) == 0
    out = capsys.readouterr().out
    assert "no compaction: prune changed nothing" in out and "% removed" not in out and "→" not in out


def test_measured_ratios_are_the_recorded_over_the_estimated_history() -> None:
    meter = Meter(MINI, "hybrid")
    base = uncompacted(meter, 10**9)
    fixed = meter.local.prompt_overhead + meter.offset
    history = np.array(base.history_tokens)[base.positions]
    recorded = np.array(base.columns["recorded_prompt_tokens"])
    assert np.allclose(base.ratios, (recorded - fixed) / history)
    assert 0.5 < np.median(base.ratios) < 2


def test_the_consistency_check_reads_a_run_as_it_is_stored(tmp_path) -> None:
    # `python -m tests.scripts.prompt_size_check --run DIR` reads the run's committed rows (Parquet parts).
    from tests.scripts.prompt_size_check import run_consistency

    out = tmp_path / "run"
    assert (
        main(
            [
                "run",
                "--dataset",
                str(bundled("m-claude", "21037e11")),
                "--strategy",
                "summarize",
                "prune",
                "--window",
                "64000",
                "--lenient",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    found = run_consistency(out)
    replayed = replay(
        load_file(bundled("m-claude", "21037e11"), lenient=True)[0],
        Setting("summarize", "summarize"),
        ContextWindows(overrides={"": 64_000}),
    )
    summarize_compactions = len(replayed.compactions)
    assert found["compactions"] >= summarize_compactions > 0
    assert found["noop_attempts"] >= sum(replayed.calls["noop_before"])
    assert set(found["over_window_share_by_config"]) == {"summarize", "prune"}


def test_the_size_kernel_gives_the_same_sizes_over_arrays_as_call_by_call() -> None:
    # The uncompacted replay sizes call by call, the coasting fast path a stretch of calls at once:
    # both call the one kernel, and on a real session its array form equals the per-call one.
    for estimator in ("hybrid", "chars/4"):
        base = uncompacted(Meter(CLAUDE, estimator), 200_000)
        arrays = base.arrays
        history = arrays["history"][arrays["positions"]]
        overhead = base.meter.local.prompt_overhead + base.meter.offset
        sizes = measured_size(overhead, history, arrays["ratios"])
        assert sizes.tolist() == [measured_size(overhead, h, r) for h, r in zip(history.tolist(), base.ratios)]
        if estimator == "chars/4":  # without usage the trigger counts on its own
            own = own_estimate(history, base.meter.local.prompt_overhead, base.meter.offset)
            assert own.astype(int).tolist() == base.trigger_tokens
    assert len(base.ratios) > 100
