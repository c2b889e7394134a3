"""The CI gate on compaction quality: running a suite and its baseline file.

(The commands `compactlab check` and `compactlab baseline`, and the markdown summary, are in
`bench/cli/gate_cli.py`.)

`baseline` runs a suite (`bench/gate/suite.py`) and writes, per strategy label and metric, the value of
every session, with the suite's hash, the compactlab version, the prompt hashes each strategy
used, each strategy's prompt templates (their hashes) and the model that read them
(`compactlab.gate.measured`: a check that did not measure a change is no result), and the hash of
every session file. It never overwrites a baseline without `--update`.

`check` runs the same suite and compares it with the baseline by the rule in `bench/gate/compare.py`.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pandas as pd

from compactlab.gate.answers import Answers, gate_summarizer
from compactlab.gate.compare import (  # noqa: F401 - the rule, re-exported where it used to live
    EPSILON,
    MAX_FLIPS_SHOWN,
    Comparison,
    Flip,
    Report,
    _number,
    compaction_document,
    compare,
    fmt,
    mean_of,
)
from compactlab.gate.fields import MAX_DEPTH, check_baseline
from compactlab.gate.measured import prompt_records
from compactlab.gate.power import fact_counts
from compactlab.gate.provenance import summarizer_record
from compactlab.gate.suite import Suite, SuiteError, metric_table, offline
from compactlab.results.compaction_values import CompactionValue, compaction_values
from compactlab.runs import runs
from compactlab.runs.run_storage import run_compaction_rows

# 2: each strategy records its templates' hashes and the model that read them; 3: `sessions`, which 2
# called `transcripts`; 4: `summarizer`, what wrote the summaries (`compactlab.gate.provenance`), and
# `sensitivity`, the suite's measured power (`compactlab.gate.power`); both optional when read.
FORMAT = 4
READ_FORMATS = (2, 3, FORMAT)  # a format 2 baseline is read with its key renamed (`_current`)


# --- running and the baseline file -----------------------------------------------------------------


@dataclass(frozen=True)
class SuiteRun:
    """A replay of a suite: the run result, its metric table (one row per session × strategy),
    the per-compaction values of its per-compaction metrics, where its summaries came from
    (`answers`: None without a [summarizer]) and what it measured of each setting's prompt templates."""

    result: Any
    table: pd.DataFrame
    values: list[CompactionValue]
    answers: Answers | None
    prompts: dict[str, dict]
    counts: dict = field(default_factory=dict)  # the facts behind each compaction's value (`power.fact_counts`)


def run_suite(suite: Suite, out: Path, offline_mode: bool = False, progress: bool = False) -> SuiteRun:
    """Replay the suite into `out` (`offline_mode`: recorded answers only, see `compactlab.gate.answers`)."""
    config = offline(suite.config) if offline_mode else suite.config
    try:
        summarizer, answers = gate_summarizer(config, offline_mode)
    except SuiteError:  # a damaged recorded answer: its message names the file
        raise
    except ValueError as exc:
        raise SuiteError(f"{suite.path}: {exc}") from exc
    result = runs.run(config, out, progress=progress, summarizer=summarizer)
    _ = result.compactions  # read while `out` exists: it may be a temporary folder (the prompt hashes need them)
    rows = list(run_compaction_rows(out))
    values = list(compaction_values(rows))
    counts = fact_counts(rows, [m.name for m in suite.metrics])
    return SuiteRun(result, metric_table(out, result.sessions), values, answers, prompt_records(suite, answers), counts)


def baseline_document(suite: Suite, run: SuiteRun) -> dict:
    result, table, per_compaction = run.result, run.table, run.values
    labels = [s.label for s in suite.config.strategies]
    values = {}
    for label in labels:
        rows = table[table["setting"] == label].set_index("session").sort_index() if not table.empty else pd.DataFrame()
        values[label] = {
            m.name: {t: _number(v) for t, v in rows[m.name].items()} if m.name in rows else {} for m in suite.metrics
        }
    return {
        "format": FORMAT,
        "compactlab": compactlab_version(),
        "suite": {"file": suite.path.name, "hash": suite.hash},
        "summarizer": summarizer_record(suite),  # provider, model, base URL host, parameters (None: no [summarizer])
        "metrics": {m.name: {k: v for k, v in m.written().items() if k != "name"} for m in suite.metrics},
        "strategies": {
            label: {
                "entry": suite.strategies_written.get(label, {}),
                "prompt_hashes": prompt_hashes(result.compactions, label),
                **run.prompts[label],  # each template's hash and the model that read them (None: none did)
            }
            for label in labels
        },
        "sessions": {
            t.id: {"file": _relative(t.source_path, suite.path.parent), "sha256": file_hash(t.source_path)}
            for t in sorted(result.read.sessions, key=lambda t: t.id)
        },
        "values": values,
        "compactions": compaction_document(suite, list(per_compaction)),
    }


def read_baseline(path: Path, suite_path: Path, any_format: bool = False) -> dict:
    """The baseline file (`any_format`: of an earlier format too, for saying what an update changed)."""
    if not path.exists():
        raise SuiteError(
            f"no baseline at {path}: create it with `compactlab baseline --suite {suite_path} --baseline {path}` and commit it"
        )
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # JSONDecodeError, or bytes that are not UTF-8
        raise SuiteError(f"{path}: not a readable baseline file ({exc})") from exc
    except RecursionError:  # arrays nested hundreds deep: the JSON parser recurses into each
        raise SuiteError(f"{path}: lists or tables nested deeper than {MAX_DEPTH} levels: not a baseline") from None
    if (
        not isinstance(document, dict)
        or (document.get("format") not in READ_FORMATS and not any_format)
        or not isinstance(document.get("values"), dict)
    ):
        raise SuiteError(f"{path}: not a compactlab baseline of format {FORMAT}; recreate it with `compactlab baseline --update`")
    return check_baseline(_current(document), path)


def _current(document: dict) -> dict:
    """A baseline as this format holds it: format 2 named the session files' hashes `transcripts`."""
    if document.get("format") != 2 or "transcripts" not in document:
        return document
    upgraded = {key: value for key, value in document.items() if key != "transcripts"}
    return {**upgraded, "sessions": document["transcripts"], "format": 3}  # no `summarizer` yet (format 4)


def write_baseline(path: Path, document: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=1, sort_keys=True, allow_nan=False) + "\n", encoding="utf-8")


def check_matches(suite: Suite, baseline: dict, baseline_path: Path) -> None:
    """Exit-2 problems: strategies or metrics the suite and the baseline do not share."""
    update = f"if the change is deliberate, run `compactlab baseline --suite {suite.path} --baseline {baseline_path} --update`"
    # A baseline of another suite file holds values of other runs: a comparison with them means nothing. (The
    # same suite changed since its baseline, its hash with it, is what a check is for: a pull request's
    # change to a setting or a template; `changes_since` says so.)
    if baseline["suite"]["file"] != suite.path.name:
        raise SuiteError(
            f"{baseline_path} was made from another suite, {baseline['suite']['file']} (hash {baseline['suite']['hash']}), "
            f"not {suite.path.name}: check each suite against its own baseline, or {update.removeprefix('if the change is deliberate, ')}"
        )
    labels = [s.label for s in suite.config.strategies]
    missing = [label for label in labels if label not in baseline["values"]]
    if missing:
        raise SuiteError(f"the baseline has no strategy {', '.join(map(repr, missing))} of the suite; {update}")
    for label in labels:
        absent = [m.name for m in suite.metrics if m.name not in baseline["values"][label]]
        if absent:
            raise SuiteError(f"the baseline has no values of {', '.join(absent)} for {label!r}; {update}")


def stale_strategies(suite: Suite, baseline: dict) -> list[str]:
    labels = {s.label for s in suite.config.strategies}
    return sorted(set(baseline["values"]) - labels)


# --- small helpers -----------------------------------------------------------------------------------


def flat_entry(entry: dict) -> dict:
    """A strategy entry with its `settings` table spelled out as `settings.KEY`."""
    flat = {k: v for k, v in entry.items() if k != "settings"}
    flat.update({f"settings.{k}": v for k, v in (entry.get("settings") or {}).items()})
    return flat


def prompt_hashes(compactions: pd.DataFrame, label: str) -> list[str]:
    if compactions.empty or "prompt_hash" not in compactions:
        return []
    return sorted({h for h in compactions.loc[compactions["setting"] == label, "prompt_hash"] if isinstance(h, str) and h})


def _relative(path: str, folder: Path) -> str:
    try:
        return Path(os.path.relpath(Path(path).resolve(), folder.resolve())).as_posix()
    except ValueError:  # another drive on Windows
        return str(path)


def file_hash(path: str) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
    except OSError:
        return None


def compactlab_version() -> str | None:
    try:
        return version("compactlab")
    except Exception:  # noqa: BLE001 - not installed as a package
        return None
