"""`compactlab check` and `compactlab baseline`: a CI gate on compaction quality.

`baseline` runs a suite (`bench/suite.py`) and writes, per strategy label and metric, the value of
every transcript, with the suite's hash, the compactlab version, the prompt hashes each strategy
used and the hash of every transcript file. It never overwrites a baseline without `--update`.

`check` runs the same suite and compares it with the baseline, per strategy and metric, on the
transcripts both hold a value for. The regression rule, for a metric with tolerance t:

    d_i  = new_i − baseline_i for each shared transcript i, signed so that positive is better
           (−d_i for metrics where lower is better)
    [lo, hi] = the paired percentile-bootstrap interval of mean(d) (`paired_bootstrap`: the
           transcript is the resampled unit; `[gate]` confidence, resamples, seed)
    t_abs = t, or t × |baseline mean| when the metric is `relative`
    regression   ⇔  hi < −t_abs    (the whole interval is worse than the tolerance)
    improvement  ⇔  lo > +t_abs

So a change that helps some transcripts and hurts others by chance does not fail a build, and
neither does a consistent change smaller than the tolerance. A metric that had values in the
baseline and has none now (e.g. a strategy stopped compacting) also fails. Exit codes: 0 pass,
1 regression, 2 usage or configuration error (including a missing recording in offline mode).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
import tempfile
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pandas as pd

from bench import runs
from bench.llm import CacheMiss
from bench.llm_config import make_run_summarizer
from bench.statistics import paired_bootstrap
from bench.suite import MetricSpec, Suite, SuiteError, load_suite, metric_table, offline, select

FORMAT = 1
MAX_FLIPS_SHOWN = 10
EPSILON = 1e-12  # float noise below which two values are the same


@dataclass(frozen=True)
class Flip:
    transcript: str
    baseline: float
    new: float
    worse: bool


@dataclass(frozen=True)
class Comparison:
    label: str
    metric: MetricSpec
    baseline: float  # means over the shared transcripts
    new: float
    change: float  # mean(new − baseline)
    low: float
    high: float
    n: int
    verdict: str  # regression | improved | ok | unchanged | no values | n/a
    flips: tuple[Flip, ...] = ()
    missing: int = 0  # baseline transcripts with a value that have none in the new run


@dataclass
class Report:
    comparisons: list[Comparison]
    notes: list[str] = field(default_factory=list)
    suite: str = ""
    baseline: str = ""
    transcripts: int = 0

    @property
    def regressions(self) -> list[Comparison]:
        return [c for c in self.comparisons if c.verdict in ("regression", "no values")]


# --- running and the baseline file -----------------------------------------------------------------


def run_suite(suite: Suite, out: Path, offline_mode: bool = False, progress: bool = False):
    """Replay the suite into `out`; the run result and its metric table (one row per transcript × strategy)."""
    config = offline(suite.config) if offline_mode else suite.config
    result = runs.run(config, out, progress=progress, summarizer=make_run_summarizer(config))
    return result, metric_table(out, result.transcripts)


def baseline_document(suite: Suite, result, table: pd.DataFrame) -> dict:
    labels = [s.label for s in suite.config.strategies]
    values = {}
    for label in labels:
        rows = table[table["config"] == label].set_index("transcript").sort_index()
        values[label] = {m.name: {t: _number(v) for t, v in rows[m.name].items()} for m in suite.metrics}
    return {
        "format": FORMAT,
        "compactlab": _version(),
        "suite": {"file": suite.path.name, "hash": suite.hash},
        "metrics": {m.name: {"direction": m.direction, "tolerance": m.tolerance, "relative": m.relative} for m in suite.metrics},
        "strategies": {
            label: {"entry": suite.strategies_written.get(label, {}), "prompt_hashes": _prompt_hashes(result.compactions, label)}
            for label in labels
        },
        "transcripts": {
            t.id: {"file": _relative(t.source_path, suite.path.parent), "sha256": _file_hash(t.source_path)}
            for t in sorted(result.loaded.transcripts, key=lambda t: t.id)
        },
        "values": values,
    }


def read_baseline(path: Path, suite_path: Path) -> dict:
    if not path.exists():
        raise SuiteError(
            f"no baseline at {path}: create it with `compactlab baseline --suite {suite_path} --baseline {path}` and commit it"
        )
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise SuiteError(f"{path}: not a readable baseline file ({exc})") from exc
    if not isinstance(document, dict) or document.get("format") != FORMAT or not isinstance(document.get("values"), dict):
        raise SuiteError(f"{path}: not a compactlab baseline of format {FORMAT}; recreate it with `compactlab baseline --update`")
    return document


def write_baseline(path: Path, document: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=1, sort_keys=True, allow_nan=False) + "\n", encoding="utf-8")


def check_matches(suite: Suite, baseline: dict, baseline_path: Path) -> None:
    """Exit-2 problems: strategies or metrics the suite and the baseline do not share."""
    update = f"if the change is deliberate, run `compactlab baseline --suite {suite.path} --baseline {baseline_path} --update`"
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


# --- comparing ---------------------------------------------------------------------------------------


def compare(suite: Suite, baseline: dict, table: pd.DataFrame) -> Report:
    report = Report([], suite=str(suite.path), transcripts=int(table["transcript"].nunique()) if not table.empty else 0)
    for strategy in suite.config.strategies:
        rows = table[table["config"] == strategy.label].set_index("transcript") if not table.empty else pd.DataFrame()
        for metric in suite.metrics:
            old = {t: v for t, v in baseline["values"][strategy.label][metric.name].items() if v is not None}
            new = {t: _number(v) for t, v in rows[metric.name].items()} if metric.name in rows else {}
            new = {t: v for t, v in new.items() if v is not None}
            report.comparisons.append(_compare(strategy.label, metric, old, new, suite))
    return report


def _compare(label: str, metric: MetricSpec, old: dict, new: dict, suite: Suite) -> Comparison:
    shared = sorted(set(old) & set(new))
    missing = len(set(old) - set(new))
    if not shared:
        verdict = "no values" if old else "n/a"
        return Comparison(label, metric, _mean(old.values()), _mean(new.values()), math.nan, math.nan, math.nan, 0, verdict, (), missing)
    a = np.array([new[t] for t in shared])
    b = np.array([old[t] for t in shared])
    paired = paired_bootstrap(a, b, resamples=suite.resamples, seed=suite.seed, confidence=suite.confidence)
    allowed = metric.allowed(float(b.mean()))
    gains = sorted((metric.gain(paired.low), metric.gain(paired.high)))
    if np.all(np.abs(a - b) <= EPSILON):
        verdict = "unchanged"
    elif gains[1] < -allowed:
        verdict = "regression"
    elif gains[0] > allowed:
        verdict = "improved"
    else:
        verdict = "ok"
    flips = []
    for transcript, x, y in zip(shared, a, b):
        change = x - y
        if abs(change) > max(metric.allowed(y), EPSILON):
            flips.append(Flip(transcript, float(y), float(x), worse=metric.gain(change) < 0))
    flips.sort(key=lambda f: metric.gain(f.new - f.baseline))  # worst first
    return Comparison(label, metric, float(b.mean()), float(a.mean()), paired.mean_diff, paired.low, paired.high, paired.n, verdict, tuple(flips), missing)


def changes_since(suite: Suite, baseline: dict, result) -> list[str]:
    """Notes for people: what differs between the baseline's run and this one."""
    notes = []
    if baseline.get("compactlab") != _version():
        notes.append(f"compactlab version: {baseline.get('compactlab')} → {_version()}")
    if baseline.get("suite", {}).get("hash") != suite.hash:
        notes.append(f"the suite changed since the baseline (hash {baseline.get('suite', {}).get('hash')} → {suite.hash})")
    for strategy in suite.config.strategies:
        before = baseline.get("strategies", {}).get(strategy.label, {})
        old_entry, new_entry = _flat(before.get("entry", {})), _flat(suite.strategies_written.get(strategy.label, {}))
        for key in sorted(k for k in set(old_entry) | set(new_entry) if old_entry.get(k) != new_entry.get(k)):
            notes.append(f"`{strategy.label}`: `{key}`: `{old_entry.get(key)}` → `{new_entry.get(key)}`")
        old_hashes, new_hashes = before.get("prompt_hashes", []), _prompt_hashes(result.compactions, strategy.label)
        if old_hashes != new_hashes:
            notes.append(f"`{strategy.label}`: prompt templates changed ({', '.join(old_hashes) or 'none'} → {', '.join(new_hashes) or 'none'})")
    old_files = baseline.get("transcripts", {})
    new_files = {t.id: _file_hash(t.source_path) for t in result.loaded.transcripts}
    changed = sorted(t for t in set(old_files) & set(new_files) if old_files[t].get("sha256") != new_files[t])
    if changed:
        notes.append(f"{len(changed)} transcript files changed since the baseline: {', '.join(changed[:5])}{' …' if len(changed) > 5 else ''}")
    gone, added = sorted(set(old_files) - set(new_files)), sorted(set(new_files) - set(old_files))
    if gone:
        notes.append(f"{len(gone)} baseline transcripts are not in this run (left out of the comparison)")
    if added:
        notes.append(f"{len(added)} transcripts have no baseline values (left out of the comparison)")
    for name, spec in baseline.get("metrics", {}).items():
        now = next((m for m in suite.metrics if m.name == name), None)
        if now is not None and (spec.get("direction"), spec.get("tolerance"), spec.get("relative")) != (now.direction, now.tolerance, now.relative):
            notes.append(f"`{name}`: direction/tolerance changed since the baseline; the suite's are used")
    return notes


# --- the markdown summary -----------------------------------------------------------------------------

VERDICT = {"regression": "❌ regression", "no values": "❌ no values", "improved": "✅ improved", "ok": "ok", "unchanged": "unchanged", "n/a": "n/a"}


def markdown(report: Report, confidence: float) -> str:
    failed = report.regressions
    title = f"❌ {len(failed)} regression{'s' if len(failed) != 1 else ''}" if failed else "✅ no regression"
    pct = f"{confidence:.0%}"
    lines = [
        f"## compactlab check: {title}",
        "",
        f"Suite `{report.suite}` against baseline `{report.baseline}`, {report.transcripts} transcripts. "
        f"A metric regresses when the {pct} paired-bootstrap interval of its change (new − baseline, per transcript) "
        "lies entirely on the worse side of its tolerance.",
    ]
    if report.notes:
        lines += ["", "**Changed since the baseline**", ""] + [f"- {note}" for note in report.notes]
    for label in dict.fromkeys(c.label for c in report.comparisons):
        lines += ["", f"### `{label}`", "", f"| metric | better | tolerance | baseline | new | change [{pct} CI] | n | verdict |", "|---|---|---|---|---|---|---|---|"]
        for c in (c for c in report.comparisons if c.label == label):
            tolerance = f"{c.metric.tolerance:g}" + (" (relative)" if c.metric.relative else "")
            change = "–" if c.n == 0 else f"{c.change:+.4g} [{c.low:+.4g}, {c.high:+.4g}]"
            verdict = f"**{VERDICT[c.verdict]}**" if c in failed else VERDICT[c.verdict]
            lines.append(f"| {c.metric.name} | {c.metric.direction} | {tolerance} | {_fmt(c.baseline)} | {_fmt(c.new)} | {change} | {c.n} | {verdict} |")
    flipped = [c for c in report.comparisons if c.flips or c.missing]
    lines += ["", "### Transcripts that flipped", ""]
    if not flipped:
        lines.append("None: no transcript moved beyond a tolerance.")
    for c in flipped:
        worse = sum(f.worse for f in c.flips)
        head = f"**`{c.label}` · {c.metric.name}**: {worse} worse, {len(c.flips) - worse} better"
        lines += ["", head + (f"; {c.missing} lost their value" if c.missing else ""), ""]
        if c.flips:
            lines += ["| transcript | baseline | new | change |", "|---|---|---|---|"]
            for f in c.flips[:MAX_FLIPS_SHOWN]:
                lines.append(f"| `{f.transcript}` | {_fmt(f.baseline)} | {_fmt(f.new)} | {f.new - f.baseline:+.4g} {'(worse)' if f.worse else '(better)'} |")
            if len(c.flips) > MAX_FLIPS_SHOWN:
                lines.append(f"| … {len(c.flips) - MAX_FLIPS_SHOWN} more | | | |")
    return "\n".join(lines) + "\n"


# --- commands ----------------------------------------------------------------------------------------


def add_commands(commands) -> None:
    """Register `check` and `baseline` on the `compactlab` sub-command parser."""
    check = commands.add_parser("check", help="run a regression suite and compare it with its baseline (exit 0 pass, 1 regression, 2 error)")
    _common(check)
    check.add_argument("--markdown-out", type=Path, metavar="FILE", help="also write the markdown summary here (e.g. for a PR comment)")
    check.add_argument("--only", nargs="+", metavar="LABEL", help="check only these strategy labels of the suite")
    check.set_defaults(run=run_check)
    baseline = commands.add_parser("baseline", help="run a regression suite and write its baseline file (never silently)")
    _common(baseline)
    baseline.add_argument("--update", action="store_true", help="replace an existing baseline (prints what changed)")
    baseline.set_defaults(run=run_baseline)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--suite", type=Path, required=True, help="suite TOML: run configuration plus [metrics]")
    parser.add_argument("--baseline", type=Path, required=True, help="baseline JSON file")
    parser.add_argument("--out", type=Path, help="keep the run directory here (default: a temporary directory)")
    parser.add_argument("--offline", action="store_true", help="LLM summaries only from the recorded cache; a missing recording is an error")


def run_check(args: argparse.Namespace) -> int:
    try:
        suite = select(load_suite(args.suite), args.only)
        baseline = read_baseline(args.baseline, args.suite)
        check_matches(suite, baseline, args.baseline)
        stale = [] if args.only else stale_strategies(suite, baseline)
        if stale:
            raise SuiteError(
                f"the baseline has strategies the suite no longer has: {', '.join(stale)}; if that is deliberate, run "
                f"`compactlab baseline --suite {args.suite} --baseline {args.baseline} --update`"
            )
        result, table = _run(suite, args)
    except (SuiteError, CacheMiss) as exc:
        return _usage_error(exc)
    report = compare(suite, baseline, table)
    report.baseline = str(args.baseline)
    report.notes = changes_since(suite, baseline, result) + ([f"checked only: {', '.join(args.only)}"] if args.only else [])
    text = markdown(report, suite.confidence)
    print(text)
    if args.markdown_out:
        args.markdown_out.write_text(text, encoding="utf-8")
    return 1 if report.regressions else 0


def run_baseline(args: argparse.Namespace) -> int:
    try:
        suite = load_suite(args.suite)
        if args.baseline.exists() and not args.update:
            raise SuiteError(f"{args.baseline} exists: a baseline is only replaced deliberately; pass --update to replace it")
        previous = read_baseline(args.baseline, args.suite) if args.baseline.exists() else None
        result, table = _run(suite, args)
    except (SuiteError, CacheMiss) as exc:
        return _usage_error(exc)
    document = baseline_document(suite, result, table)
    write_baseline(args.baseline, document)
    if previous is None:
        print(f"wrote {args.baseline}: {len(document['values'])} strategies × {len(suite.metrics)} metrics, {len(document['transcripts'])} transcripts")
    else:
        print(f"updated {args.baseline}")
        print("\n".join(f"  {line}" for line in baseline_changes(previous, document)) or "  nothing changed")
    return 0


def baseline_changes(old: dict, new: dict) -> list[str]:
    """What an update changed: per strategy and metric, the mean over each file's own transcripts."""
    lines = []
    for key in ("compactlab", "suite"):
        if old.get(key) != new.get(key):
            lines.append(f"{key}: {json.dumps(old.get(key))} → {json.dumps(new.get(key))}")
    for label in sorted(set(old["values"]) | set(new["values"])):
        if label not in new["values"]:
            lines.append(f"{label}: removed")
            continue
        if label not in old["values"]:
            lines.append(f"{label}: added")
            continue
        if old.get("strategies", {}).get(label) != new["strategies"].get(label):
            lines.append(f"{label}: settings or prompt hashes changed")
        for metric in sorted(set(old["values"][label]) | set(new["values"][label])):
            before = old["values"][label].get(metric)
            after = new["values"][label].get(metric)
            if before != after:
                a = _mean((before or {}).values())
                b = _mean((after or {}).values())
                lines.append(f"{label} · {metric}: mean {_fmt(a)} → {_fmt(b)}")
    return lines


def _run(suite: Suite, args: argparse.Namespace):
    progress = sys.stderr.isatty()
    if args.out is not None:
        return run_suite(suite, args.out, args.offline, progress)
    with tempfile.TemporaryDirectory(prefix="compactlab-gate-") as folder:
        return run_suite(suite, Path(folder), args.offline, progress)


def _usage_error(exc: Exception) -> int:
    print(f"compactlab: error: {exc.args[0] if exc.args else exc}", file=sys.stderr)
    return 2


# --- small helpers -----------------------------------------------------------------------------------


def _number(value: object) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) or math.isinf(number) else number


def _mean(values) -> float:
    values = [v for v in values if v is not None]
    return float(np.mean(values)) if values else math.nan


def _fmt(value: float) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.4g}"


def _flat(entry: dict) -> dict:
    """A strategy entry with its `settings` table spelled out as `settings.KEY`."""
    flat = {k: v for k, v in entry.items() if k != "settings"}
    flat.update({f"settings.{k}": v for k, v in (entry.get("settings") or {}).items()})
    return flat


def _prompt_hashes(compactions: pd.DataFrame, label: str) -> list[str]:
    if compactions.empty or "prompt_hash" not in compactions:
        return []
    return sorted({h for h in compactions.loc[compactions["config"] == label, "prompt_hash"] if isinstance(h, str) and h})


def _relative(path: str, folder: Path) -> str:
    try:
        return Path(os.path.relpath(Path(path).resolve(), folder.resolve())).as_posix()
    except ValueError:  # another drive on Windows
        return str(path)


def _file_hash(path: str) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
    except OSError:
        return None


def _version() -> str | None:
    try:
        return version("compactlab")
    except Exception:  # noqa: BLE001 - not installed as a package
        return None
