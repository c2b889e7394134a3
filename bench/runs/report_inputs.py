"""What a run writes for its report beside the rows, so that the report never reads a session.

The report needs a few facts of each session the rows do not hold (its file's name, why records
were skipped, its first model and recorded window, the production summaries of a session without
calls, which cannot be replayed), and, when the run measures token estimation (`estimation = true`,
the default of `compactlab run`; a sweep never does), every estimator's estimate of every recorded
call and the replay's own size error on prompts that keep a tail. Both are computed where the
session is read and replayed (`compactlab.runs.session_job`), once, and written at the end:

- `session_facts.json`: one object per session read, by id;
- `estimation/calls.parquet`: `compactlab.tokens.estimation.run_estimation`'s rows over the run's
  sessions; `estimation/estimation.json`: the rest of its result, the estimators the run's settings
  measured with (the run's default first) and the size-check rows (`tests.scripts.prompt_size_check`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from compactlab.replay.prompt_size_errors import kept_tail_errors
from compactlab.runs.estimation_parts import EstimationParts
from compactlab.runs.run_files import before_write, naming, write_atomic
from compactlab.sessions.importers import utf8_text
from compactlab.sessions.model import Session
from compactlab.tokens.calibration import Fit
from compactlab.tokens.estimation import DEFAULT_ESTIMATORS, EstimationResult, run_estimation
from compactlab.tokens.tokenizers import TokenCache

SESSION_FACTS = "session_facts.json"
ESTIMATION = "estimation"  # the folder
ESTIMATION_CALLS = f"{ESTIMATION}/calls.parquet"
ESTIMATION_DOCUMENT = f"{ESTIMATION}/estimation.json"


def session_facts(session: Session) -> dict:
    """What the report shows of a session that its rows do not hold."""
    unreplayed = [
        {"trigger": marker.trigger, "at_message": marker.at_message, "summary": marker.summary or ""}
        for marker in (session.compactions if not session.calls else ())
    ]
    return {
        "session": session.id,
        "source": utf8_text(Path(session.source_path).name),  # as the session id
        "format": session.source_format,
        "skipped": skipped_reasons(session),
        "model": session.calls[0].model if session.calls else None,
        "context_window": session.context_window,
        "unreplayed": unreplayed,  # a session without calls is not replayed: its production summaries
    }


def skipped_reasons(session: Session) -> str:
    """'3× invalid JSON; 1× ...': the reasons records were skipped, the most frequent first."""
    counts: dict[str, int] = {}
    for record in session.skipped:
        counts[record.reason] = counts.get(record.reason, 0) + 1
    return "; ".join(f"{n}× {reason}" for reason, n in sorted(counts.items(), key=lambda kv: -kv[1]))


@dataclass(frozen=True)
class Estimated:
    """One session's part of the run's estimation: the benchmark's result and the size-check rows."""

    result: EstimationResult
    size_rows: list[dict]


def run_estimators(default: str, setting_estimators: list[str]) -> list[str]:
    """The estimators the run measured prompts with: the run's default first, then each setting's, once."""
    return list(dict.fromkeys([default or "hybrid", *setting_estimators]))


def estimated(session: Session, measured: list[str], cache: TokenCache) -> Estimated:
    """`session`'s estimation (the benchmark's estimators, and those of the run's settings it
    does not compare) and its size-check rows, with the run's default estimator (`measured[0]`)."""
    estimators = [*DEFAULT_ESTIMATORS, *(name for name in measured if name not in DEFAULT_ESTIMATORS)]
    return Estimated(run_estimation([session], estimators, cache=cache), kept_tail_errors(session, measured[0], cache))


def write_report_inputs(out: Path, session_facts: pd.DataFrame, estimation: EstimationParts | None, measured: list[str]) -> None:
    """session_facts.json and, when the run measured it, the estimation files (see the module docstring)."""
    records = {} if session_facts.empty else {row["session"]: row for row in session_facts.to_dict("records")}
    write_atomic(Path(out) / SESSION_FACTS, json.dumps(records, indent=1, ensure_ascii=False, default=str) + "\n")
    if estimation is None:
        return
    result = estimation.result()
    folder = Path(out) / ESTIMATION
    folder.mkdir(exist_ok=True)
    path, temporary = Path(out) / ESTIMATION_CALLS, folder / ".calls.parquet.tmp"
    before_write(path)
    try:
        with naming(path):  # written whole under a temporary name, then renamed, as every run file
            estimation.write_calls(temporary)
            temporary.replace(path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    document = {
        "estimators": measured,
        "fits": {family: asdict(fit) for family, fit in result.fits.items()},
        "sessions_without_calls": result.sessions_without_calls,
        "damaged_sessions": list(result.damaged_sessions),
        "uncalibrated_calls": result.uncalibrated_calls,
        "damaged_kept": result.damaged_kept,
        "skipped_records": result.skipped_records,
        "size_rows": estimation.size_rows,
    }
    write_atomic(Path(out) / ESTIMATION_DOCUMENT, json.dumps(document, indent=1, default=float) + "\n")


def read_session_facts(out: Path) -> dict[str, dict]:
    path = Path(out) / SESSION_FACTS
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


@dataclass(frozen=True)
class RunEstimation:
    """The estimation a run measured, read back."""

    result: EstimationResult
    estimators: list[str]  # the run's settings' estimators, its default first
    size_rows: list[dict]


def read_estimation(out: Path) -> RunEstimation | None:
    """The run's estimation, or None when it did not measure it."""
    path = Path(out) / ESTIMATION_DOCUMENT
    if not path.exists():
        return None
    document = json.loads(path.read_text(encoding="utf-8"))
    fits = {family: Fit(**{**fit, "sessions": tuple(fit["sessions"])}) for family, fit in document["fits"].items()}
    result = EstimationResult(
        pd.read_parquet(Path(out) / ESTIMATION_CALLS),
        fits,
        document["sessions_without_calls"],
        tuple(document["damaged_sessions"]),
        document["uncalibrated_calls"],
        document["damaged_kept"],
        document["skipped_records"],
    )
    return RunEstimation(result, document["estimators"], document["size_rows"])
