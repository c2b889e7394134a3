"""`compactlab run`: replay datasets × strategies into a run directory that survives interruption.

A run directory holds:
- `config.json`: the resolved configuration; `meta.json` (written once every file was read):
  versions, dataset file hashes, prompt template hashes, what was skipped while reading;
- `calls.jsonl` and `compactions.jsonl`: rows, appended as each transcript's settings finish;
- `done.jsonl`: one line per finished transcript × strategy, written after its rows, so that
  `--resume` skips exactly the finished work and ignores rows of a unit that was cut off;
- `summary.json` and `transcripts.csv`: the statistics, written at the end;
- while a run is going, `.calls-*.part` files: call rows a worker process wrote, waiting to be
  appended to `calls.jsonl` in file order (removed as they are; a killed run's are removed when
  the run is resumed).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import platform
from contextlib import closing
from dataclasses import dataclass, field, replace
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm import tqdm

from bench.context_windows import ContextWindows
from bench.datasets import resolve_inputs
from bench.llm.prices import resolve_prices
from bench.llm_config import make_run_judge
from bench.loading import FailedFile, ReadInputs, ReadTranscript, read_files
from bench.metering import Meter
from bench.call_rows import TEXT_COLUMNS, SharedRows, call_arrays, done_lines, json_line, json_rows
from bench.metrics import (
    TextCodes, calls_frame, coded_text, compactions_frame, joined_codes, rows_of_each, summary_groups, transcript_summary,
)
from bench.next_action import score_compactions
from bench.model import Transcript
from bench.replay import CALL_COLUMNS, CallColumns, StrategyConfig, replay
from bench.shared_compactions import shared_by_setting
from bench.run_config import RunConfig, config_json, default_strategies, windows_of
from bench.tokenizers import TokenCache
from strategies.base import Strategy
from strategies.prompting import PROMPTS_DIR, fixed_templates
from strategies.registry import get_strategy

ROW_FILES = ("calls.jsonl", "compactions.jsonl")
CACHED_CHARS = 50_000_000  # texts a replaying process keeps counts of (some 50-100 MB)


@dataclass(frozen=True)
class RunResult:
    out: Path
    calls: pd.DataFrame
    compactions: pd.DataFrame
    transcripts: pd.DataFrame
    read: ReadInputs  # what the run read (the transcripts' messages are not kept)
    resumed_units: int


def resolve(config: RunConfig) -> tuple[RunConfig, dict[str, Strategy]]:
    """The configuration with its default strategies and estimator filled in, and each setting's
    strategy by label: made once for the whole run (a strategy is a frozen dataclass, without
    state), and a typo fails here, before anything is replayed."""
    resolved, instances = [], {}
    for entry in config.strategies or default_strategies():
        strategy = instances[entry.label] = get_strategy(entry.strategy, **dict(entry.settings))
        if entry.estimator is None and not hasattr(strategy, "estimator"):
            entry = replace(entry, estimator=config.estimator)
        resolved.append(entry)
    return replace(config, strategies=tuple(resolved)), instances


def run(
    config: RunConfig,
    out: Path,
    resume: bool = False,
    progress: bool = False,
    summarizer=None,
    overwrite: bool = False,
    judge=None,
    workers: int | None = None,
) -> RunResult:
    """Replay every transcript × strategy of `config` into `out` (see the module docstring).

    `workers`: processes reading and replaying files side by side (default: one per core); the
    rows are written in file order, the same as one process writes them. Runs with an LLM
    summarizer or judge stay in one process, where the call cache and the concurrency limit live.
    """
    config, instances = resolve(config)
    out.mkdir(parents=True, exist_ok=True)
    done_path = out / "done.jsonl"
    done = _done_units(done_path) if resume else set()
    if not resume and done_path.exists():
        if not overwrite:
            raise ValueError(f"{out} already holds a run: use --resume to continue it, or another --out")
        for name in (*ROW_FILES, "done.jsonl"):
            (out / name).unlink(missing_ok=True)
    if resume and (out / "config.json").exists():
        previous = json.loads((out / "config.json").read_text())
        if previous != config_json(config):
            raise ValueError(f"{out}: --resume with a different configuration than the run was started with")
    (out / "config.json").write_text(json.dumps(config_json(config), indent=2) + "\n")
    judge = judge if judge is not None else make_run_judge(config)  # None unless [judge] is configured
    job = _Job(config.strategies, instances, frozenset(done), windows_of(config), config.estimator, summarizer, judge, out)
    # An LLM summarizer or judge keeps the run in one process, where its cache and concurrency limit live.
    workers = 1 if summarizer is not None or judge is not None else workers
    inputs = resolve_inputs(list(config.datasets) or None)
    transcripts, failed, call_frames, compaction_rows = [], [], [], []
    file_hashes: dict[str, str | None] = {}  # each file's, as the worker that read it found it
    bar = tqdm(total=len(inputs.files), desc="reading and replaying", unit="file", disable=not progress)
    _remove_parts(out)  # left by a run that was killed
    reads = read_files(inputs.files, inputs.lenient_files, lenient=config.lenient, workers=workers, then=job.replay_file, keep=ReadTranscript.of)
    try:
        # One version of each prompt template for the whole run; an error in a file ends the
        # worker pool at once (see read_files).
        with fixed_templates(), closing(reads), _RowFiles(out) as row_files:
            for read in reads:
                bar.update()
                if read.error is not None:
                    if not read.lenient:
                        raise read.error
                    failed.append(FailedFile(path=read.path, error=str(read.error)))
                transcripts += read.transcripts
                file_hash, replayed = read.then or (None, ())
                if read.transcripts:
                    file_hashes[read.transcripts[0].source_path] = file_hash
                for transcript, replays in zip(read.transcripts, replayed):
                    if replays is None:  # every setting of this transcript was done before --resume
                        continue
                    # One write per file and transcript; the done lines come last, so a run killed in
                    # between replays this transcript's settings again on --resume.
                    row_files.append_part(replays.part, [("calls.jsonl", replays.call_bytes), ("compactions.jsonl", None)])
                    row_files.append("done.jsonl", done_lines(transcript.id, replays.labels))
                    call_frames.append(replays.calls)
                    compaction_rows += replays.compaction_rows
    finally:
        _remove_parts(out)  # of files replayed after an error stopped the run
    bar.close()
    read = ReadInputs(transcripts=tuple(transcripts), failed=tuple(failed), passed_over=inputs.passed_over)
    job.windows.check_overrides(call.model for t in transcripts for call in t.calls)
    (out / "meta.json").write_text(json.dumps(run_meta(read, file_hashes), indent=2) + "\n")
    # A run that started fresh has every row in memory: no need to read the files back.
    rows = None if done else (call_frames, compaction_rows)
    return finish(out, read, resumed_units=len(done), prices=config.prices, rows=rows)


@dataclass(frozen=True)
class Replays:
    """One transcript's replays under the settings not done yet, as the process that ran them hands them back."""

    labels: list[str]
    # calls.jsonl lines (the first `call_bytes` bytes), then compactions.jsonl lines, in a file the
    # worker wrote: the process that appends them to the run's files only has the kernel copy them
    # (sending a sweep's hundred megabytes of rows between processes took a core's time away from
    # replaying)
    part: Path
    call_bytes: int
    # the same rows as arrays, the text columns as codes (cheap to send between processes and to join)
    calls: dict[str, np.ndarray | TextCodes]
    compaction_rows: list[dict]


@dataclass(frozen=True)
class _Job:
    strategies: tuple[StrategyConfig, ...]
    instances: dict[str, Strategy]  # each setting's strategy, by label (see resolve)
    done: frozenset[tuple[str, str]]
    windows: ContextWindows
    default_estimator: str
    summarizer: object
    judge: object
    out: Path
    # Token counts shared by every transcript a process replays: sessions of one dataset repeat
    # their system prompt and task texts. (Bounded: see TokenCache.)
    cache: TokenCache = field(default_factory=lambda: TokenCache(max_chars=CACHED_CHARS))

    def replay_file(self, transcripts: tuple[Transcript, ...]) -> tuple[str | None, list[Replays | None]]:
        """The file's hash for the run's metadata (taken here, beside the other reading, not by the
        run's process at the end) and each transcript's replays."""
        file_hash = _file_hash(Path(transcripts[0].source_path)) if transcripts else None
        return file_hash, [self.replay_transcript(t) for t in transcripts]

    def replay_transcript(self, transcript: Transcript) -> Replays | None:
        strategies = [s for s in self.strategies if (transcript.id, s.label) not in self.done]
        if not strategies:
            return None
        # One meter per estimator, shared by every strategy of this transcript: each message is
        # counted once for the whole run, however many settings replay it.
        meters: dict[str, Meter] = {}
        compaction_rows: list[dict] = []
        # calls.jsonl: per setting, the rows it shares with the uncompacted replay (formatted once
        # per estimator), then its own rows (formatted with every other setting's at the end).
        shared_rows: dict[str, SharedRows] = {}
        shared_texts: list[tuple[bytes, int]] = []  # (the shared rows' lines, how many own rows follow)
        parts: list[tuple[SharedRows, int, int]] = []  # per setting, for the arrays (see call_arrays)
        own: CallColumns = {name: [] for name in CALL_COLUMNS}
        # Settings that differ only in their trigger share each compaction of the same context.
        sharing = shared_by_setting({s.label: self.instances[s.label] for s in strategies})
        for strategy in strategies:
            instance = self.instances[strategy.label]
            estimator = strategy.estimator or getattr(instance, "estimator", self.default_estimator)
            if estimator not in meters:
                meters[estimator] = Meter(transcript, estimator, self.cache)
            replayed = replay(
                transcript, strategy, self.windows, summarizer=self.summarizer, meter=meters[estimator], strategy=sharing[strategy.label]
            )
            rows = [dict(vars(r)) for r in replayed.compactions]
            if self.judge is not None:  # next-action preservation with a model (bench/next_action.py)
                rows = score_compactions(self.judge, transcript, rows, replayed.compacted)
            compaction_rows += rows
            calls, shared = replayed.calls, replayed.shared_calls
            for name, values in calls.items():
                own[name] += values[shared:]
            rows_shared, added = shared_rows.setdefault(estimator, SharedRows()), len(calls["call"]) - shared
            shared_texts.append((rows_shared.first(shared, strategy.label, calls), added))
            parts.append((rows_shared, shared, added))
        labels = [s.label for s in strategies]
        arrays = call_arrays(transcript.id, labels, parts, own)
        part, call_bytes = self._part(shared_texts, json_rows(own), "".join(map(json_line, compaction_rows)))
        return Replays(labels, part, call_bytes, arrays, compaction_rows)

    def _part(self, shared_texts: list[tuple[bytes, int]], own_lines: list[str], compaction_lines: str) -> tuple[Path, int]:
        """Write the calls.jsonl lines of a transcript's settings, then its compactions.jsonl lines,
        to a part file; the part and the size of its calls.jsonl lines (see `Replays`)."""
        # Named by process and count (unique within the run; a killed run's parts are removed when
        # it is resumed): tempfile's random names cost more than the write of a small transcript's rows.
        part = self.out / f"{PART_PREFIX}{os.getpid()}-{next(_PART_NUMBERS)}.part"
        start = 0
        with os.fdopen(os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600), "wb") as file:
            for text, count in shared_texts:
                file.write(text)
                file.write("".join(own_lines[start : start + count]).encode("utf-8"))
                start += count
            call_bytes = file.tell()
            file.write(compaction_lines.encode("utf-8"))
        return part, call_bytes


_PART_NUMBERS = itertools.count()


def finish(
    out: Path, read: ReadInputs, resumed_units: int = 0, prices: dict | None = None,
    rows: tuple[list[dict[str, np.ndarray | TextCodes]], list[dict]] | None = None,
) -> RunResult:
    """Compute the metrics from the finished rows: `rows` (per-transcript call arrays and compaction
    rows) when given, else read back from `out`."""
    rows_by_model = groups = None
    if rows is not None:
        arrays, compaction_rows = rows
        arrays = [a for a in arrays if len(a["call"])]  # an empty array would make every column float
        calls = {}
        if arrays:
            coded = {name: joined_codes([a[name] for a in arrays]) for name in TEXT_COLUMNS}
            calls = {name: coded_text(coded[name]) if name in TEXT_COLUMNS else np.concatenate([a[name] for a in arrays]) for name in CALL_COLUMNS}
            rows_by_model, groups = rows_of_each(coded["model"]), summary_groups(coded["transcript"], coded["config"])
    else:
        done = _done_units(out / "done.jsonl")
        calls = [r for r in _read_jsonl(out / "calls.jsonl") if (r["transcript"], r["config"]) in done]
        compaction_rows = [r for r in _read_jsonl(out / "compactions.jsonl") if (r["transcript"], r["config"]) in done]
    calls = calls_frame(calls, resolve_prices(prices or None), rows_by_model)
    compactions = compactions_frame(compaction_rows)
    transcripts = transcript_summary(calls, compactions, groups)
    if not transcripts.empty:
        # A transcript with damaged (skipped) records lacks messages its recorded token counts
        # include, so its replay mixes two histories; it is replayed and shown, not ranked.
        damaged = {t.id for t in read.transcripts if t.skipped}
        transcripts["damaged"] = transcripts["transcript"].isin(damaged)
        transcripts.to_csv(out / "transcripts.csv", index=False)
    return RunResult(out, calls, compactions, transcripts, read, resumed_units)


def _done_units(path: Path) -> set[tuple[str, str]]:
    return {(r["transcript"], r["config"]) for r in _read_jsonl(path)}


def _read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            # A line cut off by an interruption: its unit has no done line, so it is replayed again.
            continue
    return rows


class _RowFiles:
    """The run's row files (`ROW_FILES` and done.jsonl), open for appending while it runs.

    Each write goes to the file at once (no buffer): a killed process loses nothing written, and
    done.jsonl is written after the rows. A write cut off by a kill leaves a partial last line:
    the first new row starts on a fresh line, so the partial one stays unreadable on its own
    instead of swallowing that row. (Every row ends with a newline, so only the first write can
    need one.)
    """

    def __init__(self, out: Path) -> None:
        self.out = out
        self.files: dict[str, int] = {}  # name -> descriptor, at the end of the file
        self.fresh_line: dict[str, bool] = {}

    def __enter__(self) -> _RowFiles:
        for name in (*ROW_FILES, "done.jsonl"):
            path = self.out / name
            self.fresh_line[name] = path.exists() and path.stat().st_size > 0 and _last_byte(path) != b"\n"
            # Not O_APPEND: the kernel copies a part into a file only without it (copy_file_range).
            self.files[name] = os.open(path, os.O_WRONLY | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o666)
            os.lseek(self.files[name], 0, os.SEEK_END)
        return self

    def __exit__(self, *exc) -> None:
        for descriptor in self.files.values():
            os.close(descriptor)

    def append(self, name: str, lines: str) -> None:
        if lines:
            self._start(name)
            _write_all(self.files[name], lines.encode("utf-8"))

    def append_part(self, part: Path, sections: list[tuple[str, int | None]]) -> None:
        """Append each section of the file `part` (a row file's name and the section's size, in
        order; None: the rest) to that row file, then remove the part. The kernel copies them where
        it can: a sweep's parts are a hundred megabytes, which this process would otherwise read
        and write again while the workers need the cores."""
        position, end = 0, part.stat().st_size
        with part.open("rb") as source:
            for name, size in sections:
                size = end - position if size is None else size
                if size:
                    self._start(name)
                    copied = _copied_in_kernel(source.fileno(), self.files[name], size)
                    if copied < size:
                        source.seek(position + copied)
                        _write_all(self.files[name], source.read(size - copied))
                    position += size
                    source.seek(position)  # where the next section starts (the kernel's copy moved it there too)
        part.unlink()

    def _start(self, name: str) -> None:
        if self.fresh_line[name]:
            _write_all(self.files[name], b"\n")
            self.fresh_line[name] = False


def _copied_in_kernel(source: int, target: int, size: int) -> int:
    """Copy up to `size` bytes from `source` to `target` with copy_file_range; how many it copied
    (less where the system or the file system does not offer it: the caller writes the rest)."""
    copied = 0
    try:
        while copied < size:
            step = os.copy_file_range(source, target, size - copied)
            if step == 0:
                break
            copied += step
    except (AttributeError, OSError):  # no copy_file_range here (not Linux), or not between these files
        pass
    return copied


def _write_all(descriptor: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(descriptor, view) :]


PART_PREFIX = ".calls-"


def _remove_parts(out: Path) -> None:
    for part in out.glob(PART_PREFIX + "*.part"):
        part.unlink(missing_ok=True)


def _last_byte(path: Path) -> bytes:
    with path.open("rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1)


def run_meta(read: ReadInputs, file_hashes: dict[str, str | None] | None = None) -> dict:
    """The run's metadata; `file_hashes`: the dataset files' hashes where they were taken already."""
    file_hashes = file_hashes or {}
    packages = ("compactlab", "pandas", "tiktoken", "openai", "anthropic", "matplotlib", "jinja2")
    return {
        "versions": {"python": platform.python_version(), **{p: _version(p) for p in packages}},
        "datasets": {t.source_path: file_hashes.get(t.source_path) or _file_hash(Path(t.source_path)) for t in read.transcripts},
        "prompts": {p.name: hashlib.sha256(p.read_bytes()).hexdigest()[:16] for p in sorted(PROMPTS_DIR.glob("*.j2"))},
        "transcripts": len(read.transcripts),
        "skipped_records": {t.id: len(t.skipped) for t in read.transcripts if t.skipped},
        "files_not_read": [{"path": str(f.path), "error": f.error} for f in read.failed],
    }


def _version(package: str) -> str | None:
    try:
        return version(package)
    except Exception:  # noqa: BLE001 - a missing package is reported as None, not a crash
        return None


def _file_hash(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError:
        return None
