"""The extractive strategy: summarize with the deterministic extractive summarizer
(`compactlab.strategies.extractive_summarizer`), and truncate if that is not enough (seed 004)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from compactlab.strategies.base import setting
from compactlab.strategies.summarize import Summarize


@dataclass(frozen=True)
class Extractive(Summarize):
    """Summarize with the deterministic extractive summarizer; truncate if that is not enough (seed 004)."""

    name: ClassVar[str] = "extractive"
    source: ClassVar[str] = "compactlab's offline default; truncate fallback from seed 004 (Opal)"
    summarizer: str = setting("extractive", "always the extractive summarizer")
