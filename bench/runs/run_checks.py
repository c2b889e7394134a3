"""Check first, then work: everything a run can be refused for, found before it writes anything.

`check_run` checks the configuration (its numbers, strategies, estimators, prices, LLM tables), the
output folder (not inside a dataset, not a file, not busy, not a finished run unless replaced or
resumed with the same configuration), the datasets (every file there, unchanged since a run being
resumed read it), and, in a pass over the session files (`compactlab.runs.prescan`), the models and
sizes of the sessions: a `--context-window` key no model has, or a window smaller than every
session's smallest possible prompt. A refused run leaves the folder as it was: no folder, no
`.lock`, no config.json. `compactlab.runs.runs.run` calls it first (the command line calls it
before it takes the run directory's lock, and hands its result on).

The one refusal left to after the replay is a window no session fits where the pass could only
bound some sessions' floors (their real compactions come before their calls); `undo_run` then
removes what the run created, so the folder takes a new run.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from compactlab.contract import Strategy
from compactlab.llm.concurrency import CallAccount, check_budget_prices, llm_completers
from compactlab.llm.prices import resolve_prices
from compactlab.replay.setting import estimator_of, window_and_trigger
from compactlab.results.unfit_sessions import unfit_window_message
from compactlab.runs.llm_config import make_run_judge
from compactlab.runs.prescan import SessionShape, prescan
from compactlab.runs.run_config import RunConfig, check_setting_numbers, config_json, default_strategies, windows_of
from compactlab.runs.run_files import DONE, DoneLog, RunLock, read_done
from compactlab.runs.run_format import resumable
from compactlab.runs.session_job import hash_of_file
from compactlab.scoring.next_action import Judge
from compactlab.sessions.datasets import Inputs, resolve_inputs
from compactlab.sessions.output_folder import check_output_folder
from compactlab.strategies.registry import get_strategy
from compactlab.tokens.estimators import get_estimator


@dataclass(frozen=True)
class CheckedRun:
    """A run that passed every check: what it replays, and the output folder's entries before it."""

    config: RunConfig  # with its default strategies and estimators filled in (`resolve`)
    instances: dict[str, Strategy]  # each setting's strategy, by label
    inputs: Inputs  # the session files (the first `limit` of them)
    shapes: tuple[SessionShape, ...]
    judge: Judge | None  # the run's model judge (None: none)
    before: frozenset[str] | None  # the output folder's paths before the run (None: there was no folder)


def resolve(config: RunConfig) -> tuple[RunConfig, dict[str, Strategy]]:
    """The configuration with its default strategies and estimator filled in, and each setting's
    strategy by label: made once for the whole run (a strategy is a frozen dataclass, without
    state), and a typo fails here, before anything is replayed."""
    resolved, instances = [], {}  # (and the window for the run's data, `RunConfig.for_its_data`)
    for entry in config.strategies or default_strategies():
        strategy = instances[entry.label] = get_strategy(entry.strategy, **dict(entry.settings))
        check_setting_numbers(strategy, dict(entry.settings), f"strategy {entry.label!r}")
        if entry.estimator is None and getattr(strategy, "estimator", None) is None:  # it carries none: the run's
            entry = replace(entry, estimator=config.estimator)
        resolved.append(entry)
    return replace(config.for_its_data(), strategies=tuple(resolved)), instances


def run_config_json(config: RunConfig, limit: int | None) -> dict:
    """config.json: the configuration, and the --limit a run was started with (only when set, so a run
    without one reads as before)."""
    return {**config_json(config), **({"limit": limit} if limit is not None else {})}


def check_run(
    config: RunConfig,
    out: str | Path,
    *,
    resume: bool = False,
    overwrite: bool = False,
    limit: int | None = None,
    workers: int | None = None,
    summarizer=None,
    judge=None,
    executor=None,
    progress: bool = False,
) -> CheckedRun:
    """`config` replayed into `out` as `compactlab.runs.runs.run` takes them, checked; or the error
    that refuses it, before anything is written."""
    if limit is not None and limit < 1:
        raise ValueError(f"--limit: {limit} out of range: the number of sessions (files) to replay, at least 1")
    if workers is not None and workers < 1:
        raise ValueError(f"--workers: {workers} out of range: at least 1 process")
    out = Path(out)
    config, instances = resolve(config.checked("the run configuration"))
    for name in dict.fromkeys([config.estimator, *(estimator_of(instances[s.label], s.estimator) for s in config.strategies)]):
        get_estimator(name)  # an unknown name is a KeyError naming the known ones
    resolve_prices(config.prices or None)
    check_output_folder(out, list(config.datasets) or None)
    before = _check_folder(out, run_config_json(config, limit), resume, overwrite)
    judge = judge if judge is not None else make_run_judge(config)
    if executor is not None and (summarizer is not None or judge is not None):
        raise ValueError(
            "a run with an LLM summarizer or judge stays in one process (its call cache and concurrency limit live there): "
            "run it without --executor dask"
        )
    check_budget_prices(llm_completers(summarizer, judge), CallAccount(config.max_cost_usd))
    inputs = resolve_inputs(list(config.datasets) or None)
    if limit is not None:
        inputs = replace(inputs, files=inputs.files[:limit])
    if resume:
        check_unchanged(out, read_done(out / DONE), inputs.files)
    # (An LLM summarizer or judge keeps the run in one process; so does its pass over the files.)
    in_one = summarizer is not None or judge is not None
    shapes = prescan(inputs.files, inputs.lenient_files, config.lenient, 1 if in_one else workers, progress, inputs.links_out)
    windows = windows_of(config)
    windows.check_overrides(model for shape in shapes for model in shape.models)
    _check_window_fits(shapes, config, instances)
    return CheckedRun(config, instances, inputs, shapes, judge, before)


def _check_folder(out: Path, configuration: dict, resume: bool, overwrite: bool) -> frozenset[str] | None:
    """The output folder's paths (None: there is none yet), once a run may write there."""
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out}: --out names a file: give a folder (a new one, or a run directory to continue with --resume)")
    if not out.is_dir():
        return None
    RunLock.check_free(out)
    if not resume and (out / DONE).exists() and not overwrite:
        raise ValueError(f"{out} already holds a run: use --resume to continue it, or another --out")
    if resume:
        resumable(out)  # a directory of another format is refused, naming it
    if resume and (out / "config.json").exists():
        previous = json.loads((out / "config.json").read_text())
        if previous != json.loads(json.dumps(configuration)):  # as config.json holds it (tuples are lists)
            raise ValueError(f"{out}: --resume with a different configuration than the run was started with")
    return frozenset(path.relative_to(out).as_posix() for path in out.rglob("*"))


def check_unchanged(out: Path, log: DoneLog, files: Sequence[Path]) -> None:
    """Before any work: every dataset file whose rows the run holds is still there, as it was."""
    listed = set(map(str, files))
    for file, recorded in sorted(log.file_hashes.items()):
        if file not in listed:
            raise ValueError(
                f"{out}: --resume: {file} (read by this run) is gone or no longer among the datasets; "
                f"restore it, or start a new run (another --out)"
            )
        now = hash_of_file(Path(file))
        if now != recorded:
            raise ValueError(
                f"{out}: --resume: {file} changed since this run replayed it (sha256 {recorded}, now {now}): "
                f"its finished rows no longer match it; restore the file, or start a new run (another --out)"
            )


def _check_window_fits(shapes: Sequence[SessionShape], config: RunConfig, instances: dict[str, Strategy]) -> None:
    """A window smaller than every session's smallest possible prompt measures nothing: refused, as the
    replay's check refuses it (`check_window_fits_some_session`), when the pass knows every session's
    floor is over the largest window any setting replays it at."""
    windows = windows_of(config)
    replayed = [shape for shape in shapes if shape.first_model is not None]
    largest: dict[str, int] = {}
    for shape in replayed:
        if shape.floor is None:
            return  # a floor only the replay can measure
        assert shape.first_model is not None
        largest[shape.id] = max(
            window_and_trigger(instances[s.label], s.trigger, windows, shape.first_model, shape.recorded_window)[0]
            for s in config.strategies
        )
        if shape.floor <= largest[shape.id]:
            return
    if not replayed:
        return
    smallest = min(replayed, key=lambda s: (s.fixed or 0, s.id))
    raise ValueError(
        unfit_window_message(
            len(replayed),
            max(largest.values()),
            smallest.fixed or 0,
            smallest.id,
            min(s.floor or 0 for s in replayed),
        )
    )


def undo_run(out: Path, before: frozenset[str] | None) -> None:
    """Remove what a refused run created in `out`: the whole folder when there was none, else every
    path that was not there before (what was there stays)."""
    if before is None:
        shutil.rmtree(out, ignore_errors=True)
        return
    for path in sorted(out.rglob("*"), key=lambda p: len(p.parts), reverse=True):  # deepest first
        if path.relative_to(out).as_posix() in before:
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
