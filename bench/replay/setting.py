"""One setting a replay runs: a strategy or preset with its settings, trigger and estimator."""

from __future__ import annotations

from dataclasses import dataclass

from compactlab.contract import Harness, Trigger
from compactlab.tokens.context_windows import ContextWindows


@dataclass(frozen=True)
class Setting:
    """One setting to replay: a strategy (or preset) with its settings, trigger and estimator."""

    label: str
    strategy: str
    settings: tuple[tuple[str, object], ...] = ()
    trigger: Trigger | None = None  # None: the preset's trigger, else the engine default (0.8)
    estimator: str | None = None  # None: the preset's estimator, else the run's (hybrid)
    # Compact only where the production agent did (the `recorded` strategy's points), with this
    # strategy: what it would have made of the real agent's context there.
    at_real_compactions: bool = False


DEFAULT_ESTIMATOR = "hybrid"


def trigger_of(strategy: object, trigger: Trigger | None = None) -> Trigger:
    """The trigger a setting compacts by: its own (`trigger`), else its preset's, else the engine's default."""
    return trigger or getattr(strategy, "trigger", None) or Trigger()


def estimator_of(strategy: object, estimator: str | None = None, default: str = DEFAULT_ESTIMATOR) -> str:
    """The estimator a setting counts with: its own (`estimator`), else its preset's, else `default` (the run's)."""
    return estimator or getattr(strategy, "estimator", None) or default


def harness_of(strategy: object) -> Harness:
    """The engine's policies around a setting: its preset's (`Preset.harness`), else the defaults."""
    return getattr(strategy, "harness", None) or Harness()


def window_and_trigger(
    strategy: object,
    trigger: Trigger | None,
    windows: ContextWindows,
    model: str,
    recorded: int | None,
    version: str | None = None,
) -> tuple[int, Trigger]:
    """The window a setting replays `model` at and the trigger it compacts by there.

    The run's windows may simulate one window for every model (`--window`). A preset whose harness
    says "real" runs at the model's real window instead; one that says "scaled" (the default) runs
    at the simulated window with its own trigger's absolute sizes scaled by simulated ÷ real, so
    that a reserve sized for a 200,000-token window keeps its share of a 64,000-token one; "as-is" runs
    at the simulated window with the trigger as written (the engine's constant reserve). A trigger
    the user set (`trigger`) is taken as written. Either is first made the model's, as run by the
    agent `version` the session records (`Trigger.for_session`)."""
    windows = windows.with_table(getattr(strategy, "context_windows", ()), getattr(strategy, "unknown_window", None))
    window = windows.lookup(model, recorded).tokens
    real = windows.without_simulated().lookup(model, recorded).tokens
    harness = harness_of(strategy)
    if trigger is not None:
        return window, trigger.for_session(model, version)
    own = trigger_of(strategy).for_session(model, version)
    if window == real:
        return window, own
    if harness.window == "real":
        return real, own
    if harness.window == "as-is":
        return window, own
    return window, own.scaled(window / real)
