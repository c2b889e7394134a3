"""Helpers for writing a strategy: its settings, as `compactlab strategies` lists them.

The contract a strategy implements is `compactlab.contract`; what a message is (summaries, pinned
messages, cut points) is `compactlab.transcripts.messages`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

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
