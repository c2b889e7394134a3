"""Settings that differ only in their trigger share each compaction of the same context."""

from __future__ import annotations

from dataclasses import replace

import pytest

from compactlab.replay.replay import replay
from compactlab.replay.shared_compactions import SharedCompactions, shared_by_setting
from compactlab.runs.run_config import RunConfig, windows_of
from compactlab.runs.sweep import grid
from compactlab.sessions.importers import load_file
from compactlab.strategies.registry import get_strategy
from compactlab.tokens.metering import Meter
from tests.conftest import bundled
from tests.scripts.speed_sweep import THRESHOLDS

# Claude Code sessions whose context jumps past several thresholds at one call (with the loop guard's
# retry, summarize's settings meet again at the same context in the JSSoundRecorder session).
SESSIONS = {
    "summarize": "-Users-dain-workspace-JSSoundRecorder__7acd37a8",
    "observation-masking": "-Users-dain-workspace-coderabbit-review-helper__cb2e607c",
}


@pytest.mark.parametrize("name", list(SESSIONS))
def test_shared_compactions_change_no_row_and_are_made_once(name: str) -> None:
    [session] = load_file(bundled("claude-code-log", SESSIONS[name]))
    settings = [replace(c, estimator="tiktoken-o200k") for c in grid([name], THRESHOLDS, (16_000,))]
    windows = windows_of(RunConfig())  # a run's default: every model replayed with a 64k window
    alone = [replay(session, c, windows) for c in settings]
    made: list[object] = []

    class Counted:  # the strategy, counting the compactions it is asked to make
        def __init__(self, strategy):
            self.strategy = strategy
            self.name = strategy.name

        def compact(self, context, request):
            made.append(context)
            return self.strategy.compact(context, request)

        def __eq__(self, other):
            return isinstance(other, Counted) and other.strategy == self.strategy

    instances = {c.label: Counted(get_strategy(c.strategy, **dict(c.settings))) for c in settings}
    sharing = shared_by_setting(instances)
    assert len({id(s) for s in sharing.values()}) == 1  # equal strategies: one for all the thresholds
    meter = Meter(session, "tiktoken-o200k")
    shared = [replay(session, c, windows, meter=meter, strategy=sharing[c.label]) for c in settings]
    assert [r.calls for r in shared] == [r.calls for r in alone]
    assert [r.compactions for r in shared] == [r.compactions for r in alone]
    compactions = sum(len(r.compactions) for r in alone)
    assert len(made) < compactions  # some contexts were reached by several settings, and compacted once


def test_strategies_with_other_settings_do_not_share() -> None:
    sharing = shared_by_setting(
        {"a": get_strategy("summarize"), "b": get_strategy("summarize", keep_recent_tokens=8000), "c": get_strategy("summarize")}
    )
    assert sharing["a"] is sharing["c"] and sharing["a"] is not sharing["b"]
    assert isinstance(sharing["a"], SharedCompactions) and sharing["a"].name == "summarize"
