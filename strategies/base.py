"""Helpers for writing a strategy: its settings, as `compactlab strategies` lists them.

The contract a strategy implements is `compactlab.contract`; what a message is (summaries, pinned
messages, cut points) is `compactlab.sessions.messages`.

A setting may name other strategies (a pipeline's stages, an archive's inner strategy, a summary's
fallback): `strategy_setting` marks it, and the registry builds the strategies it names when it
builds the strategy (`compactlab.strategies.registry.resolved`), so that no strategy imports the
registry, which imports every strategy.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

from compactlab.contract import Strategy

T = TypeVar("T")


@dataclass(frozen=True)
class Parameter:
    """A strategy setting as `compactlab strategies` lists it."""

    name: str
    default: object
    help: str = ""


def parameters_of(strategy: Any) -> list[Parameter]:
    """The settings of a strategy (a dataclass): every field but its name."""
    return [
        Parameter(f.name, getattr(strategy, f.name), f.metadata.get("help", "")) for f in fields(strategy) if f.name != "name"
    ]


def setting(default: T, help: str) -> T:
    """A dataclass field with a description that `compactlab strategies` shows (typed as its default,
    as `dataclasses.field` is)."""
    return field(default=default, metadata={"help": help})


def strategy_setting(default: T, help: str, besides: tuple[str, ...] = ()) -> T:
    """A setting naming other strategies (a name, a strategy, or a tuple of them), built when the
    strategy is built; `besides`: the values of it that name no strategy (such as "" for none)."""
    return field(default=default, metadata={"help": help, "names_strategies": True, "besides": besides})


class StrategyName(str):
    """A setting's name of another strategy, carrying the strategy it names once the registry built it.

    It is the name everywhere else (equal to it, recorded, printed and compared as it), so a built
    strategy's settings are the settings it was given."""

    strategy: Strategy

    def __new__(cls, name: str, strategy: Strategy) -> StrategyName:
        made = super().__new__(cls, name)
        made.strategy = strategy
        return made

    def __reduce__(self) -> tuple[type[StrategyName], tuple[str, Strategy]]:
        return (StrategyName, (str(self), self.strategy))


def named_strategy(value: str | Strategy, where: str) -> Strategy:
    """The strategy a setting holds or names; a name the registry never built is an error saying how to build it."""
    if isinstance(value, StrategyName):
        return value.strategy
    if isinstance(value, str):
        raise TypeError(
            f"{where} names the strategy {value!r}, which was never built: make the strategy with "
            "compactlab.get_strategy, or pass it through compactlab.strategies.registry.resolved, "
            "which build the strategies a setting names"
        )
    return value
