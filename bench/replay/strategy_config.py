"""One setting a replay runs: a strategy or preset with its settings, trigger and estimator."""

from __future__ import annotations

from dataclasses import dataclass

from compactlab.contract import Trigger


@dataclass(frozen=True)
class StrategyConfig:
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
