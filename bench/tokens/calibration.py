"""Per-model-family calibration: a line fitted on training sessions, shipped with the package.

Claude, Gemini and DeepSeek do not publish their tokenizers, so a local count is off by a
family-specific factor. `tokens ≈ a·estimate + b` is fitted on the training half of the bundled
sessions (`python -m tests.scripts.fit_calibration` writes `bench/tokens/calibration_fit.json`, which names
them) and applied everywhere else: `run` uses it, and `estimate` scores it only on sessions it
was not trained on (in-sample errors are reported apart). The split is by session, never by
call: calls of one session are strongly correlated, and splitting them would leak the answer into
the fit.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import asdict, dataclass
from functools import cache, lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from compactlab.sessions.model import Session
from compactlab.sessions.session_family import session_family
from compactlab.tokens.estimators import Calibrated
from compactlab.tokens.framing import without_system_prompt

SHIPPED_FIT = Path(__file__).with_name("calibration_fit.json")
REGENERATE = "python -m tests.scripts.fit_calibration"

FAMILIES = (
    ("claude", re.compile(r"claude|anthropic")),
    ("gpt", re.compile(r"gpt|^o\d|codex|openai")),
    ("gemini", re.compile(r"gemini")),
    ("deepseek", re.compile(r"deepseek")),
    ("qwen", re.compile(r"qwen")),
    ("glm", re.compile(r"glm")),
)


@lru_cache(maxsize=4096)  # asked per call of every session, of a few distinct names
def model_family(model: str) -> str:
    """The tokenizer family of a model name: claude, gpt, gemini, deepseek, qwen, glm or other."""
    name = model.lower().rsplit("/", 1)[-1]
    for family, pattern in FAMILIES:
        if pattern.search(name):
            return family
    return "other"


def is_training(session_id: str, train_fraction: float = 0.5) -> bool:
    """A stable split: the same session is always on the same side, whatever else is loaded."""
    digest = hashlib.sha256(session_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < train_fraction


@dataclass(frozen=True)
class Fit:
    family: str
    base: str
    slope: float
    intercept: float
    train_calls: int
    train_sessions: int
    # Training calls of sessions whose files lack the system prompt: they teach the slope only,
    # as growth since the session's first call (see `fit_families`).
    growth_calls: int = 0
    sessions: tuple[str, ...] = ()  # the training sessions' ids
    # the sessions they belong to (`compactlab.sessions.session_family`): a sub-agent's file is in
    # sample when its parent session was trained on, and the other way round
    families: tuple[str, ...] = ()

    def estimator(self) -> Calibrated:
        return Calibrated(base=self.base, slope=self.slope, intercept=self.intercept, family=self.family)


def fit_families(rows: pd.DataFrame, base: str) -> dict[str, Fit]:
    """Least-squares lines per family from the base estimator's rows of the training sessions
    (`family`, `session`, `source_format`, `first_call`, `estimate`, `true_tokens`).

    The line is fitted on, and applied to, the estimated part of a prompt only. Where the file
    lacks the system prompt (Claude Code, Codex) every estimate carries a per-session constant
    that is already in provider tokens, so such a session teaches only the slope: its calls
    enter as growth since its first call (estimate − first estimate against billed − first
    billed, a line through the origin). Sessions with the whole prompt teach slope and intercept.
    The first call of each session is not a training point. A family needs at least two
    sessions and ten calls to be fitted; otherwise it is left out and its calls get no
    calibrated estimate (reported, not guessed).
    """
    growth = rows["source_format"].isin(without_system_prompt()).to_numpy()
    first = rows[rows["first_call"].astype(bool)].drop_duplicates("session").set_index("session")
    anchor_x = np.where(growth, rows["session"].map(first["estimate"]).to_numpy(float), 0.0)
    anchor_y = np.where(growth, rows["session"].map(first["true_tokens"]).to_numpy(float), 0.0)
    points = rows.assign(
        x=rows["estimate"].to_numpy(float) - anchor_x,
        y=rows["true_tokens"].to_numpy(float) - anchor_y,
        whole=(~growth).astype(float),
    )
    points = points[~points["first_call"].astype(bool)]
    fits: dict[str, Fit] = {}
    for family, group in points.groupby("family"):
        sessions = tuple(sorted(group["session"].unique()))
        if len(sessions) < 2 or len(group) < 10 or group["x"].nunique() < 2:
            continue
        with_intercept = bool(group["whole"].any())
        design = group[["x", "whole"]].to_numpy(float) if with_intercept else group[["x"]].to_numpy(float)
        coefficients = np.linalg.lstsq(design, group["y"].to_numpy(float), rcond=None)[0]
        intercept = float(coefficients[1]) if with_intercept else 0.0
        fits[str(family)] = Fit(
            str(family),
            base,
            float(coefficients[0]),
            intercept,
            len(group),
            len(sessions),
            int((group["whole"] == 0).sum()),
            sessions,
        )
    return fits


def fit_document(fits: dict[str, Fit], datasets: list[str], train_fraction: float) -> dict:
    """The shipped calibration file's content."""
    return {
        "about": "Calibration lines per model family, fitted on the training sessions named here; "
        "`compactlab run` uses them, `compactlab estimate` scores them on every other session.",
        "regenerate": REGENERATE,
        "datasets": datasets,
        "train_fraction": train_fraction,
        "fits": [{**asdict(fit), "sessions": list(fit.sessions)} for _, fit in sorted(fits.items())],
    }


@cache
def shipped_fits(path: Path = SHIPPED_FIT) -> dict[str, Fit]:
    """The fits shipped with the package, by family."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        return {
            entry["family"]: Fit(**{**entry, "sessions": tuple(entry["sessions"]), "families": tuple(entry.get("families", ()))})
            for entry in document["fits"]
        }
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: cannot read the calibration fits ({exc}); regenerate them with `{REGENERATE}`") from exc


def model_family_of(session: Session) -> str:
    """The model family most of a session's calls went to ("other" without calls)."""
    counts = Counter(model_family(call.model) for call in session.calls)
    return counts.most_common(1)[0][0] if counts else "other"


def calibrated_for(session: Session) -> Calibrated:
    """The shipped calibration of the session's model family; an error when there is none."""
    family = model_family_of(session)
    fit = shipped_fits().get(family)
    if fit is None:
        raise ValueError(
            f"{session.source_path}: session {session.id}: no shipped calibration for model family {family!r} "
            f"(fitted: {', '.join(sorted(shipped_fits())) or 'none'}); use another estimator, or add such sessions "
            f"to the bundled data and run `{REGENERATE}`"
        )
    return fit.estimator()


def in_sample(session: Session, family: str | None = None) -> bool:
    """Whether the shipped fit of `family` (default: the session's) was trained on this session
    or on another file of its session (a sub-agent of it, or its parent)."""
    fit = shipped_fits().get(family or model_family_of(session))
    if fit is None:
        return False
    return session.id in fit.sessions or session_family(session) in fit.families
