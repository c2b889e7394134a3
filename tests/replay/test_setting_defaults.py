"""A setting's trigger and estimator, worked out by one rule wherever they are needed: the replay,
the run, `compactlab compact` and the same-by-construction rule (`compactlab.replay.setting`:
`trigger_of`, `estimator_of`).

The setting's own value wins, then the one its strategy carries (a preset's design), then the
default: the engine's trigger; the run's estimator (hybrid unless the run names another). A user
strategy that declares the attributes but leaves them None carries none, everywhere alike (the run
and `compact` used to stop on it with an unknown estimator None).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from compactlab.contract import Trigger
from compactlab.replay.setting import Setting, estimator_of, trigger_of, window_and_trigger
from compactlab.results.same_by_construction import construction_key
from compactlab.runs import runs
from compactlab.runs.preview import compact
from compactlab.runs.run_config import RunConfig
from compactlab.sessions.importers import load_file
from compactlab.strategies.registry import get_strategy
from compactlab.tokens.context_windows import ContextWindows
from tests.conftest import bundled

SESSION = bundled("mini-swe-agent-pr816", "deepseek_chat_dev_pvlib__pvlib-python-1707")
UNSET = '''
from dataclasses import dataclass

from compactlab.strategies.truncate import Truncate


@dataclass(frozen=True)
class Unset(Truncate):
    """Truncate, declaring a trigger and an estimator of its own but leaving both unset."""

    trigger: object = None
    estimator: object = None
'''


@pytest.fixture(scope="module")
def unset(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("unset") / "unset.py"
    path.write_text(UNSET, encoding="utf-8")
    return f"{path}:Unset"


def test_the_setting_then_the_preset_then_the_default() -> None:
    design = get_strategy("seed-003")  # a preset: two trigger levels, words as its estimator
    assert (trigger_of(design), estimator_of(design)) == (design.trigger, "words") and design.trigger != Trigger()
    assert (trigger_of(design, Trigger(fraction=0.5)), estimator_of(design, "chars/4")) == (Trigger(fraction=0.5), "chars/4")
    truncate = get_strategy("truncate")
    assert (trigger_of(truncate), estimator_of(truncate), estimator_of(truncate, None, "words")) == (Trigger(), "hybrid", "words")


def test_a_strategy_leaving_its_estimator_unset_counts_with_the_runs_like_one_without(unset: str, tmp_path: Path) -> None:
    strategies = (
        Setting("unset", unset),
        Setting("truncate-chars", "truncate", estimator="chars/4"),
        Setting("truncate-hybrid", "truncate", estimator="hybrid"),
    )
    runs.run(RunConfig(datasets=(str(SESSION),), strategies=strategies, estimator="chars/4", window=32_000), tmp_path / "run")
    written = {s["label"]: s["estimator"] for s in json.loads((tmp_path / "run" / "config.json").read_text())["strategies"]}
    assert written["unset"] == "chars/4"  # the run's estimator, filled in as for a strategy without one
    rows = pd.read_csv(tmp_path / "run" / "sessions.csv").set_index("setting").drop(columns="session")
    assert rows.loc["unset"].fillna(0).equals(rows.loc["truncate-chars"].fillna(0))
    assert (
        rows.loc["unset", "compactions"] > 0
        and rows.loc["unset", "billed_context"] != rows.loc["truncate-hybrid", "billed_context"]
    )


def test_compact_and_the_same_by_construction_rule_read_the_same_defaults(unset: str) -> None:
    [session], windows = load_file(SESSION), ContextWindows(overrides={"": 32_000})
    shown, plain = compact(session, unset, windows=windows), compact(session, "truncate", windows=windows)
    assert (shown.trigger, shown.estimator) == (Trigger(), "hybrid") == (plain.trigger, plain.estimator)
    assert shown.call == plain.call and shown.after.messages == plain.after.messages
    design = compact(session, "seed-003", windows=windows)
    assert (design.trigger, design.estimator) == (get_strategy("seed-003").trigger, "words")
    # The rule that groups identical settings keys them by the trigger and estimator the replay uses.
    # (The replay scales the trigger's reserve to the simulated window, alike for every pi setting.)
    pi, preset = compact(session, "pi", windows=windows), get_strategy("pi")
    scaled = window_and_trigger(preset, None, windows, session.calls[0].model, session.context_window)[1]
    assert construction_key(Setting("pi", "pi"))[1:3] == (preset.trigger, pi.estimator) and scaled == pi.trigger
    chosen = Setting("pi-50", "pi", trigger=Trigger(fraction=0.5), estimator="words")
    assert construction_key(chosen)[1:3] == (Trigger(fraction=0.5), "words")
