"""The trigger's cache-expiry rule (`Trigger.on_cache_expiry`): compact from a lower share of the window
at a call made after the prompt cache expired anyway, on a real session with long pauses."""

from __future__ import annotations

import pandas as pd
import pytest

from compactlab.contract import Trigger
from compactlab.replay.replay import Setting, replay, replay_plain
from compactlab.runs.run_config import load_config
from compactlab.sessions.importers import load_file
from compactlab.tokens.context_windows import ContextWindows
from tests.conftest import bundled

WINDOWS = ContextWindows(overrides={"": 100_000})


@pytest.fixture(scope="module")
def session():
    [found] = load_file(bundled("m-claude", "21e3c711"), lenient=True)  # pauses of 22 and 5 minutes
    return found


def _setting(expiry: float | None, margin: float = 0.0) -> Setting:
    return Setting(
        "truncate", "truncate", trigger=Trigger(fraction=0.8, target=0.2, on_cache_expiry=expiry, cache_margin_seconds=margin)
    )


def test_it_compacts_at_the_calls_after_a_pause_and_only_there(session):
    without = replay(session, _setting(None), WINDOWS)
    with_rule = replay(session, _setting(0.4), WINDOWS)
    expired = [i for i, cold in enumerate(with_rule.calls["cache_expired"]) if cold]
    assert expired
    rule_compactions = [row for row in with_rule.compactions if row.event.reason == "cache_expired"]
    assert rule_compactions, "the rule never fired"
    for row in rule_compactions:
        assert row.call in expired
        assert 0.4 * 100_000 <= row.event.tokens_before < 0.8 * 100_000  # below the threshold, above the rule's share
    assert not [row for row in without.compactions if row.event.reason == "cache_expired"]
    # Compacting where the cache is lost anyway writes no more than without (the prompt is rewritten there in both).
    calls = pd.DataFrame(with_rule.calls)
    at = calls.loc[[row.call for row in rule_compactions]]
    assert (at["prefix_tokens"] <= at["context_tokens"]).all()


def test_a_margin_counts_pauses_just_short_of_the_lifetime(session):
    calls = list(session.calls)
    pauses = [b.timestamp - a.timestamp for a, b in zip(calls, calls[1:])]
    near = [i + 1 for i, pause in enumerate(pauses) if 180 < pause <= 300]
    assert near, "the session has a pause between 180 s and the 300 s lifetime"
    strict = replay(session, _setting(0.3), WINDOWS)
    lenient = replay(session, _setting(0.3, margin=120), WINDOWS)
    fired = {row.call for row in lenient.compactions if row.event.reason == "cache_expired"}
    assert fired - {row.call for row in strict.compactions if row.event.reason == "cache_expired"} & set(near)


@pytest.mark.parametrize("expiry", [0.3, 0.5])
def test_the_fast_path_equals_the_plain_replay(session, expiry):
    setting = _setting(expiry, margin=60)
    fast, plain = replay(session, setting, WINDOWS), replay_plain(session, setting, WINDOWS)
    assert fast.calls == plain.calls
    assert [row.values() for row in fast.compactions] == [row.values() for row in plain.compactions]


@pytest.mark.parametrize(
    ("trigger", "named"), [("on_cache_expiry = 1.5", "on_cache_expiry"), ("cache_margin_seconds = -1", "cache_margin_seconds")]
)
def test_a_value_out_of_range_is_refused_naming_it(tmp_path, trigger, named):
    path = tmp_path / "run.toml"
    path.write_text(f'[[strategy]]\nname = "summarize"\ntrigger = {{ {trigger} }}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=named):
        load_config(path)


def test_a_sweep_grid_sweeps_the_rule_like_a_threshold():
    from compactlab.runs.sweep import grid

    settings = grid(["truncate"], [0.8], cache_expiry=(None, 0.5, 0.6))
    assert [s.label for s in settings] == ["truncate@0.8", "truncate@0.8/expired@0.5", "truncate@0.8/expired@0.6"]
    assert [s.trigger.on_cache_expiry for s in settings] == [None, 0.5, 0.6]
    with pytest.raises(ValueError, match="--on-cache-expiry: 1.2 out of range"):
        grid(["truncate"], [0.8], cache_expiry=(1.2,))
