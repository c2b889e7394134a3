"""Helpers for writing a strategy: its settings, as `compactlab strategies` lists them.

The contract a strategy implements is `compactlab.contract`; what a message is (summaries, pinned
messages, cut points) is `compactlab.transcripts.messages`.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Parameter:
    """A strategy setting as `compactlab strategies` lists it."""

    name: str
    default: object
    help: str = ""


def parameters_of(strategy: object) -> list[Parameter]:
    from dataclasses import fields

    return [
        Parameter(f.name, getattr(strategy, f.name), f.metadata.get("help", "")) for f in fields(strategy) if f.name != "name"
    ]


def setting(default: object, help: str) -> object:
    """A dataclass field with a description that `compactlab strategies` shows."""
    return field(default=default, metadata={"help": help})
