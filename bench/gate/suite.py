"""Regression suites: a run configuration plus the metrics a CI gate guards (`compactlab check`).

A suite is a TOML file with every key of a run configuration (`bench/runs/run_config.py`) and two
more tables:

    datasets = ["../../datasets/m-claude/sessions/21e3c711-....jsonl.gz", "mini-swe-agent-pr816"]
    window = 32000

    [[strategy]]
    name = "summarize"
    settings = { template = "prompts/summary.j2" }   # a path relative to this file, or a bundled name

    [summarizer]                                      # only for strategies with summarizer = "llm"
    provider = "openai"
    model = "gpt-4.1-mini"
    cache_dir = "llm-cache"                           # commit it; CI replays it with --offline

    [metrics.preservation_k5]                         # one table per guarded metric
    direction = "higher"                              # which way is better: higher | lower (default: the catalogue's)
    tolerance = 0.01                                  # change allowed before it can count as a regression
                                                      # (default: the catalogue's)
    [metrics.total_cost]
    direction = "lower"
    tolerance = 0.02
    relative = true                                   # tolerance as a share of the baseline mean
    [metrics.summary_recall_k5]
    tolerance = 0.05
    relative_tolerance = 0.25                         # and a share of the baseline mean: the stricter applies

    [gate]                                            # optional: the paired bootstrap's settings
    confidence = 0.95
    resamples = 10000
    seed = 0

Relative paths (datasets, `*template` settings, `file.py:Name` strategies, cache_dir) are read
relative to the suite file, so a suite works from any working directory. A metric is one of
`compactlab.results.catalogue.METRICS`: a column of `compactlab.results.metrics.session_summary` (one value per session
× strategy) or a per-kind next-step preservation, `preservation_k1_path` ... `preservation_k5_number`:
the share of the needed items of that kind (path, identifier, command, url, error, number) still in
the compacted context. Its direction and tolerance default to the catalogue's (for summary recall and
the per-kind preservations, shares whose baseline is often small, also a relative tolerance of 0.25).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import os
import re
import tomllib
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import pandas as pd

from compactlab.gate.fields import MAX_DEPTH, SuiteError, check_depth, value_range
from compactlab.results.catalogue import BY_NAME, KIND_METRICS
from compactlab.results.compaction_values import compaction_values
from compactlab.runs.run_config import RunConfig, config_from_data
from compactlab.runs.run_storage import run_compaction_rows
from compactlab.sessions.datasets import list_datasets

# Every per-session metric of the catalogue, whose label, direction and default tolerance a suite's
# [metrics] table starts from.
KNOWN_METRICS = tuple(BY_NAME)
RUN_KEYS = frozenset({f.name for f in fields(RunConfig)} | {"strategy"})
SUITE_KEYS = frozenset({"metrics", "gate"})
METRIC_KEYS = frozenset({"direction", "tolerance", "relative", "relative_tolerance"})
GATE_DEFAULTS = {"confidence": 0.95, "resamples": 10_000, "seed": 0}
# The bootstrap holds resamples × sessions draws (8 bytes each, a few arrays of them): 100,000 × 1,000 sessions
# is 0.8 GB an array. More resamples buy nothing: at 100,000 the Monte Carlo error of a 95% percentile bound
# is under 1% of the interval's width, ten times finer than the default 10,000 gives.
MAX_RESAMPLES = 100_000


@dataclass(frozen=True)
class MetricSpec:
    name: str
    direction: str  # "higher" or "lower": which way is better
    tolerance: float = 0.0
    relative: bool = False  # tolerance is a share of the baseline mean (per session: of its baseline value)
    # A second tolerance, as a share of the baseline mean; with `tolerance` the stricter applies.
    relative_tolerance: float | None = None

    def allowed(self, reference: float) -> float:
        """The absolute change allowed around `reference` before a change counts."""
        allowed = self.tolerance * abs(reference) if self.relative else self.tolerance
        if self.relative_tolerance is not None:
            allowed = min(allowed, self.relative_tolerance * abs(reference))
        return allowed

    def written(self) -> dict:
        """The spec as the suite's hash and the baseline record it (no `relative_tolerance` key when
        there is none, so a suite written before it keeps its hash)."""
        return {k: v for k, v in self.__dict__.items() if not (k == "relative_tolerance" and v is None)}

    def gain(self, change: float) -> float:
        """A change expressed so that positive is better."""
        return change if self.direction == "higher" else -change


@dataclass(frozen=True)
class Suite:
    path: Path
    config: RunConfig  # paths resolved relative to the suite file
    metrics: tuple[MetricSpec, ...]
    confidence: float
    resamples: int
    seed: int
    written: dict  # the suite as written (before resolving paths): what its hash covers
    hash: str
    strategies_written: dict  # label -> the strategy entry as written (for "what changed" notes)


def load_suite(path: Path) -> Suite:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SuiteError(f"suite file {path} not found") from None
    except OSError as exc:
        raise SuiteError(f"{path}: cannot read the suite: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise SuiteError(f"{path}: invalid TOML: {exc}") from exc
    except RecursionError:  # arrays nested hundreds deep: tomllib recurses into each
        raise SuiteError(f"{path}: lists or tables nested deeper than {MAX_DEPTH} levels: not a suite") from None
    check_depth(data, path)
    unknown = sorted(set(data) - RUN_KEYS - SUITE_KEYS)
    if unknown:
        raise SuiteError(f"{path}: unknown settings {_hints(unknown, RUN_KEYS | SUITE_KEYS)}")
    metrics = _metrics(data.get("metrics"), path)
    gate = _gate(data.get("gate", {}), path)
    run_part = {k: v for k, v in data.items() if k not in SUITE_KEYS}
    config = config_from_data(_resolve_paths(_from_environment(run_part, path), path), path)
    if not config.strategies:
        raise SuiteError(f"{path}: a suite names its strategies (`strategies = [...]` or [[strategy]] tables)")
    written = {"run": run_part, "metrics": [m.written() for m in metrics], "gate": gate}
    digest = hashlib.sha256(json.dumps(written, sort_keys=True, default=str).encode("utf-8")).hexdigest()[:16]
    # config_from_data lists `strategies` entries first, then [[strategy]] tables: the same order here.
    entries = [*run_part.get("strategies", []), *run_part.get("strategy", [])]
    as_written = {s.label: e if isinstance(e, dict) else {"name": e} for s, e in zip(config.strategies, entries)}
    return Suite(path, config, metrics, gate["confidence"], gate["resamples"], gate["seed"], written, digest, as_written)


def _hints(names: list[str], known) -> str:
    parts = []
    for name in names:
        close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
        parts.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    return ", ".join(parts)


def _metrics(table: object, path: Path) -> tuple[MetricSpec, ...]:
    if not isinstance(table, dict) or not table:
        raise SuiteError(
            f"{path}: a suite needs a [metrics] table, one entry per guarded metric, e.g.\n"
            '  [metrics.preservation_k5]\n  direction = "higher"\n  tolerance = 0.01'
        )
    unknown = [name for name in table if name not in KNOWN_METRICS]
    if unknown:
        raise SuiteError(f"{path}: unknown metric {_hints(unknown, KNOWN_METRICS)}; known: {', '.join(KNOWN_METRICS)}")
    specs = []
    for name, entry in table.items():
        where = f"{path}: [metrics.{name}]"
        if not isinstance(entry, dict):
            raise SuiteError(f'{where} must be a table with `direction` ("higher" or "lower") and `tolerance`')
        extra = sorted(set(entry) - METRIC_KEYS)
        if extra:
            raise SuiteError(f"{where}: unknown keys {_hints(extra, METRIC_KEYS)}; known: {', '.join(sorted(METRIC_KEYS))}")
        known = BY_NAME[name]
        direction = entry.get("direction", known.direction)
        if direction not in ("higher", "lower"):
            raise SuiteError(
                f'{where}: `direction` must be "higher" or "lower" (which way is better), got {direction!r}'
                + (" (the catalogue gives this metric no better direction)" if "direction" not in entry else "")
            )
        tolerance = entry.get("tolerance", known.tolerance)
        if not _finite(tolerance):  # TOML has inf and nan: a tolerance nothing exceeds, or compares with
            raise SuiteError(f"{where}: `tolerance` must be a finite number ≥ 0, got {tolerance!r}")
        relative = entry.get("relative", False)
        if not isinstance(relative, bool):
            raise SuiteError(f"{where}: `relative` must be true or false, got {relative!r}")
        # The catalogue's relative default applies to a metric whose tolerance the suite leaves to it.
        share = entry.get("relative_tolerance", None if "tolerance" in entry or relative else known.relative_tolerance)
        if share is not None and not _finite(share):
            raise SuiteError(
                f"{where}: `relative_tolerance` must be a finite number ≥ 0 (a share of the baseline mean), got {share!r}"
            )
        spec = MetricSpec(name, direction, float(tolerance), relative, None if share is None else float(share))
        unfailable = _unfailable(spec)
        if unfailable:
            raise SuiteError(f"{where}: {unfailable}, so this check could never fail; choose a smaller tolerance")
        specs.append(spec)
    return tuple(specs)


def _finite(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value) and value >= 0


def _unfailable(spec: MetricSpec) -> str:
    """Why no change of the metric can exceed the spec's tolerances ('' when one can). The stricter of
    the two tolerances applies, so the check can fail when either of them can be exceeded: an absolute
    one below the width of the metric's range, a relative one below 1 unless the loss it measures is
    bounded by the baseline (a figure ≥ 0 where higher is better loses at most all of itself)."""
    low, high = value_range(spec.name)
    bounded_loss = low == 0 and spec.direction == "higher"
    reasons = []
    for share, relative in ((spec.tolerance, spec.relative), (spec.relative_tolerance, True)):
        if share is None:
            continue
        if relative and bounded_loss and share >= 1:
            reasons.append(f"a relative tolerance of {share:g} allows a loss of all of the baseline")
        elif not relative and share >= high - low:
            reasons.append(f"`tolerance` = {share:g} is at least the width of the metric's range [{low:g}, {high:g}]")
        else:
            return ""
    return " and ".join(reasons)


def _gate(table: object, path: Path) -> dict:
    if not isinstance(table, dict):
        raise SuiteError(f"{path}: [gate] must be a table")
    extra = sorted(set(table) - set(GATE_DEFAULTS))
    if extra:
        raise SuiteError(f"{path}: [gate]: unknown keys {_hints(extra, GATE_DEFAULTS)}; known: {', '.join(GATE_DEFAULTS)}")
    gate = {**GATE_DEFAULTS, **table}
    if not isinstance(gate["confidence"], float) or not 0 < gate["confidence"] < 1:
        raise SuiteError(f"{path}: [gate] confidence must be between 0 and 1, got {gate['confidence']!r}")
    for key, low, high in (("resamples", 100, MAX_RESAMPLES), ("seed", 0, None)):
        if not isinstance(gate[key], int) or isinstance(gate[key], bool) or gate[key] < low or gate[key] > (high or gate[key]):
            bounds = f"from {low} to {high:,}" if high else f"≥ {low}"
            raise SuiteError(f"{path}: [gate] {key} must be a whole number {bounds}, got {gate[key]!r}")
    return gate


_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
# The environment variables a suite may read, one per purpose (the ones `compactlab init` writes): what
# provider and model write the summaries, the server's address, and the NAME of the variable holding the
# key (the key itself is read by the client, never into the suite). A suite file comes with a pull
# request: a `${NAME}` of any other variable would copy it, a CI secret say, into the baseline, the
# recorded answers and the comment the check's markdown becomes.
_PURPOSES = {"provider": "PROVIDER", "model": "MODEL", "base_url": "BASE_URL", "api_key_env": "KEY_ENV"}
ENVIRONMENT = {
    "summarizer": {key: f"COMPACTLAB_{name}" for key, name in _PURPOSES.items()},
    "judge": {key: f"COMPACTLAB_JUDGE_{name}" for key, name in _PURPOSES.items()},
}


def _from_environment(data: dict, path: Path) -> dict:
    """The [summarizer] and [judge] tables with `${NAME}` / `${NAME:-default}` in their strings taken
    from the environment, so one suite serves every CI job (provider, model and key variable set
    per job); an unset variable without a default is an error naming it, and so is a variable that
    is not the one of its key (`ENVIRONMENT`)."""
    data = dict(data)

    def value(table: str, key: str, text: str) -> str:
        def one(found: re.Match) -> str:
            name, default = found.group(1), found.group(2)
            allowed = ENVIRONMENT[table].get(key)
            if name != allowed:
                readable = ", ".join(f"{k} from {v}" for k, v in ENVIRONMENT[table].items())
                raise SuiteError(
                    f"{path}: [{table}] {key} reads the environment variable {name}, which a suite may not read: "
                    f"it reads only {readable} (so that no other variable, a CI secret say, is copied into the "
                    "baseline, the recorded answers or the check's markdown)"
                )
            if os.environ.get(name, "") != "":
                return os.environ[name]
            if default is None:
                raise SuiteError(
                    f"{path}: [{table}] {key} = {text!r}: the environment variable {name} is not set (and no default given)"
                )
            return default

        return _VARIABLE.sub(one, text)

    for table in ("summarizer", "judge"):
        if isinstance(data.get(table), dict):
            expanded = {k: value(table, k, v) if isinstance(v, str) else v for k, v in data[table].items()}
            # `${NAME:-}` unset: the key is left out (its default applies), e.g. base_url for the provider's own.
            data[table] = {k: v for k, v in expanded.items() if not (v == "" and _VARIABLE.search(data[table][k]))}
    return data


def _resolve_paths(data: dict, path: Path) -> dict:
    """The run part of a suite with its relative paths made relative to the suite's folder; a
    [summarizer] without `cache_dir` keeps its recorded answers in `<suite stem>-answers/` beside it."""
    folder = path.parent
    data = dict(data)
    if isinstance(data.get("summarizer"), dict) and "cache_dir" not in data["summarizer"]:
        data["summarizer"] = {**data["summarizer"], "cache_dir": f"{path.stem}-answers"}
    bundled = {d.name for d in list_datasets()}

    def local(value: object) -> object:
        if isinstance(value, str) and value and not Path(value).is_absolute() and (folder / value).exists():
            return str((folder / value).resolve())
        return value

    datasets = data.get("datasets", [])
    data["datasets"] = [
        entry if entry in bundled else local(entry) for entry in ([datasets] if isinstance(datasets, str) else datasets)
    ]
    for key in ("strategies", "strategy"):
        entries = data.get(key, [])
        if isinstance(entries, list):
            data[key] = [_resolve_strategy(entry, local) for entry in entries]
    for key in ("summarizer", "judge"):
        table = data.get(key)
        if isinstance(table, dict) and isinstance(table.get("cache_dir"), str) and not Path(table["cache_dir"]).is_absolute():
            data[key] = {**table, "cache_dir": str((folder / table["cache_dir"]).resolve())}
    return data


def _resolve_strategy(entry: object, local) -> object:
    if not isinstance(entry, dict):
        return entry
    entry = dict(entry)
    name = entry.get("name")
    if isinstance(name, str) and ":" in name:
        file, _, attribute = name.rpartition(":")
        entry["name"] = f"{local(file)}:{attribute}"
    settings = entry.get("settings")
    if isinstance(settings, dict):
        entry["settings"] = {k: local(v) if k.endswith("template") else v for k, v in settings.items()}
    return entry


def select(suite: Suite, labels: list[str] | None) -> Suite:
    """The suite restricted to the strategies labelled `labels` (None: all)."""
    if not labels:
        return suite
    known = [s.label for s in suite.config.strategies]
    unknown = [label for label in labels if label not in known]
    if unknown:
        raise SuiteError(f"{suite.path}: no strategy labelled {_hints(unknown, known)}; the suite has: {', '.join(known)}")
    chosen = tuple(s for s in suite.config.strategies if s.label in labels)
    return replace(suite, config=replace(suite.config, strategies=chosen))


def offline(config: RunConfig) -> RunConfig:
    """The configuration with its LLM tables reading recorded responses only (CacheMiss otherwise)."""
    changes: dict[str, Any] = {
        key: {**getattr(config, key), "mode": "offline"} for key in ("summarizer", "judge") if getattr(config, key, None)
    }
    return replace(config, **changes)


def lost_items(out: Path) -> dict[tuple[str, str], list[str]]:
    """The items ("kind:text") each session's compactions lost, by (session, metric), as each metric's
    catalogue entry counts them (`compactlab.results.compaction_values`), each item once."""
    found: dict[tuple[str, str], dict[str, None]] = {}
    for v in compaction_values(run_compaction_rows(out)):
        found.setdefault((v.session, v.metric), {}).update(dict.fromkeys(v.lost))
    return {key: list(items) for key, items in found.items()}


def metric_table(out: Path, sessions: pd.DataFrame) -> pd.DataFrame:
    """`sessions` (a run's session_summary) plus the per-kind preservation columns, from the
    run directory's compaction rows."""
    records = [
        {"session": v.session, "setting": v.setting, "column": v.metric, "score": v.value}
        for v in compaction_values(run_compaction_rows(out))
        if v.metric in KIND_METRICS
    ]
    table = sessions.copy()
    if records:
        kinds = pd.DataFrame(records).pivot_table(index=["session", "setting"], columns="column", values="score", aggfunc="mean")
        table = table.join(kinds, on=["session", "setting"])
    for column in KIND_METRICS:
        if column not in table:
            table[column] = float("nan")
    return table
