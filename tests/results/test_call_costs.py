"""Each call's cost split and its prompt-cache figures (`compactlab.results.call_costs`) on real replays."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from compactlab.replay.replay import Setting, replay
from compactlab.results.call_costs import PARTS, cache_telemetry
from compactlab.results.metrics import calls_frame
from compactlab.sessions.importers import load_file
from compactlab.tokens.context_windows import ContextWindows
from tests.conftest import bundled

WINDOWS = ContextWindows(overrides={"": 40_000})  # small enough that the session compacts several times


@pytest.fixture(scope="module")
def session():
    [found] = load_file(bundled("m-claude", "21e3c711"), lenient=True)
    return found


def _frame(session, strategy: str) -> pd.DataFrame:
    return calls_frame(replay(session, Setting(strategy, strategy), WINDOWS).calls)


@pytest.mark.parametrize("strategy", ["observation-masking", "summarize", "truncate"])
def test_the_parts_add_up_to_the_bill_with_and_without_compaction(session, strategy):
    frame = _frame(session, strategy)
    assert frame["compacted_before"].any()
    for total, prefix in (("cost_context", "cost"), ("cost_full", "cost_full")):
        parts = sum(frame[f"{prefix}_{kind}"] for kind in PARTS)
        np.testing.assert_allclose(parts, frame[total], rtol=1e-12)
    # Claude: every new prompt token is a cache write, none is billed at the full input price.
    assert (frame["cost_input"] == 0).all() and (frame["cost_cache_write"] > 0).any()


def test_an_in_place_edit_breaks_the_prefix_at_each_compaction(session):
    frame = _frame(session, "observation-masking")
    after = frame[frame["compacted_before"] & ~frame["cache_expired"]]
    assert len(after) >= 2
    previous = frame["context_tokens"].shift(1)
    assert after["prefix_break"].all()
    expected = (previous[after.index] - after["prefix_tokens"]).clip(lower=0)
    assert (after["invalidated_tokens"] == expected).all() and (expected > 0).all()
    # Masking keeps the head: some of the previous prompt is still read from the cache.
    assert (after["prefix_tokens"] > 0).all()
    # Between compactions the prefix breaks only where the recorded prompt itself shrank (an edit the agent made).
    quiet = frame[~frame["compacted_before"] & ~frame["cache_expired"] & (frame["call"] > 0)]
    assert (~quiet["prefix_break"] | (quiet["context_tokens"] < previous[quiet.index])).all()


def test_what_a_compaction_drops_was_written_and_never_read(session):
    frame = _frame(session, "summarize")
    before = frame.index[frame["compacted_before"].shift(-1, fill_value=False)]  # the call right before each compaction
    assert len(before)
    unread = frame.loc[before, "unread_write_tokens"]
    written = frame.loc[before, "cache_write_tokens"]
    assert (unread > 0).all() and (unread <= written).all()
    # The session's last call has no next call: nothing counted as unread there.
    assert frame["unread_write_tokens"].iloc[-1] == 0
    # A pause past the cache's lifetime loses the previous prompt to time, not to the strategy.
    expired = frame[frame["cache_expired"]]
    assert len(expired) and (expired["expired_tokens"] > 0).all() and not expired["prefix_break"].any()
    assert (frame["invalidation_cost"] >= 0).all() and (frame.loc[before, "unread_write_cost"] > 0).all()


def test_a_row_without_its_previous_call_beside_it_counts_nothing_lost(session):
    frame = _frame(session, "summarize")
    at = int(frame.index[frame["prefix_break"]][0])  # a call whose prefix broke
    alone = cache_telemetry(frame.iloc[[at]].reset_index(drop=True))  # a frame of that row only
    assert alone["invalidated_tokens"][0] == 0 and not alone["prefix_break"][0] and alone["unread_write_tokens"][0] == 0
    # Another replay's rows next to it are no neighbours either, even when the call numbers follow.
    other = frame.iloc[[at - 1, at]].assign(setting=["other", frame["setting"].iloc[at]]).reset_index(drop=True)
    assert not cache_telemetry(other)["prefix_break"][1]
    assert cache_telemetry(frame.iloc[[at - 1, at]].reset_index(drop=True))["prefix_break"][1]
