"""Per-model-family calibration: a line fitted on a training split of transcripts.

Claude, Gemini and DeepSeek do not publish their tokenizers, so a local count is off by a
family-specific factor. Fitting `tokens ≈ a·estimate + b` on some transcripts and applying it to
the others gives honest numbers for them. The split is by transcript, never by call: calls of one
session are strongly correlated, and splitting them would leak the answer into the fit.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from bench.estimators import Calibrated

FAMILIES = (
    ("claude", re.compile(r"claude|anthropic")),
    ("gpt", re.compile(r"gpt|^o\d|codex|openai")),
    ("gemini", re.compile(r"gemini")),
    ("deepseek", re.compile(r"deepseek")),
    ("qwen", re.compile(r"qwen")),
    ("glm", re.compile(r"glm")),
)


def model_family(model: str) -> str:
    """The tokenizer family of a model name: claude, gpt, gemini, deepseek, qwen, glm or other."""
    name = model.lower().rsplit("/", 1)[-1]
    for family, pattern in FAMILIES:
        if pattern.search(name):
            return family
    return "other"


def is_training(transcript_id: str, train_fraction: float = 0.5) -> bool:
    """A stable split: the same transcript is always on the same side, whatever else is loaded."""
    digest = hashlib.sha256(transcript_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < train_fraction


@dataclass(frozen=True)
class Fit:
    family: str
    base: str
    slope: float
    intercept: float
    train_calls: int
    train_transcripts: int

    def estimator(self) -> Calibrated:
        return Calibrated(base=self.base, slope=self.slope, intercept=self.intercept)


def fit_families(train: pd.DataFrame, base: str) -> dict[str, Fit]:
    """Least-squares lines per family from training rows (`family`, `estimate`, `true_tokens`, `transcript`).

    A family needs at least two transcripts and ten calls to be fitted; otherwise it is left out
    and its calls get no calibrated estimate (reported, not guessed).
    """
    fits: dict[str, Fit] = {}
    for family, rows in train.groupby("family"):
        transcripts = rows["transcript"].nunique()
        if transcripts < 2 or len(rows) < 10 or rows["estimate"].nunique() < 2:
            continue
        slope, intercept = np.polyfit(rows["estimate"].to_numpy(float), rows["true_tokens"].to_numpy(float), 1)
        fits[str(family)] = Fit(str(family), base, float(slope), float(intercept), len(rows), transcripts)
    return fits
