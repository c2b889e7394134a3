"""The estimation-error benchmark: every estimator against what the provider really billed.

For each recorded LLM call, each estimator estimates the prompt that produced it (every message
before the call, or, after a real compaction, the summary plus the messages since) and is
compared with the recorded prompt tokens (input + cache reads + cache writes).

Claude Code and Codex files hold neither the system prompt nor the tool definitions. For those
sources each local estimator gets a per-session constant: the difference between the recorded
and the estimated prompt of the session's first call, added to every later estimate. The first
call is then exact by construction, so the first call of every session is left out of the
statistics (for every estimator alike). `hybrid` needs no constant: it starts from the provider's
own count. Replay is open-loop: the recorded messages are what the agent really sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from tqdm import tqdm

from bench.calibration import Fit, fit_families, is_training, model_family
from bench.context_windows import ContextWindows
from bench.estimators import LOCAL_ESTIMATORS, Calibrated, Hybrid, Tiktoken, get_estimator
from bench.framing import MISSING_SYSTEM_PROMPT, Framing, framing_for
from bench.model import Message, TextPart, Transcript
from bench.tokenizers import TokenCache

DEFAULT_ESTIMATORS = (*LOCAL_ESTIMATORS, "hybrid", "calibrated")
THRESHOLDS = (0.75, 0.8, 0.9)


@dataclass(frozen=True)
class EstimationResult:
    calls: pd.DataFrame  # one row per recorded call × estimator
    fits: dict[str, Fit]  # calibration lines per model family
    transcripts_without_calls: int  # e.g. condenser logs: nothing to compare with
    # Transcripts with skipped (damaged) records are left out: a lost message would show up as
    # estimator error. Their ids are kept so every output can say what was left out and why.
    damaged_transcripts: tuple[str, ...] = ()


def run_estimation(
    transcripts: Sequence[Transcript],
    estimators: Sequence[str] = DEFAULT_ESTIMATORS,
    windows: ContextWindows | None = None,
    train_fraction: float = 0.5,
    progress: bool = False,
    cache: TokenCache | None = None,
) -> EstimationResult:
    windows = windows or ContextWindows()
    cache = cache or TokenCache()
    for name in estimators:
        get_estimator(name)  # fail early, with "did you mean", on a typo
    local = _local_names(estimators)
    rows: list[dict] = []
    without_calls = 0
    damaged = tuple(t.id for t in transcripts if t.skipped)
    usable = [t for t in transcripts if not t.skipped]
    _warm_cache(usable, local, cache)
    for transcript in tqdm(usable, desc="estimating", unit="transcript", disable=not progress, leave=False):
        found = _transcript_rows(transcript, estimators, local, windows, cache, train_fraction)
        without_calls += not found
        rows.extend(found)
    calls = pd.DataFrame(rows, columns=ROW_COLUMNS)
    fits: dict[str, Fit] = {}
    if "calibrated" in estimators:
        calls, fits = _add_calibrated(calls, get_estimator("calibrated"))
    calls = calls[calls["estimator"].isin(estimators)].reset_index(drop=True)
    calls["error"] = calls["estimate"] - calls["true_tokens"]
    calls["rel_error"] = calls["error"] / calls["true_tokens"]
    return EstimationResult(calls=calls, fits=fits, transcripts_without_calls=without_calls, damaged_transcripts=damaged)


ROW_COLUMNS = [
    "transcript", "source_format", "model", "family", "call", "message_index", "true_tokens",
    "window", "window_known", "first_call", "split", "estimator", "estimate",
]


def _warm_cache(transcripts: Sequence[Transcript], local: list[str], cache: TokenCache) -> None:
    encodings = [e.encoding for e in map(get_estimator, local) if isinstance(e, Tiktoken)]
    for encoding in encodings:
        for transcript in transcripts:
            framing = framing_for(transcript.source_format)
            cache.warm(encoding, (text for m in transcript.messages for text in framing.texts(m)))
            cache.warm(encoding, (m.summary for m in transcript.compactions))


def _local_names(estimators: Sequence[str]) -> list[str]:
    names = [n for n in estimators if n in LOCAL_ESTIMATORS]
    for name in estimators:
        estimator = get_estimator(name)
        if isinstance(estimator, (Hybrid, Calibrated)) and estimator.base not in names:
            names.append(estimator.base)
    return names


def _transcript_rows(
    transcript: Transcript,
    estimators: Sequence[str],
    local: list[str],
    windows: ContextWindows,
    cache: TokenCache,
    train_fraction: float,
) -> list[dict]:
    framing = framing_for(transcript.source_format)
    prompts = _prompt_estimates(transcript, local, framing, cache)
    if not prompts:
        return []
    hybrid = get_estimator("hybrid") if "hybrid" in estimators else None
    add_constant = transcript.source_format in MISSING_SYSTEM_PROMPT
    first = prompts[0]
    split = "train" if is_training(transcript.id, train_fraction) else "test"
    rows = []
    for number, prompt in enumerate(prompts):
        call = prompt.message.call
        window = windows.lookup(call.model, transcript.context_window)
        base = {
            "transcript": transcript.id, "source_format": transcript.source_format, "model": call.model,
            "family": model_family(call.model), "call": number, "message_index": prompt.index,
            "true_tokens": call.prompt_tokens, "window": window.tokens, "window_known": window.known,
            "first_call": number == 0, "split": split,
        }
        for name in local:
            offset = first.message.call.prompt_tokens - first.local[name] if add_constant else 0.0
            rows.append({**base, "estimator": name, "estimate": prompt.local[name] + offset})
        if hybrid is not None:
            rows.append({**base, "estimator": "hybrid", "estimate": prompt.hybrid[hybrid.base]})
    return rows


@dataclass
class _Prompt:
    index: int  # position of the call's assistant message in the transcript
    message: Message
    local: dict[str, float]  # estimator name → raw estimate of the prompt
    hybrid: dict[str, float]  # base name → hybrid estimate with that base


def _prompt_estimates(transcript: Transcript, local: list[str], framing: Framing, cache: TokenCache) -> list[_Prompt]:
    """Running sums over the messages: each message is counted once per estimator."""
    estimators = {name: get_estimator(name) for name in local}
    markers = {m.at_message: m for m in transcript.compactions}
    running = {name: e.prompt_overhead for name, e in estimators.items()}
    # Hybrid state: the provider's count for the prefix up to the last call, and what came since.
    known_tokens: int | None = None
    since_known = dict.fromkeys(local, 0.0)
    prompts: list[_Prompt] = []
    for index, message in enumerate(transcript.messages):
        if index in markers:
            # A real compaction: the agent's next prompt is the summary plus what follows it.
            summary = Message(role="user", parts=(TextPart(markers[index].summary),))
            running = {n: e.prompt_overhead + e.message_tokens(summary, framing, cache) for n, e in estimators.items()}
            known_tokens = None
        if message.call is not None:
            hybrid = {
                n: (known_tokens + since_known[n]) if known_tokens is not None else running[n] for n in local
            }
            prompts.append(_Prompt(index, message, dict(running), hybrid))
        for name, estimator in estimators.items():
            tokens = estimator.message_tokens(message, framing, cache)
            running[name] += tokens
            since_known[name] += tokens
        if message.call is not None:
            known_tokens = message.call.prompt_tokens + message.call.output_tokens
            since_known = dict.fromkeys(local, 0.0)
    return prompts


def _add_calibrated(calls: pd.DataFrame, calibrated: Calibrated) -> tuple[pd.DataFrame, dict[str, Fit]]:
    base_rows = calls[(calls["estimator"] == calibrated.base) & ~calls["first_call"]]
    train = base_rows[base_rows["split"] == "train"]
    fits = fit_families(train, calibrated.base)
    test = calls[(calls["estimator"] == calibrated.base) & (calls["split"] == "test")].copy()
    test = test[test["family"].isin(fits)]
    if test.empty:  # no family had enough training data for a line (e.g. a handful of transcripts)
        return calls, fits
    slopes = test["family"].map(lambda f: fits[f].slope)
    intercepts = test["family"].map(lambda f: fits[f].intercept)
    test["estimate"] = slopes * test["estimate"] + intercepts
    test["estimator"] = "calibrated"
    return pd.concat([calls, test], ignore_index=True), fits


def summarize(calls: pd.DataFrame) -> pd.DataFrame:
    """Error statistics per estimator × model family, over every call but each session's first.

    bias_pct: signed mean relative error (negative: the estimator runs low, risking overflow).
    mape_pct: mean absolute percentage error. median_abs / p95_abs: absolute error in tokens.
    under5_pct: share of calls underestimated by more than 5%.
    late_T / early_T: share of calls where, at threshold T of the window, the estimate would fire a
    compaction too late (true count over T, estimate under: danger) or too early (waste).
    over_T: share of calls whose true count is over T, for scale.
    """
    rows = []
    scored = calls[~calls["first_call"].astype(bool)]
    for (estimator, family), group in scored.groupby(["estimator", "family"], sort=True):
        rel = group["rel_error"].to_numpy(float)
        absolute = group["error"].abs().to_numpy(float)
        row = {
            "estimator": estimator, "family": family, "calls": len(group), "transcripts": group["transcript"].nunique(),
            "bias_pct": 100 * rel.mean(), "bias_tokens": group["error"].mean(), "mape_pct": 100 * np.abs(rel).mean(),
            "median_abs": float(np.median(absolute)), "p95_abs": float(np.percentile(absolute, 95)),
            "under5_pct": 100 * (rel < -0.05).mean(),
        }
        for threshold in THRESHOLDS:
            limit = threshold * group["window"]
            true_over = group["true_tokens"] >= limit
            estimate_over = group["estimate"] >= limit
            row[f"late_{threshold}"] = 100 * (true_over & ~estimate_over).mean()
            row[f"early_{threshold}"] = 100 * (estimate_over & ~true_over).mean()
            row[f"over_{threshold}"] = 100 * true_over.mean()
        rows.append(row)
    return pd.DataFrame(rows)
