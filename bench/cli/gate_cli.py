"""The text and the commands of the CI gate: `compactlab check` and `compactlab baseline`.

The regression rule and the baseline file are in `bench/gate/gate.py`; this module turns a comparison
into the markdown summary (`bench/cli/gate_markdown.py`), says what changed since
the baseline, and implements the two commands with their exit codes: 0 pass, 1 regression,
2 no result: a usage or configuration error, or a run that did not measure what changed
(`bench/gate/measured.py`: a prompt template no model read, summaries with no recorded answer).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from compactlab.cli.gate_markdown import markdown, metric_name, report_json
from compactlab.gate.answers import Answers
from compactlab.gate.gate import (
    Comparison,
    Report,
    SuiteRun,
    baseline_document,
    check_matches,
    compactlab_version,
    compare,
    file_hash,
    flat_entry,
    fmt,
    mean_of,
    prompt_hashes,
    read_baseline,
    run_suite,
    stale_strategies,
    write_baseline,
)
from compactlab.gate.measured import scope_lines, unmeasured
from compactlab.gate.power import check_lines, refusal, sensitivity, shortfalls, statement, to_document, unseen_prompt_changes
from compactlab.gate.provenance import compare_summarizer, reason
from compactlab.gate.suite import Suite, SuiteError, load_suite, select
from compactlab.gate.template_sources import fallback_notes
from compactlab.llm import CacheMiss
from compactlab.sessions.neutralise import terminal_text
from compactlab.strategies.prompting import renders_prompt
from compactlab.strategies.registry import get_strategy


def changes_since(suite: Suite, baseline: dict, run: SuiteRun) -> list[str]:
    """Notes for people: what differs between the baseline's run and this one."""
    result = run.result
    notes = []
    if baseline.get("compactlab") != compactlab_version():
        notes.append(f"compactlab version: {baseline.get('compactlab')} → {compactlab_version()}")
    if baseline["suite"]["hash"] != suite.hash:
        notes.append(f"the suite changed since the baseline (hash {baseline['suite']['hash']} → {suite.hash})")
    for strategy in suite.config.strategies:
        before = baseline.get("strategies", {}).get(strategy.label, {})
        old_entry, new_entry = flat_entry(before.get("entry", {})), flat_entry(suite.strategies_written.get(strategy.label, {}))
        for key in sorted(k for k in set(old_entry) | set(new_entry) if old_entry.get(k) != new_entry.get(k)):
            notes.append(f"`{strategy.label}`: `{key}`: `{old_entry.get(key)}` → `{new_entry.get(key)}`")
        old_hashes, new_hashes = before.get("prompt_hashes", []), prompt_hashes(result.compactions, strategy.label)
        if old_hashes != new_hashes:
            # On the extractive stand-in the templates give the file lists only: no prompt was rendered.
            used = (
                ""
                if renders_prompt(get_strategy(strategy.strategy, **dict(strategy.settings)))
                else " (their file lists only: no prompt was rendered)"
            )
            notes.append(
                f"`{strategy.label}`: prompt templates changed ({', '.join(old_hashes) or 'none'} → {', '.join(new_hashes) or 'none'}){used}"
            )
        old_model, new_model = before.get("read_by"), run.prompts[strategy.label]["read_by"]
        if old_model and new_model and old_model != new_model:
            notes.append(f"`{strategy.label}`: summaries by model {new_model}, the baseline's by {old_model}")
    old_files = baseline.get("sessions", {})
    new_files = {t.id: file_hash(t.source_path) for t in result.read.sessions}
    changed = sorted(t for t in set(old_files) & set(new_files) if old_files[t].get("sha256") != new_files[t])
    if changed:
        notes.append(
            f"{len(changed)} session files changed since the baseline: {', '.join(changed[:5])}{' …' if len(changed) > 5 else ''}"
        )
    gone, added = sorted(set(old_files) - set(new_files)), sorted(set(new_files) - set(old_files))
    if gone:
        notes.append(f"{len(gone)} baseline sessions are not in this run (left out of the comparison)")
    if added:
        notes.append(f"{len(added)} sessions have no baseline values (left out of the comparison)")
    for name, spec in baseline.get("metrics", {}).items():
        now = next((m for m in suite.metrics if m.name == name), None)
        if now is not None and (
            spec.get("direction"),
            spec.get("tolerance"),
            spec.get("relative"),
            spec.get("relative_tolerance"),
        ) != (
            now.direction,
            now.tolerance,
            now.relative,
            now.relative_tolerance,
        ):
            notes.append(f"`{name}`: direction/tolerance changed since the baseline; the suite's are used")
    return notes


# --- commands ----------------------------------------------------------------------------------------


CHECK_EXITS = (
    "exit codes: 0 no regression; 1 a regression (or a metric that lost its values); 2 no result: a bad suite or "
    "baseline, a guarded metric this run cannot measure, a prompt template changed that no model read, a baseline "
    "made with a model checked without one, or summaries with no recorded answer (e.g. the summarizer differs from the "
    "baseline's: named first) and no key to ask for them"
)
BASELINE_EXITS = (
    "exit codes: 0 written; 2 usage or configuration error: a bad suite, an existing baseline without --update, "
    "a suite that cannot detect a loss of twice a guarded metric's tolerance, "
    "a guarded metric this run cannot measure, or summaries with no recorded answer and no key to ask for them"
)


def add_commands(commands, command) -> None:
    """Register `check` and `baseline` on the `compactlab` sub-command parser (`command` adds one with its exit codes)."""
    check = command(commands, "check", "run a regression suite and compare it with its baseline", CHECK_EXITS)
    _common(check)
    check.add_argument(
        "--markdown-out", type=Path, metavar="FILE", help="also write the markdown summary here (e.g. for a PR comment)"
    )
    check.add_argument("--only", nargs="+", metavar="LABEL", help="check only these strategy labels of the suite")
    check.add_argument(
        "--json", action="store_true", help="print the verdict and every comparison as one JSON object instead of markdown"
    )
    check.set_defaults(run=run_check)
    baseline = command(
        commands, "baseline", "run a regression suite and write its baseline file (never silently)", BASELINE_EXITS
    )
    _common(baseline)
    baseline.add_argument("--update", action="store_true", help="replace an existing baseline (prints what changed)")
    baseline.add_argument(
        "--prune-answers", action="store_true", help="delete the recorded answers (cache_dir) this baseline's run did not use"
    )
    baseline.set_defaults(run=run_baseline)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--suite", type=Path, required=True, help="suite TOML: run configuration plus [metrics]")
    parser.add_argument("--baseline", type=Path, required=True, help="baseline JSON file")
    parser.add_argument("--out", type=Path, help="keep the run directory here (default: a temporary directory)")
    parser.add_argument(
        "--offline",
        action="store_true",
        help="LLM summaries only from the recorded answers, even with a key (missing answers are counted: exit 2)",
    )


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
        run = _run(suite, args)
        provenance = compare_summarizer(suite, baseline)  # what wrote the summaries: named first
        changed = ", ".join(c.key for c in provenance.answer_keys)
        missing = run.answers is not None and bool(run.answers.missing)
        cause = f"the summarizer's {changed} changed since the baseline" if changed and missing else ""
        problems = unmeasured(suite, run.prompts, run.answers, baseline, args.baseline, cause)
        if cause:
            problems.insert(0, reason(provenance, suite))
        if run.answers is not None and run.answers.missing:
            # Summaries without an answer fell back (or failed): nothing this run measured is a result.
            report = Report([], suite=str(suite.path), sessions=len(run.result.read.sessions))
        else:
            report = compare(suite, baseline, run.table, run.values)
            unmeasurable_metrics(report.comparisons, run.table)
    except (SuiteError, CacheMiss) as exc:
        return _usage_error(exc)
    report.unmeasured = problems
    report.baseline = str(args.baseline)
    report.notes = changes_since(suite, baseline, run) + ([f"checked only: {', '.join(args.only)}"] if args.only else [])
    if run.answers is not None and not args.only:
        report.notes += unused_answers(run.answers, suite, args.baseline)
    report.scope = fallback_notes(suite) + scope_lines(run.prompts, run.answers)
    report.power = check_lines(suite, baseline)
    report.cannot_tell = unseen_prompt_changes(report.comparisons, run.prompts, baseline, report.power)
    text = markdown(report, suite.confidence, provenance.lines)
    print(json.dumps(report_json(report, provenance.lines), indent=2) if args.json else text)
    if args.markdown_out:
        args.markdown_out.write_text(text, encoding="utf-8")
    if report.unmeasured:  # the markdown above shows what was measured; what was not makes this no result
        print("compactlab: error: this check did not measure what changed, so it cannot pass:", file=sys.stderr)
        print("\n".join(f"  {terminal_text(line)}" for line in _named(provenance.lines) + report.unmeasured), file=sys.stderr)
        return 2
    return 1 if report.regressions else 0


def _named(lines: list[str]) -> list[str]:
    """The summarizer's changes since the baseline, as the first lines of an error."""
    return [f"the summarizer differs from the baseline's: {line}" for line in lines if not line.startswith("not compared")]


def unused_answers(answers: Answers, suite: Suite, baseline: Path) -> list[str]:
    """A note on the recorded answers this run did not use, so the folder can be pruned."""
    unused = answers.unused()
    if not unused:
        return []
    return [
        f"{len(unused)} recorded answers in `{answers.folder.name}/` were not used by this check: "
        f"`compactlab baseline --suite {suite.path} --baseline {baseline} --update --prune-answers` removes them"
    ]


def run_baseline(args: argparse.Namespace) -> int:
    try:
        suite = load_suite(args.suite)
        if args.baseline.exists() and not args.update:
            raise SuiteError(f"{args.baseline} exists: a baseline is only replaced deliberately; pass --update to replace it")
        previous, damaged = None, ""
        if args.baseline.exists():
            try:
                previous = read_baseline(args.baseline, args.suite, any_format=True)
            except SuiteError as exc:  # replacing a damaged baseline is how it is mended: said, nothing compared
                damaged = str(exc)
        run = _run(suite, args)
        problems = unmeasured(suite, run.prompts, run.answers, None, args.baseline)  # answers it could not get
        if problems:
            raise SuiteError("this baseline could not be measured:\n  " + "\n  ".join(problems))
        document = baseline_document(suite, run)
        started = time.monotonic()
        powers = sensitivity(suite, run.counts)  # by resampling the run's compactions: no model is asked
        document["sensitivity"] = to_document(powers)
        seconds = time.monotonic() - started
        unmeasurable_metrics(
            [
                (label, m, values)
                for label, per in document["values"].items()
                for m in suite.metrics
                for values in [per.get(m.name, {})]
            ],
            run.table,
        )
        short = shortfalls(suite, powers)
        if short:
            raise SuiteError(refusal(suite, short))
    except (SuiteError, CacheMiss) as exc:
        return _usage_error(exc)
    write_baseline(args.baseline, document)
    for line in fallback_notes(suite):
        print(line)
    print(f"sensitivity (measured in {seconds:.1f} s by resampling this run's compactions):")
    print("\n".join(f"  {statement(p)}" for p in powers) or "  no guarded metric counts facts per compaction")
    for line in shortfalls(suite, powers, enforced=False):
        print(f"warning: {line}", file=sys.stderr)
    if run.answers is not None:
        print(f"recorded answers: {len(run.answers.used)} used, in {run.answers.folder}")
        unused = run.answers.unused()
        if unused and args.prune_answers:
            for path in unused:
                path.unlink()
            print(f"pruned {len(unused)} recorded answers this baseline did not use")
        elif unused:
            print(f"{len(unused)} recorded answers were not used (--prune-answers removes them)")
    if damaged:
        print(f"replaced {args.baseline}, which could not be read, so nothing is compared with it: {damaged}")
    elif previous is None:
        print(
            f"wrote {args.baseline}: {len(document['values'])} strategies × {len(suite.metrics)} metrics, {len(document['sessions'])} sessions"
        )
    else:
        print(f"updated {args.baseline}")
        print("\n".join(f"  {line}" for line in baseline_changes(previous, document)) or "  nothing changed")
    return 0


def baseline_changes(old: dict, new: dict) -> list[str]:
    """What an update changed: per strategy and metric, the mean over each file's own sessions."""
    lines = []
    for key in ("compactlab", "suite", "summarizer"):
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
                a = mean_of((before or {}).values())
                b = mean_of((after or {}).values())
                lines.append(f"{label} · {metric}: mean {fmt(a)} → {fmt(b)}")
    return lines


def unmeasurable_metrics(items, table) -> None:
    """A guarded metric with no value on any session, in the baseline and now, guards nothing: a
    configuration error (exit 2), never a pass. `items`: comparisons, or (label, metric, values) triples."""
    empty = []
    for item in items:
        if isinstance(item, Comparison):
            if item.verdict == "n/a":
                empty.append((item.label, item.metric))
        elif not any(v is not None for v in item[2].values()):
            empty.append((item[0], item[1]))
    if not empty:
        return
    why = {
        "total_cost": 'no model of these sessions has a price: add [prices."MODEL"] tables',
        "cost_full": 'no model of these sessions has a price: add [prices."MODEL"] tables',
        "cost_change": 'no model of these sessions has a price: add [prices."MODEL"] tables',
        "summarizer_cost": "no priced LLM summarizer ran: configure [summarizer] and its model's price",
    }
    lines = [
        f"`{label}` · {metric_name(metric)}: {why.get(metric.name, 'no session has a value (e.g. the strategy never compacted at this window)')}"
        for label, metric in empty
    ]
    raise SuiteError(
        "these guarded metrics cannot be measured on this run, so they would guard nothing:\n  "
        + "\n  ".join(lines)
        + "\nremove them from [metrics] or make them measurable"
    )


def _run(suite: Suite, args: argparse.Namespace):
    progress = sys.stderr.isatty()
    if args.out is not None:
        return run_suite(suite, args.out, args.offline, progress)
    with tempfile.TemporaryDirectory(prefix="compactlab-gate-") as folder:
        return run_suite(suite, Path(folder), args.offline, progress)


def _usage_error(exc: Exception) -> int:
    print(f"compactlab: error: {terminal_text(str(exc.args[0] if exc.args else exc))}", file=sys.stderr)
    return 2
