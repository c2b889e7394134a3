"""The estimation-error benchmark: every estimator against what the provider really billed.

For each recorded LLM call, each estimator estimates the prompt that produced it (every message
before the call, or, after a real compaction, the summary plus the messages since) and is
compared with the recorded prompt tokens (input + cache reads + cache writes).

Each estimate is made by the replay's own `Meter` (`compactlab.tokens.metering`), through the same two
functions, so the benchmark measures exactly what a replay's trigger sees. Claude Code and Codex
files hold neither the system prompt nor the tool definitions. For those sources every estimate
carries a per-session constant: the difference between the recorded and the estimated prompt of
the session's first call. The first call is then exact by construction, so the first call of
every session is left out of the statistics (for every estimator alike). `hybrid` starts from the
provider's last count; where there is none (the first call, the first call after a real
compaction) it is its base estimator plus the constant, as in the replay. `calibrated` uses the
fit shipped with the package; on the sessions that fit was trained on its rows are labelled
`calibrated (in-sample)` and never scored as `calibrated`. Replay is open-loop: the recorded
messages are what the agent really sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm import tqdm

from compactlab.sessions.model import Message, Session, TextPart
from compactlab.tokens.calibration import Fit, in_sample, model_family, model_family_of, shipped_fits
from compactlab.tokens.context_windows import ContextWindows
from compactlab.tokens.estimators import LOCAL_ESTIMATORS, encodings_of, get_estimator
from compactlab.tokens.framing import Framing, SeenFraming, framing_for
from compactlab.tokens.metering import Meter
from compactlab.tokens.tokenizers import TokenCache

DEFAULT_ESTIMATORS = (*LOCAL_ESTIMATORS, "hybrid", "calibrated")
THRESHOLDS = (0.75, 0.8, 0.9)
IN_SAMPLE = "calibrated (in-sample)"  # calibrated on the sessions its fit was trained on


@dataclass(frozen=True)
class EstimationResult:
    calls: pd.DataFrame  # one row per recorded call × estimator
    fits: dict[str, Fit]  # the shipped calibration lines per model family
    sessions_without_calls: int  # e.g. condenser logs: nothing to compare with
    # Sessions with skipped (damaged) records: left out by default (a lost message would show up
    # as estimator error), kept when asked (`keep_damaged`, the CLI's --lenient). Their ids are kept
    # so every output can say what was left out or kept, and why.
    damaged_sessions: tuple[str, ...] = ()
    # Calls calibrated could not estimate, by model family: no shipped fit for it.
    uncalibrated_calls: dict[str, int] | None = None
    damaged_kept: bool = False  # whether the damaged sessions were estimated (their rows flagged `damaged`)
    skipped_records: int = 0  # the records skipped in the damaged sessions

    @classmethod
    def combined(cls, results: Sequence[EstimationResult]) -> EstimationResult:
        """The result of `run_estimation` over the sessions of `results` together, each made on
        some of them with the same estimators (a run estimates each session where it is read)."""
        frames = [r.calls for r in results if len(r.calls)]
        calls = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0] if frames else _no_rows()
        uncalibrated: dict[str, int] = {}
        for result in results:
            for family, count in (result.uncalibrated_calls or {}).items():
                uncalibrated[family] = uncalibrated.get(family, 0) + count
        return cls(
            calls,
            next((r.fits for r in results if r.fits), {}),
            sum(r.sessions_without_calls for r in results),
            tuple(t for r in results for t in r.damaged_sessions),
            uncalibrated,
            any(r.damaged_kept for r in results),
            sum(r.skipped_records for r in results),
        )


def run_estimation(
    sessions: Sequence[Session],
    estimators: Sequence[str] = DEFAULT_ESTIMATORS,
    windows: ContextWindows | None = None,
    progress: bool = False,
    cache: TokenCache | None = None,
    keep_damaged: bool = False,
) -> EstimationResult:
    """Every estimator on every recorded call of `sessions`; `keep_damaged`: also estimate the
    sessions with skipped records (their rows say `damaged`), instead of leaving them out."""
    windows = windows or ContextWindows()
    windows.check_overrides(call.model for t in sessions for call in t.calls)
    cache = cache or TokenCache()
    for name in estimators:
        get_estimator(name)  # fail early, with "did you mean", on a typo
    rows: dict[str, list] = {name: [] for name in ROW_COLUMNS}
    without_calls = 0
    uncalibrated: dict[str, int] = {}
    damaged = tuple(t.id for t in sessions if t.skipped)
    skipped = sum(len(t.skipped) for t in sessions)
    usable = list(sessions) if keep_damaged else [t for t in sessions if not t.skipped]
    # Each message's view made once for the warm-up and every estimator (`SeenFraming`).
    views = [SeenFraming.of(framing_for(session.source_format)) for session in usable]
    _warm_cache(usable, views, estimators, cache)
    for session, view in tqdm(
        zip(usable, views), desc="estimating", unit="session", disable=not progress, leave=False, total=len(usable)
    ):
        if not session.calls:
            without_calls += 1
            continue
        names = list(estimators)
        if "calibrated" in names and model_family_of(session) not in shipped_fits():
            names.remove("calibrated")
            family = model_family_of(session)
            uncalibrated[family] = uncalibrated.get(family, 0) + len(session.calls)
        for name, values in _session_rows(session, view, names, windows, cache).items():
            rows[name] += values
    calls = _with_errors(pd.DataFrame(rows, columns=ROW_COLUMNS))
    fits = shipped_fits() if "calibrated" in estimators else {}
    return EstimationResult(calls, fits, without_calls, damaged, uncalibrated, keep_damaged, skipped)


def _with_errors(calls: pd.DataFrame) -> pd.DataFrame:
    calls["error"] = calls["estimate"] - calls["true_tokens"]
    calls["rel_error"] = calls["error"] / calls["true_tokens"]
    return calls


def _no_rows() -> pd.DataFrame:
    return _with_errors(pd.DataFrame([], columns=ROW_COLUMNS))


ROW_COLUMNS = [
    "session",
    "source",
    "damaged",
    "source_format",
    "model",
    "family",
    "call",
    "message_index",
    "true_tokens",
    "window",
    "window_known",
    "first_call",
    "split",
    "estimator",
    "estimate",
]


def _warm_cache(sessions: Sequence[Session], views: Sequence[Framing], estimators: Sequence[str], cache: TokenCache) -> None:
    for encoding in encodings_of(estimators):
        for session, framing in zip(sessions, views):
            cache.warm(encoding, (text for m in session.messages for text in framing.texts(m)))
            cache.warm(encoding, (m.summary for m in session.compactions))


def _session_rows(
    session: Session, framing: Framing, estimators: Sequence[str], windows: ContextWindows, cache: TokenCache
) -> dict[str, list]:
    """The session's rows as columns (`ROW_COLUMNS`): every recorded call once per estimator, each
    counted through `framing` (the session's view of its messages)."""
    # The split is the shipped calibration's: "train" for the sessions its fit was trained on.
    sampled = "calibrated" in estimators and in_sample(session, model_family_of(session))
    calls = [(i, m.call) for i, m in enumerate(session.messages) if m.call is not None]
    # What depends on the call's model alone, found once per model (a session has one or a few).
    by_model = {
        model: (windows.lookup(model, session.context_window), model_family(model)) for model in {c.model for _, c in calls}
    }
    base: dict[str, list] = {
        "session": [session.id] * len(calls),
        "source": [source_of(session)] * len(calls),
        "damaged": [bool(session.skipped)] * len(calls),
        "source_format": [session.source_format] * len(calls),
        "model": [c.model for _, c in calls],
        "family": [by_model[c.model][1] for _, c in calls],
        "call": list(range(len(calls))),
        "message_index": [i for i, _ in calls],
        "true_tokens": [c.prompt_tokens for _, c in calls],
        "window": [by_model[c.model][0].tokens for _, c in calls],
        "window_known": [by_model[c.model][0].known for _, c in calls],
        "first_call": [number == 0 for number in range(len(calls))],
        "split": ["train" if sampled else "test"] * len(calls),
    }
    columns: dict[str, list] = {name: [] for name in ROW_COLUMNS}
    for name in estimators:
        label = IN_SAMPLE if name == "calibrated" and sampled else name
        meter = Meter(session, name, cache)
        meter.framing = framing
        estimates = recorded_prompt_estimates(meter)
        if len(estimates) != len(calls):
            raise ValueError(f"{session.id}: {len(estimates)} estimates of {len(calls)} recorded calls")
        for column, values in base.items():
            columns[column] += values
        columns["estimator"] += [label] * len(calls)
        columns["estimate"] += estimates
    return columns


def source_of(session: Session) -> str:
    """The source a session comes from: the folder holding its file (a bundled dataset's name
    rather than its `sessions/` folder)."""
    folder = Path(session.source_path).parent
    return (folder.parent if folder.name == "sessions" else folder).name or session.source_format


def recorded_prompt_estimates(meter: Meter) -> list[int]:
    """The meter's estimate of each recorded call's prompt, in order, as the agent really sent it:
    the history before the call, or after a real compaction the summary and what follows it.

    Running sums keep it linear in the session's length; each estimate is the meter's own
    (`Meter.from_sum` / `Meter.from_usage`, the functions its `__call__` uses).
    """
    session = meter.session
    summaries = {m.at_message: Message(role="user", parts=(TextPart(m.summary),)) for m in session.compactions}
    running = 0.0
    usage: tuple[int, float] | None = None  # the provider's last count and the estimates added since
    estimates = []
    for index, message in enumerate(session.messages):
        if index in summaries:
            # A real compaction: the next prompt is the summary plus what follows it, and the
            # provider's last count no longer describes it.
            running, usage = meter.message_tokens(summaries[index]), None
        call = message.call
        if call is not None:
            estimates.append(meter.from_usage(*usage) if meter.uses_usage and usage is not None else meter.from_sum(running))
        tokens = meter.message_tokens(message)
        running += tokens
        if usage is not None:
            usage = (usage[0], usage[1] + tokens)
        if call is not None:
            usage = (call.prompt_tokens + call.output_tokens, 0.0)
    return estimates


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
            "estimator": estimator,
            "family": family,
            "calls": len(group),
            "sessions": group["session"].nunique(),
            "bias_pct": 100 * rel.mean(),
            "bias_tokens": group["error"].mean(),
            "mape_pct": 100 * np.abs(rel).mean(),
            "median_abs": float(np.median(absolute)),
            "p95_abs": float(np.percentile(absolute, 95)),
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


BY_SOURCE_COLUMNS = ["estimator", "source", "calls", "sessions", "bias_pct", "mape_pct", "under5_pct", "over5_pct"]


def summarize_by_source(calls: pd.DataFrame, by: str = "source") -> pd.DataFrame:
    """Bias and error per estimator × source (or × `by`, e.g. "family"), beside the pooled figure
    (`source` "all"), over every call but each session's first: a pooled bias can hide a source
    the estimator runs high on and another it runs low on.

    over5_pct / under5_pct: share of calls over- / underestimated by more than 5%."""
    scored = calls[~calls["first_call"].astype(bool)]
    rows = []
    for estimator, own in scored.groupby("estimator", sort=True):
        groups = [*own.groupby(by, sort=True), ("all", own)]
        for source, group in groups:
            rel = group["rel_error"].to_numpy(float)
            rows.append(
                {
                    "estimator": estimator,
                    "source": source,
                    "calls": len(group),
                    "sessions": group["session"].nunique(),
                    "bias_pct": 100 * rel.mean(),
                    "mape_pct": 100 * np.abs(rel).mean(),
                    "under5_pct": 100 * (rel < -0.05).mean(),
                    "over5_pct": 100 * (rel > 0.05).mean(),
                }
            )
    return pd.DataFrame(rows, columns=BY_SOURCE_COLUMNS)
