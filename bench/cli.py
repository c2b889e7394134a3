"""The `compactlab` command. It only parses arguments and calls the library."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd

from bench import runs
from bench.context_windows import ContextWindows, load_overrides, parse_override
from bench.datasets import list_datasets
from bench.estimation import DEFAULT_ESTIMATORS, run_estimation
from bench.estimation import summarize as summarize_estimation
from bench.estimation_output import format_summary, write_estimation
from bench.importers import importers, load_file
from bench.importers.canonical import write_canonical
from bench.leaderboard import format_leaderboard, summary_document
from bench.llm.clients import LLMUnavailable
from bench.llm_config import make_run_summarizer
from bench.loading import Loaded, load_inputs
from bench.overview import overview_frame, summarize
from bench.preview import format_preview, preview, preview_json
from bench.report.diff import write_diff
from bench.report.run_report import write_run_report
from bench.run_failures import INCOMPLETE_EXIT, failure_ranks, failure_records, format_failures
from bench.run_files import RunLock, write_atomic
from bench.run_config import DEFAULT_WINDOW, load_config, strategy_config
from bench.source import TranscriptError
from bench.sweep import DEFAULT_KEEP, DEFAULT_THRESHOLDS, analyse, format_sweep, sweep_document
from bench.sweep import DEFAULT_STRATEGIES as DEFAULT_SWEEP_STRATEGIES
from bench.sweep import grid as sweep_grid
from strategies.registry import describe_all

INPUTS_HELP = "transcript files, folders (searched recursively) or bundled dataset names; none: all bundled datasets"


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except (TranscriptError, KeyError, ValueError, FileNotFoundError, LLMUnavailable) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) else str(exc)
        if isinstance(exc, LLMUnavailable):
            message += "; the run stopped at this call (continue it with --resume once the provider answers)"
        print(f"compactlab: error: {message}", file=sys.stderr)
        return 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="compactlab", description="Measure context-compaction strategies on real agent transcripts.")
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    inspect = commands.add_parser("inspect", help="show what each transcript holds: messages, LLM calls, prompt sizes, skips")
    _add_input_arguments(inspect)
    inspect.add_argument("--json", action="store_true", help="print one JSON object per transcript")
    inspect.set_defaults(run=run_inspect)

    datasets = commands.add_parser("datasets", help="list the bundled datasets with counts")
    datasets.add_argument("--json", action="store_true", help="print JSON")
    datasets.set_defaults(run=run_datasets)

    estimate = commands.add_parser("estimate", help="measure token estimators against the prompt tokens providers billed")
    _add_input_arguments(estimate)
    estimate.add_argument("--estimators", nargs="+", default=list(DEFAULT_ESTIMATORS), metavar="NAME", help=f"default: {' '.join(DEFAULT_ESTIMATORS)}")
    estimate.add_argument("--out", type=Path, help="write calls.csv, summary.json and estimation.html here")
    estimate.add_argument("--table", choices=("csv", "parquet"), default="csv", help="format of the per-call table")
    estimate.add_argument("--context-window", action="append", default=[], metavar="MODEL=TOKENS", help="override a model's window (repeatable)")
    estimate.add_argument("--config", type=Path, help="TOML file; its [context_windows] table overrides windows")
    estimate.add_argument("--train-fraction", type=float, default=0.5, help="share of transcripts the calibration is fitted on")
    estimate.set_defaults(run=run_estimate)

    run = commands.add_parser("run", help="replay datasets through strategies: the main job")
    _add_run_arguments(run)
    run.add_argument("--strategy", nargs="+", metavar="NAME", help="strategies or presets to replay (default: every built-in offline one)")
    run.set_defaults(run=run_run)

    sweep = commands.add_parser("sweep", help="a grid of thresholds × keep budgets × strategies, its Pareto frontier and a recommendation")
    _add_run_arguments(sweep)
    sweep.add_argument("--strategy", nargs="+", metavar="NAME", default=list(DEFAULT_SWEEP_STRATEGIES), help="strategies in the grid")
    sweep.add_argument("--thresholds", nargs="+", type=float, default=list(DEFAULT_THRESHOLDS), metavar="F", help="trigger fractions of the window")
    sweep.add_argument("--keep", nargs="+", type=int, default=list(DEFAULT_KEEP), metavar="TOKENS", help="keep-recent budgets (strategies that have one)")
    sweep.add_argument("--min-preservation", type=float, default=0.9, help="the recommendation keeps at least this share of needed facts")
    sweep.set_defaults(run=run_sweep)

    report = commands.add_parser("report", help="write the HTML report of a run directory")
    report.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a directory written by `compactlab run` or `compactlab sweep`")
    report.add_argument("--out", type=Path, help="HTML file to write (default: RUN_DIR/report.html)")
    report.set_defaults(run=run_report)

    diff = commands.add_parser("diff", help="what got better or worse between two runs, per metric and per transcript")
    diff.add_argument("run_a", type=Path, metavar="RUN_A", help="the earlier run directory")
    diff.add_argument("run_b", type=Path, metavar="RUN_B", help="the later run directory")
    diff.add_argument("--out", type=Path, help="HTML page to write (default: RUN_B/diff.html)")
    diff.set_defaults(run=run_diff)

    strategies = commands.add_parser("strategies", help="list every strategy and preset with its parameters and source")
    strategies.add_argument("--json", action="store_true", help="print JSON")
    strategies.set_defaults(run=run_strategies)

    compact = commands.add_parser("compact", help="compact one transcript once with a strategy and show the result")
    compact.add_argument("path", metavar="PATH", help="a transcript file")
    compact.add_argument("--strategy", required=True, help="strategy or preset name, or path/to/file.py:Name")
    compact.add_argument("--at", type=int, metavar="CALL", help="compact the context before this recorded call (0-based); default: where the trigger first fires")
    compact.add_argument("--estimator", help="token estimator (default: the preset's, else hybrid)")
    compact.add_argument("--lenient", action="store_true", help="skip damaged records (counted) instead of stopping")
    compact.add_argument("--json", action="store_true", help="print the compacted context and the event as JSON")
    compact.set_defaults(run=run_compact)

    formats = commands.add_parser("formats", help="list the transcript formats compactlab reads")
    formats.set_defaults(run=run_formats)

    export = commands.add_parser("export", help="write transcripts as compactlab canonical JSONL")
    _add_input_arguments(export)
    export.add_argument("--out", type=Path, required=True, help="output folder (one .jsonl per input transcript file)")
    export.set_defaults(run=run_export)

    from bench.gate_cli import add_commands as add_gate_commands  # check, baseline

    add_gate_commands(commands)
    return parser


def _add_input_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", metavar="PATH", help=INPUTS_HELP)
    parser.add_argument("--lenient", action="store_true", help="skip damaged records (counted and shown) instead of stopping")
    parser.add_argument("--format", help="read every file as this format instead of detecting it (see `compactlab formats`)")


def _load(args: argparse.Namespace) -> Loaded:
    return load_inputs(args.paths, lenient=args.lenient, format=args.format, progress=sys.stderr.isatty())


def run_inspect(args: argparse.Namespace) -> int:
    loaded = _load(args)
    if args.json:
        for transcript in loaded.transcripts:
            print(json.dumps(summarize(transcript), ensure_ascii=False))
        for failed in loaded.failed:
            print(json.dumps({"path": str(failed.path), "error": failed.error}, ensure_ascii=False))
    else:
        print(format_overview(loaded))
    return 0


def format_overview(loaded: Loaded) -> str:
    lines: list[str] = []
    frame = overview_frame(loaded.transcripts)
    if not frame.empty:
        table = frame.assign(
            file=frame["id"].str.slice(0, 44),
            models=frame["models"].map(lambda m: ", ".join(m)[:40]),
            max_prompt=frame["max_prompt_tokens"].astype("Int64"),
        )[["file", "format", "messages", "llm_calls", "max_prompt", "compactions", "skipped_records", "models"]]
        lines.append(table.to_string(index=False))
        lines.append("")
        lines.append(
            f"{len(frame)} transcripts, {frame['messages'].sum()} messages, {frame['llm_calls'].sum()} LLM calls, "
            f"{frame['compactions'].sum()} real compactions, {frame['skipped_records'].sum()} damaged records skipped"
        )
    for transcript in loaded.transcripts:
        if transcript.skipped:
            reasons = "; ".join(f"{n}× {r}" for r, n in summarize(transcript)["skipped_reasons"].items())
            lines.append(f"  skipped in {transcript.source_path}: {reasons}")
    for failed in loaded.failed:
        lines.append(f"  file not read: {failed.error}")
    if loaded.passed_over:
        lines.append(f"  {len(loaded.passed_over)} files in the given folders are not transcripts by name and were not read")
    return "\n".join(lines)


def run_datasets(args: argparse.Namespace) -> int:
    rows = []
    for dataset in list_datasets():
        loaded = load_inputs([dataset.name])
        frame = overview_frame(loaded.transcripts)
        rows.append(
            {
                "name": dataset.name,
                "format": dataset.source_format,
                "files": len(dataset.files),
                "transcripts": len(frame),
                "llm_calls": int(frame["llm_calls"].sum()),
                "max_prompt_tokens": int(frame["max_prompt_tokens"].max()) if frame["llm_calls"].sum() else None,
                "compactions": int(frame["compactions"].sum()),
                "skipped_records": int(frame["skipped_records"].sum()),
                "license": dataset.license,
                "description": dataset.description,
            }
        )
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(pd.DataFrame(rows).drop(columns=["description"]).to_string(index=False))
    return 0


def run_estimate(args: argparse.Namespace) -> int:
    overrides = load_overrides(args.config) if args.config else {}
    overrides.update(parse_override(text) for text in args.context_window)
    loaded = _load(args)
    result = run_estimation(
        loaded.transcripts, args.estimators, ContextWindows(overrides=overrides), args.train_fraction, progress=sys.stderr.isatty()
    )
    summary = summarize_estimation(result.calls)
    print(format_summary(result, summary))
    _print_load_problems(loaded)
    if args.out:
        settings = {"estimators": args.estimators, "train_fraction": args.train_fraction, "context_window_overrides": overrides}
        for path in write_estimation(result, args.out, settings, args.table, summary):
            print(f"wrote {path}")
    return 0


def _print_load_problems(loaded: Loaded) -> None:
    for failed in loaded.failed:
        print(f"  file not read: {failed.error}")


def _add_run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, help="TOML configuration (command-line flags override it)")
    parser.add_argument("--dataset", nargs="+", metavar="NAME|PATH", help="datasets, files or folders (default: all bundled datasets)")
    parser.add_argument("--out", type=Path, help="run directory (default: reports/run, or reports/sweep for sweeps, replaced by each new run; an explicit --out is never overwritten)")
    parser.add_argument("--resume", action="store_true", help="continue an interrupted run in --out without repeating finished work")
    parser.add_argument("--window", type=int, help=f"replay every model with this context window (default {DEFAULT_WINDOW}; 0: real windows)")
    parser.add_argument("--estimator", help="token estimator for strategies that do not set one (default: hybrid)")
    parser.add_argument("--lenient", action="store_true", help="skip damaged records (counted) instead of stopping")


def _run_config(args: argparse.Namespace, strategies=None):
    config = load_config(args.config)
    changes = {}
    if args.dataset:
        changes["datasets"] = tuple(args.dataset)
    if strategies is not None:
        changes["strategies"] = tuple(strategies)
    elif getattr(args, "strategy", None):
        changes["strategies"] = tuple(strategy_config(name, "--strategy") for name in args.strategy)
    if args.window is not None:
        changes["window"] = args.window
    if args.estimator:
        changes["estimator"] = args.estimator
    if args.lenient:
        changes["lenient"] = True
    return replace(config, **changes)


def run_run(args: argparse.Namespace) -> int:
    config = _run_config(args)
    out = args.out or Path("reports/run")
    with RunLock(out):  # over the run and the files written from it
        result = runs.run(config, out, resume=args.resume, overwrite=args.out is None, progress=sys.stderr.isatty(), summarizer=make_run_summarizer(config))
        document = summary_document(result)
        write_atomic(out / "summary.json", json.dumps(document, indent=2, default=str) + "\n")
        if document.get("leaderboard"):
            print(format_leaderboard(pd.DataFrame(document["leaderboard"]).fillna(float("nan"))))
        print(f"\n{document['transcripts']} transcripts × {len(document['strategies'])} strategies; results in {out}/")
        _print_left_out(document)
        if document.get("leaderboard"):
            print(f"report: {write_run_report(out)}")
    return _incomplete_exit(document["failures"])


def _incomplete_exit(failures: list[dict]) -> int:
    """0, or INCOMPLETE_EXIT (with the reason on stderr) when a strategy's results are not its own."""
    if not failures:
        return 0
    print("compactions that failed or fell back (see summary.json `failures`):")
    print("\n".join(format_failures(failures)))
    left_out = failure_ranks({"failures": failures}, ranked=False)
    if not left_out:
        return 0
    print(f"compactlab: results incomplete: {', '.join(left_out)} not ranked (their compactions failed or fell back; "
          f"`max_failed_share` in the configuration allows a share)", file=sys.stderr)
    return INCOMPLETE_EXIT


def run_report(args: argparse.Namespace) -> int:
    print(write_run_report(args.run_dir, args.out))
    return 0


def run_diff(args: argparse.Namespace) -> int:
    text, path = write_diff(args.run_a, args.run_b, args.out)
    print(text)
    print(f"\nwrote {path}")
    return 0


def run_sweep(args: argparse.Namespace) -> int:
    configs = sweep_grid(args.strategy, args.thresholds, args.keep)
    config = _run_config(args, strategies=configs)
    out = args.out or Path("reports/sweep")
    with RunLock(out):
        result = runs.run(config, out, resume=args.resume, overwrite=args.out is None, progress=sys.stderr.isatty(), summarizer=make_run_summarizer(config))
        analysis = analyse(result.transcripts, configs, args.min_preservation)
        write_atomic(out / "sweep.json", json.dumps(sweep_document(analysis), indent=2, default=str) + "\n")
    print(format_sweep(analysis))
    print(f"\n{len(configs)} settings × {result.transcripts['transcript'].nunique()} transcripts; results in {out}/")
    return _incomplete_exit(failure_records(result.transcripts, config.max_failed_share))


def _print_left_out(document: dict) -> None:
    left = document["left_out"]
    if left["skipped_records"]:
        print(f"  {sum(left['skipped_records'].values())} damaged records skipped in {len(left['skipped_records'])} transcripts (see summary.json)")
    if left["transcripts_without_calls"]:
        print(f"  {len(left['transcripts_without_calls'])} transcripts have no recorded LLM calls and were not replayed")
    for failed in left["files_not_read"]:
        print(f"  file not read: {failed['error']}")


def run_strategies(args: argparse.Namespace) -> int:
    rows = describe_all()
    if args.json:
        print(json.dumps(rows, indent=2, default=str))
        return 0
    for row in rows:
        print(f"{row['name']}  [{row['kind']}: {row['strategy']}]  {row['description']}")
        if row["source"]:
            print(f"    source: {row['source']}")
        print(f"    parameters: {json.dumps(row['parameters'], default=str)}")
    return 0


def run_compact(args: argparse.Namespace) -> int:
    transcripts = load_file(args.path, lenient=args.lenient)
    result = preview(transcripts[0], args.strategy, args.at, args.estimator)
    print(json.dumps(preview_json(result), indent=2, default=str) if args.json else format_preview(result))
    return 0


def run_formats(args: argparse.Namespace) -> int:
    for name, importer in importers().items():
        print(f"{name:20} {importer.description}")
    return 0


def run_export(args: argparse.Namespace) -> int:
    loaded = _load(args)
    args.out.mkdir(parents=True, exist_ok=True)
    by_file: dict[str, list] = {}
    for transcript in loaded.transcripts:
        by_file.setdefault(transcript.source_path, []).append(transcript)
    for source_path, transcripts in by_file.items():
        name = Path(source_path).name.removesuffix(".gz").removesuffix(".json").removesuffix(".jsonl")
        target = write_canonical(transcripts, args.out / f"{name}.jsonl")
        print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
