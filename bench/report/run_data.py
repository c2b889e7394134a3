"""A run directory read back for the report: rows, metrics, statistics and the reloaded transcripts.

The report is rebuilt from what the run wrote (config.json, meta.json, the row files, summary.json,
sweep.json), plus the transcripts themselves, reloaded from the run's datasets: the estimation
section and the production summaries of sources that were not replayed (condenser logs) need
them. When they cannot be reloaded the report says so and goes on. Nothing in the run directory is
written: the metrics are recomputed in memory exactly as `bench.runs.finish` computes them.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from bench.leaderboard import NOT_RANKED, ranked, summary_document
from bench.run_failures import mark_incomplete
from bench.run_files import finished_rows
from bench.llm.prices import resolve_prices
from bench.loading import Loaded, ReadInputs, load_inputs
from bench.metrics import calls_frame, compactions_frame, transcript_summary
from bench.runs import RunResult
from bench.source import TranscriptError
from bench.statistics import Recommendation, pareto_frontier, recommend, summarize_by_strategy

MIN_PRESERVATION = 0.9  # the same default as `compactlab sweep --min-preservation`
# Strategies that replay what the production agent did: a reference, not a setting one can choose.
REFERENCE_STRATEGIES = NOT_RANKED


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
        raise FileNotFoundError(f"{path} is not a run directory (no config.json and done.jsonl): run `compactlab run --out {path}` first")
    loaded, error = Loaded(transcripts=()), None
    if reload_transcripts:
        try:
            loaded = load_inputs(_locate(config.get("datasets") or [], path) or None, lenient=bool(config.get("lenient")))
        except (TranscriptError, KeyError, ValueError, FileNotFoundError, OSError) as exc:
            error = exc.args[0] if isinstance(exc, KeyError) else str(exc)
    meta = read_json(path / "meta.json") or {}
    compaction_rows = finished_rows(path, "compactions.jsonl")
    calls = calls_frame(finished_rows(path, "calls.jsonl"), resolve_prices(config.get("prices") or None))
    compactions = compactions_frame(compaction_rows)
    transcripts = transcript_summary(calls, compactions)
    if transcripts.empty:
        raise ValueError(f"{path}: the run has no finished replays yet (done.jsonl is empty)")
    # As `bench.runs.finish` marks them; meta.json knows even when the files cannot be reloaded.
    damaged = set(meta.get("skipped_records") or {}) | {t.id for t in loaded.transcripts if t.skipped}
    transcripts["damaged"] = transcripts["transcript"].isin(damaged)
    share = config.get("max_failed_share", 0.0)
    transcripts = mark_incomplete(transcripts, share)  # as `bench.runs.finish` marks them
    summary = read_json(path / "summary.json")
    if summary is None:  # a sweep writes sweep.json only
        result = RunResult(path, calls, compactions, transcripts, ReadInputs.of(loaded), 0, share)
        summary = json.loads(json.dumps(summary_document(result), default=str))
    return RunData(
        path=path, config=config, meta=meta, summary=summary, sweep=read_json(path / "sweep.json"),
        calls=calls, compactions=compactions, transcripts=transcripts,
        loaded=loaded, load_error=error, changed_files=_changed_files(meta, loaded),
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
    transcripts = pd.read_csv(table)
    if "damaged" not in transcripts:
        transcripts["damaged"] = transcripts["transcript"].isin(set((read_json(path / "meta.json") or {}).get("skipped_records") or {}))
    if transcripts.empty:
        raise ValueError(f"{path}: transcripts.csv has no rows")
    return RunData(
        path=path, config=config, meta=read_json(path / "meta.json") or {}, summary=read_json(path / "summary.json") or {},
        sweep=read_json(path / "sweep.json"), calls=pd.DataFrame(), compactions=pd.DataFrame(),
        transcripts=transcripts, loaded=Loaded(transcripts=()),
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


def with_untouched(transcripts: pd.DataFrame) -> pd.DataFrame:
    """Adds `preservation_or_untouched`: k=1 preservation, 1.0 where the strategy never compacted.

    A transcript a strategy never compacted lost nothing; without this a strategy that never fires
    would have no score at all, and could look best (the rule of `bench.sweep`).
    """
    return transcripts.assign(
        preservation_or_untouched=transcripts["preservation_k1"].where(transcripts["compactions"] > 0, 1.0)
    )


def ranked_rows(run: RunData) -> pd.DataFrame:
    """The rows the statistics use (`bench.leaderboard.ranked`): choosable strategies, undamaged transcripts."""
    return ranked(run.transcripts)


def strategy_points(run: RunData, resamples: int = 10_000) -> pd.DataFrame:
    """One row per ranked strategy label: tokens saved and preservation (untouched = 1.0), with 95% CIs."""
    frame = with_untouched(ranked_rows(run))
    board = summarize_by_strategy(frame, ["removed_share", "preservation_or_untouched"], strategy_col="config", resamples=resamples)
    compacted = frame.groupby("config")["compactions"].agg(lambda s: int((s > 0).sum()))
    where_compacted = frame.groupby("config")["preservation_k1"].mean()  # NaN where it never compacted
    return pd.DataFrame({
        "config": board["config"],
        "tokens_saved": board["removed_share_mean"], "saved_low": board["removed_share_low"], "saved_high": board["removed_share_high"],
        "preservation": board["preservation_or_untouched_mean"],
        "preservation_low": board["preservation_or_untouched_low"], "preservation_high": board["preservation_or_untouched_high"],
        "transcripts": board["transcripts"], "compacted_in": board["config"].map(compacted),
        "kept_where_compacted": board["config"].map(where_compacted),
        "reference": board["config"].map(lambda label: run.strategy_of(label) in REFERENCE_STRATEGIES),
    }).sort_values("config").reset_index(drop=True)


@dataclass(frozen=True)
class Choice:
    """The recommended setting and where the recommendation came from."""

    config: str
    reason: str
    source: str  # "sweep" or "leaderboard"
    ties: tuple[str, ...] = ()  # other settings with exactly the same two numbers
    frontier: tuple[str, ...] = ()


def choose(run: RunData, points: pd.DataFrame) -> Choice | None:
    if run.sweep and run.sweep.get("recommendation"):
        chosen = run.sweep["recommendation"]
        frontier = tuple(row["config"] for row in run.sweep.get("frontier", []))
        return Choice(chosen["config"], chosen["reason"], "sweep", _ties(points, chosen["config"]), frontier)
    candidates = points[~points["reference"]].set_index("config", drop=False)
    # A setting that loses much wherever it compacts must not win on sessions it never touched:
    # it has to keep the threshold where it did compact too (when some setting does).
    good_where_used = candidates["kept_where_compacted"].isna() | (candidates["kept_where_compacted"] >= MIN_PRESERVATION)
    if good_where_used.any():
        candidates = candidates[good_where_used]
    if candidates.dropna(subset=["tokens_saved", "preservation"]).empty:
        return None
    frontier = pareto_frontier(candidates, ("tokens_saved", "preservation"))
    picked: Recommendation = recommend(frontier, MIN_PRESERVATION)
    label = picked.row["config"]
    return Choice(label, picked.reason, "leaderboard", _ties(points, label), tuple(frontier["config"]))


def _ties(points: pd.DataFrame, label: str) -> tuple[str, ...]:
    own = points[points["config"] == label]
    if own.empty:
        return ()
    saved, kept = own.iloc[0]["tokens_saved"], own.iloc[0]["preservation"]
    same = points[
        (points["config"] != label) & ~points["reference"]
        & points["tokens_saved"].map(lambda v: math.isclose(v, saved, abs_tol=1e-12))
        & points["preservation"].map(lambda v: math.isclose(v, kept, abs_tol=1e-12))
    ]
    return tuple(same["config"])
