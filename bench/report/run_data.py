"""A run directory read back for the report: rows, metrics, statistics and the reloaded transcripts.

The report is rebuilt from what the run wrote (config.json, meta.json, the row files, summary.json,
sweep.json), plus the transcripts themselves, reloaded from the run's datasets: the estimation
section and the production summaries of sources that were not replayed (condenser logs) need
them. When they cannot be reloaded the report says so and goes on. Nothing in the run directory is
written: the metrics are recomputed in memory exactly as `compactlab.runs.runs.finish` computes them
(`compactlab.runs.run_results.results_from_rows`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from compactlab.llm.prices import resolve_prices
from compactlab.results.leaderboard import ranked, setting_figures, summary_document
from compactlab.results.metrics import calls_frame, compactions_frame
from compactlab.results.recommendation import MIN_KEPT, Recommendation, Rule, recommend
from compactlab.results.run_failures import mark_incomplete
from compactlab.results.unfit_sessions import unfit_sessions
from compactlab.runs.run_files import DONE
from compactlab.runs.run_results import results_from_rows
from compactlab.runs.run_storage import damaged_parts, run_calls, run_compaction_rows
from compactlab.runs.runs import RunResult
from compactlab.transcripts.loading import Loaded, ReadInputs, load_inputs
from compactlab.transcripts.neutralise import read_csv
from compactlab.transcripts.source import TranscriptError


@dataclass(frozen=True)
class RunData:
    path: Path
    config: dict
    meta: dict
    summary: dict  # summary.json (computed if the run did not write one, e.g. a sweep)
    sweep: dict | None  # sweep.json, if the run was a sweep
    calls: pd.DataFrame
    compactions: pd.DataFrame
    transcripts: pd.DataFrame  # one row per transcript × strategy label
    loaded: Loaded  # the transcripts reloaded from the run's datasets (empty if they could not be)
    compaction_rows: tuple[dict, ...] = ()  # compactions.jsonl as written (with the needed/lost item lists)
    load_error: str | None = None
    changed_files: tuple[str, ...] = ()  # dataset files whose hash differs from meta.json

    @property
    def labels(self) -> list[str]:
        return sorted(self.transcripts["config"].unique()) if not self.transcripts.empty else []

    def strategy_of(self, label: str) -> str:
        """The registered strategy a label replays (labels of sweeps and configs differ from names)."""
        for entry in self.config.get("strategies", []):
            if entry.get("label") == label:
                return entry.get("name", label)
        return label


def read_json(path: Path) -> dict | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def load_run(path: str | Path, reload_transcripts: bool = True) -> RunData:
    path = Path(path)
    config = read_json(path / "config.json")
    if config is None or not (path / "done.jsonl").exists():
        raise FileNotFoundError(
            f"{path} is not a run directory (no config.json and done.jsonl): run `compactlab run --out {path}` first"
        )
    loaded, error = Loaded(transcripts=()), None
    if reload_transcripts:
        try:
            loaded = load_inputs(_locate(config.get("datasets") or [], path) or None, lenient=bool(config.get("lenient")))
        except (TranscriptError, KeyError, ValueError, FileNotFoundError, OSError) as exc:
            error = exc.args[0] if isinstance(exc, KeyError) else str(exc)
    meta = read_json(path / "meta.json") or {}
    compaction_rows = run_compaction_rows(path)
    calls = calls_frame(run_calls(path), resolve_prices(config.get("prices") or None))
    compactions = compactions_frame(compaction_rows)
    # Transcript by transcript, as the run computed transcripts.csv (compactlab.runs.run_results).
    results = results_from_rows(path, ReadInputs.of(loaded), resolve_prices(config.get("prices") or None))
    transcripts = results.summary
    if transcripts.empty:
        raise ValueError(f"{path}: the run has no finished replays yet (done.jsonl is empty)")
    # As `compactlab.runs.runs.finish` marks them; meta.json knows even when the files cannot be reloaded.
    damaged = set(meta.get("skipped_records") or {}) | {t.id for t in loaded.transcripts if t.skipped}
    transcripts["damaged"] = transcripts["transcript"].isin(damaged)
    share = config.get("max_failed_share", 0.0)
    transcripts = mark_incomplete(transcripts, share)  # as `compactlab.runs.runs.finish` marks them
    summary = read_json(path / "summary.json")
    sweep = read_json(path / "sweep.json")
    if summary is None or "recommendation" not in summary:  # written by an earlier version
        result = RunResult(
            path,
            transcripts,
            ReadInputs.of(loaded),
            0,
            share,
            results.recorded_fidelity,
            results.cost_model_check,
            results.call_models,
        )
        summary = json.loads(json.dumps(summary_document(result, rule=_rule(sweep)), default=str))
    return RunData(
        path=path,
        config=config,
        meta=meta,
        summary=summary,
        sweep=sweep,
        calls=calls,
        compactions=compactions,
        transcripts=transcripts,
        loaded=loaded,
        load_error=error,
        changed_files=_changed_files(meta, loaded),
        compaction_rows=tuple(compaction_rows),
    )


def _locate(datasets: list[str], run_dir: Path) -> list[str]:
    """Dataset arguments as the run got them; a relative path that does not exist from here is looked
    up from the run directory's ancestors (a run is usually started where its `--out` folder lives)."""
    located = []
    for entry in datasets:
        candidate = Path(entry)
        if not candidate.is_absolute() and not candidate.exists() and ("/" in entry or candidate.suffix):
            found = [base / entry for base in run_dir.resolve().parents if (base / entry).exists()]
            entry = str(found[0]) if found else entry
        located.append(entry)
    return located


def load_light(path: str | Path) -> RunData:
    """A run's configuration, statistics and per-transcript metrics only (transcripts.csv; no row files).

    Enough to compare runs: a committed reference run keeps these small files, not the JSONL rows.
    """
    path = Path(path)
    config = read_json(path / "config.json")
    # A committed reference run keeps the table gzipped.
    table = next((t for t in (path / "transcripts.csv", path / "transcripts.csv.gz") if t.exists()), None)
    if config is None or table is None:
        raise FileNotFoundError(f"{path} is not a finished run directory (needs config.json and transcripts.csv)")
    transcripts = read_csv(table)  # (undoes the formula neutralising of write_csv)
    if "damaged" not in transcripts:
        transcripts["damaged"] = transcripts["transcript"].isin(
            set((read_json(path / "meta.json") or {}).get("skipped_records") or {})
        )
    if transcripts.empty:
        raise ValueError(f"{path}: transcripts.csv has no rows")
    if (path / DONE).exists():  # (a committed reference run keeps no rows)
        # Its figures stand only while the rows they were made from do: a damaged part is an error.
        damaged = damaged_parts(path)
        if damaged:
            raise damaged[0]
    return RunData(
        path=path,
        config=config,
        meta=read_json(path / "meta.json") or {},
        summary=read_json(path / "summary.json") or {},
        sweep=read_json(path / "sweep.json"),
        calls=pd.DataFrame(),
        compactions=pd.DataFrame(),
        transcripts=transcripts,
        loaded=Loaded(transcripts=()),
    )


def _changed_files(meta: dict, loaded: Loaded) -> tuple[str, ...]:
    recorded = meta.get("datasets", {})
    changed = []
    for source in sorted({t.source_path for t in loaded.transcripts}):
        if source in recorded and recorded[source] != _hash(Path(source)):
            changed.append(source)
    return tuple(changed)


def _hash(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError:
        return None


def ranked_rows(run: RunData) -> pd.DataFrame:
    """The rows the statistics use (`compactlab.results.leaderboard.ranked`): choosable strategies, undamaged transcripts."""
    return ranked(run.transcripts)


def _rule(sweep: dict | None) -> Rule:
    """The rule with the threshold the run was analysed with (a sweep's `--min-preservation`)."""
    return Rule(((sweep or {}).get("recommendation") or {}).get("min_kept", MIN_KEPT))


def figures_and_recommendation(run: RunData, resamples: int = 10_000) -> tuple[pd.DataFrame, Recommendation]:
    """The settings' figures and the recommendation as the run's summary.json holds them; computed
    the same way (`setting_figures`, `recommend`) when the run's summary.json predates them."""
    if "recommendation" in run.summary:
        board = pd.DataFrame(run.summary.get("leaderboard") or []).fillna(float("nan"))
        return board, Recommendation.from_json(run.summary["recommendation"])
    figures = setting_figures(run.transcripts, resamples)
    return figures, recommend(figures, _rule(run.sweep), unfit_sessions(run.transcripts))
