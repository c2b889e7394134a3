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
    estimator: str | None = None  # None: the preset's estimator, else hybrid
