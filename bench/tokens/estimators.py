"""Token estimators: how an agent guesses the size of its prompt before sending it.

An estimator is a frozen dataclass whose fields are its settings. Local estimators count a prompt
as `prompt_overhead` plus the sum of `message_tokens` over its messages, so a replay can keep
running sums and count each message once. `hybrid` starts from the provider's last reported
count; `calibrated` rescales another estimator with a fitted line. `get_estimator(name)` looks one
up by name, with "did you mean" on typos.

| name | what | used by |
|---|---|---|
| chars/4 | characters ÷ 4 | opencode, pi, seeds 002 and 004 |
| chars/3.5 | characters ÷ 3.5 | seed 000 |
| words | 0.75/English word, 0.5/CJK char, 0.25/special char, +50 | seed 003 (glm-cli) |
| tiktoken-cl100k, tiktoken-o200k | OpenAI's real tokenizers + OpenAI chat framing | exact for GPT-4/4o-era models |
| hybrid | last reported prompt+output tokens + chars/4 of newer messages | seed 004, pi, opencode, Codex |
| hybrid-chars/3.5 | the same with chars/3.5 for the newer messages | seed 000 |
| usage | the last reported prompt+output tokens alone (chars/4 with none reported) | opencode |
| pi-chars/4, hybrid-pi | pi's own estimateTokens: ceil(chars/4) per message (`compactlab.tokens.pi_estimate`), alone or after the last usage | pi |
| calibrated | a·(tiktoken-o200k) + b, the fit shipped per model family (bench/tokens/calibration_fit.json) | private tokenizers (Claude, Gemini, DeepSeek) |
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from compactlab.sessions.messages import is_summary
from compactlab.sessions.model import Message
from compactlab.tokens.framing import OPENAI_REPLY_PRIMING, OPENAI_TOKENS_PER_MESSAGE, Framing
from compactlab.tokens.pi_estimate import PiEstimate
from compactlab.tokens.tokenizers import TokenCache


class LocalEstimator(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def prompt_overhead(self) -> float: ...

    def message_tokens(self, message: Message, framing: Framing, cache: TokenCache) -> float: ...


@dataclass(frozen=True)
class KnownUsage:
    """What the provider reported for a prefix: `tokens` covers `messages[:upto]`."""

    upto: int
    tokens: int


def estimate(
    estimator: LocalEstimator | Hybrid | Calibrated,
    messages: Sequence[Message],
    framing: Framing,
    cache: TokenCache,
    known: KnownUsage | None = None,
) -> int:
    """The estimated prompt tokens of `messages` (the one entry point the engine needs)."""
    if isinstance(estimator, Hybrid):
        return round(estimator.estimate(messages, framing, cache, known))
    total = estimator.prompt_overhead + sum(estimator.message_tokens(m, framing, cache) for m in messages)
    return round(total)


@dataclass(frozen=True)
class CharsPerToken:
    chars_per_token: float = 4.0
    prompt_overhead: float = 0.0

    @property
    def name(self) -> str:
        return f"chars/{self.chars_per_token:g}"

    def message_tokens(self, message: Message, framing: Framing, cache: TokenCache) -> float:
        return sum(len(t) for t in framing.texts(message)) / self.chars_per_token + framing.image_tokens(message)


_WORD = re.compile(r"[A-Za-z0-9_]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_SPECIAL = re.compile(r"[^\sA-Za-z0-9_\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


@dataclass(frozen=True)
class WordHeuristic:
    """Seed 003 (glm-cli): English words, CJK characters and special characters weighted apart."""

    per_word: float = 0.75
    per_cjk: float = 0.5
    per_special: float = 0.25
    prompt_overhead: float = 50.0
    name: str = "words"

    def message_tokens(self, message: Message, framing: Framing, cache: TokenCache) -> float:
        total = 0.0
        for text in framing.texts(message):
            total += self.per_word * len(_WORD.findall(text))
            total += self.per_cjk * len(_CJK.findall(text))
            total += self.per_special * len(_SPECIAL.findall(text))
        return total + framing.image_tokens(message)


@dataclass(frozen=True)
class Tiktoken:
    encoding: str = "o200k_base"
    prompt_overhead: float = OPENAI_REPLY_PRIMING

    @property
    def name(self) -> str:
        return "tiktoken-" + self.encoding.removesuffix("_base")

    def message_tokens(self, message: Message, framing: Framing, cache: TokenCache) -> float:
        # A summary is assembled from lines of the session and of the summary before it: counted
        # block by block, it costs only its new lines (a sweep writes thousands of summaries).
        count = cache.count_blocks if is_summary(message) else cache.count
        text_tokens = sum(count(self.encoding, t) for t in framing.texts(message))
        return OPENAI_TOKENS_PER_MESSAGE + text_tokens + framing.image_tokens(message)


@dataclass(frozen=True)
class Hybrid:
    """Provider's last count plus a local estimate of what was added since (seeds 000 and 004, pi).

    `tokens` of the known usage is the last call's prompt plus its output (the reply is part of
    the next prompt). With no known usage (first call, or right after a compaction) it falls back
    to the base estimator over the whole prompt. `newer` off: the messages since are not added, the
    last usage alone is the count, as opencode's isOverflow reads the last reply's tokens (`usage`).
    """

    base: str = "chars/4"
    name: str = "hybrid"
    newer: bool = True

    def estimate(self, messages: Sequence[Message], framing: Framing, cache: TokenCache, known: KnownUsage | None) -> float:
        base = local_estimator(self.base)
        if known is None:
            return estimate(base, messages, framing, cache)
        since = messages[known.upto :] if self.newer else ()
        return known.tokens + sum(base.message_tokens(m, framing, cache) for m in since)


@dataclass(frozen=True)
class Calibrated:
    """tokens ≈ slope · base + intercept, a line fitted per model family (see compactlab.tokens.calibration).

    A local estimator: each message costs `slope` times its base estimate and the prompt's overhead
    is the base overhead scaled plus `intercept`, so the line applies to whatever a local
    estimator counts and nothing else (a per-session constant measured in provider tokens is
    added after it, unscaled). The registered `calibrated` is the unfitted identity (`family`
    None); a `Meter` replaces it with the fit shipped for the session's model family.
    """

    base: str = "tiktoken-o200k"
    slope: float = 1.0
    intercept: float = 0.0
    name: str = "calibrated"
    family: str | None = None

    @property
    def prompt_overhead(self) -> float:
        return self.slope * local_estimator(self.base).prompt_overhead + self.intercept

    def message_tokens(self, message: Message, framing: Framing, cache: TokenCache) -> float:
        return self.slope * local_estimator(self.base).message_tokens(message, framing, cache)


ESTIMATORS: dict[str, LocalEstimator | Hybrid | Calibrated] = {}


def register_estimator(estimator: LocalEstimator | Hybrid | Calibrated) -> None:
    ESTIMATORS[estimator.name] = estimator


for _estimator in (
    CharsPerToken(4.0),
    CharsPerToken(3.5),
    WordHeuristic(),
    Tiktoken("cl100k_base"),
    Tiktoken("o200k_base"),
    Hybrid(),
    Hybrid(base="chars/3.5", name="hybrid-chars/3.5"),
    Hybrid(name="usage", newer=False),
    PiEstimate(),
    Hybrid(base="pi-chars/4", name="hybrid-pi"),
    Calibrated(),
):
    register_estimator(_estimator)

LOCAL_ESTIMATORS = ("chars/4", "chars/3.5", "words", "tiktoken-cl100k", "tiktoken-o200k")


def get_estimator(name: str) -> LocalEstimator | Hybrid | Calibrated:
    if name in ESTIMATORS:
        return ESTIMATORS[name]
    close = difflib.get_close_matches(name, ESTIMATORS, n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    raise KeyError(f"unknown estimator {name!r}.{hint} Known estimators: {', '.join(ESTIMATORS)}")


def local_estimator(name: str) -> LocalEstimator:
    """The estimator `name`, which must count messages by itself (a hybrid needs the provider's counts)."""
    estimator = get_estimator(name)
    if isinstance(estimator, Hybrid):
        raise ValueError(f"{name!r} is not a local estimator: it starts from the provider's reported counts")
    return estimator


def encodings_of(names: Sequence[str]) -> list[str]:
    """The tiktoken encodings the estimators `names` count with (their bases' included), sorted."""
    bases = [getattr(get_estimator(name), "base", name) for name in names]
    return sorted({e.encoding for e in map(get_estimator, [*names, *bases]) if isinstance(e, Tiktoken)})
