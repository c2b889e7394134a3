"""The `compactlab` command. It only parses arguments and calls the library."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path

import pandas as pd

from compactlab.cli import exit_codes
from compactlab.cli.cli_runs import add_run_commands
from compactlab.cli.init_config import write_init
from compactlab.llm.concurrency import BudgetExhausted
from compactlab.llm.errors import LLMUnavailable
from compactlab.report.diff import write_diff
from compactlab.report.estimation_output import format_summary, write_estimation
from compactlab.report.run_report import write_run_report
from compactlab.runs.preview import compact, format_preview, preview_json
from compactlab.runs.run_config import DEFAULT_WINDOW, RunConfig, window_for_data, windows_of
from compactlab.sessions.datasets import datasets_dir, list_datasets
from compactlab.sessions.importers import importers, load_file
from compactlab.sessions.loading import Loaded, load_inputs
from compactlab.sessions.neutralise import TerminalSafe, terminal_text
from compactlab.sessions.output_folder import check_output_folder
from compactlab.sessions.overview import format_overview, overview_frame, summarize
from compactlab.sessions.source import SessionError
from compactlab.strategies.registry import describe_all
from compactlab.tokens.context_windows import ContextWindows, load_overrides, parse_override
from compactlab.tokens.estimation import DEFAULT_ESTIMATORS, run_estimation
from compactlab.tokens.estimation import summarize as summarize_estimation
from compactlab.version import compactlab_version

INPUTS_HELP = "session files, folders (searched recursively) or bundled dataset names; none: all bundled datasets"
BROKEN_PIPE = exit_codes.BROKEN_PIPE
# What a command's help says of its exit codes unless it names its own.
COMMON_EXITS = exit_codes.described(exit_codes.DONE, exit_codes.BAD_INPUT)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    args.argv = argv  # the user's own words, which a next command (`--resume`) is made of
    try:
        # What is printed may come from sessions: their escape sequences must not reach the terminal.
        with contextlib.redirect_stdout(TerminalSafe(sys.stdout)):
            try:
                return args.run(args)
            except BudgetExhausted as exc:
                print(
                    f"compactlab: stopped: {terminal_text(str(exc))}. {_continue_with(args)}",
                    file=sys.stderr,
                )
                return exit_codes.BUDGET
            except LLMUnavailable as exc:
                print(
                    f"compactlab: error: {terminal_text(str(exc))}; the run stopped at this call ({_continue_with(args, True)})",
                    file=sys.stderr,
                )
                return exit_codes.BAD_INPUT
            except KeyboardInterrupt as exc:
                if sys.stderr.isatty():
                    print(file=sys.stderr)  # off the progress bar's line
                print(f"compactlab: {terminal_text(str(exc)) or 'interrupted'}", file=sys.stderr)
                return exit_codes.INTERRUPTED
            except (SessionError, KeyError, ValueError, OSError) as exc:
                if isinstance(exc, BrokenPipeError):
                    raise
                print(f"compactlab: error: {terminal_text(error_message(exc))}", file=sys.stderr)
                return exit_codes.BAD_INPUT
            finally:
                sys.stdout.flush()
    except BrokenPipeError:
        # Python flushes stdout again at exit, which would raise once more: point it at /dev/null.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return BROKEN_PIPE


def _continue_with(args: argparse.Namespace, provider: bool = False) -> str:
    """How to go on after a run stopped at an LLM call: `run` and `sweep` continue with --resume (the
    calls already answered are replayed from the call cache); `check` and `baseline` run again."""
    if "resume" in args:
        when = " once the provider answers" if provider else ""
        return f"The sessions replayed before are kept; continue with --resume{when} (calls answered before come from the call cache)"
    return (
        "Run the command again"
        + (" once the provider answers" if provider else "")
        + " (calls answered before come from the call cache)"
    )


def error_message(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return str(exc.args[0])
    if isinstance(exc, OSError) and exc.strerror and not isinstance(exc, SessionError):
        # A file that cannot be written (--out naming a file or a read-only folder, a full disk).
        return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    return str(exc)


def _command(commands, name: str, help: str, exits: str = COMMON_EXITS) -> argparse.ArgumentParser:
    """A sub-command whose help ends with its exit codes."""
    return commands.add_parser(
        name, help=help, description=help, epilog=exits, formatter_class=argparse.RawDescriptionHelpFormatter
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="compactlab",
        description="Measure context-compaction strategies on real agent sessions.",
        epilog=exit_codes.described() + " (each command's --help names its own)",
    )
    parser.add_argument("--version", action="version", version=f"compactlab {compactlab_version() or 'unknown (not installed)'}")
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    init = _command(
        commands,
        "init",
        "write a commented compactlab.toml, a CI suite skeleton and the prompt template it names, to start from",
        "exit codes: 0 written; 2 a file exists (pass --force to replace it) or cannot be written",
    )
    init.add_argument("folder", nargs="?", type=Path, default=Path("."), help="where to write them (default: here)")
    init.add_argument("--force", action="store_true", help="replace existing files")
    init.set_defaults(run=run_init)

    inspect = _command(commands, "inspect", "show what each session holds: messages, LLM calls, prompt sizes, skips")
    _add_input_arguments(inspect)
    inspect.add_argument("--json", action="store_true", help="print one JSON object per session (every skip's reason)")
    inspect.add_argument(
        "--all-skips",
        action="store_true",
        help="list each session's skipped records and each file not read, not grouped by kind",
    )
    inspect.set_defaults(run=run_inspect)

    datasets = _command(commands, "datasets", "list the bundled datasets with counts")
    datasets.add_argument("--json", action="store_true", help="print JSON")
    datasets.set_defaults(run=run_datasets)

    estimate = _command(commands, "estimate", "measure token estimators against the prompt tokens providers billed")
    _add_input_arguments(estimate)
    estimate.add_argument(
        "--estimators",
        nargs="+",
        default=list(DEFAULT_ESTIMATORS),
        metavar="NAME",
        help=f"default: {' '.join(DEFAULT_ESTIMATORS)}",
    )
    estimate.add_argument("--out", type=Path, help="write calls.csv, summary.json and estimation.html here")
    estimate.add_argument("--table", choices=("csv", "parquet"), default="csv", help="format of the per-call table")
    estimate.add_argument(
        "--context-window", action="append", default=[], metavar="MODEL=TOKENS", help="override a model's window (repeatable)"
    )
    estimate.add_argument("--config", type=Path, help="TOML file; its [context_windows] table overrides windows")
    estimate.set_defaults(run=run_estimate)

    add_run_commands(commands, _command)

    report = _command(commands, "report", "write the HTML report of a run directory")
    report.add_argument(
        "run_dir", type=Path, metavar="RUN_DIR", help="a directory written by `compactlab run` or `compactlab sweep`"
    )
    report.add_argument("--out", type=Path, help="HTML file to write (default: RUN_DIR/report.html)")
    report.add_argument("--all-pairs", action="store_true", help="also compare every pair of settings (Holm over all pairs)")
    report.set_defaults(run=run_report)

    diff = _command(
        commands,
        "diff",
        "what got better or worse between two runs, per metric and per session",
        "exit codes: 0 compared (whatever changed: the page says what); 2 a run directory is missing or unfinished",
    )
    diff.add_argument("run_a", type=Path, metavar="RUN_A", help="the earlier run directory")
    diff.add_argument("run_b", type=Path, metavar="RUN_B", help="the later run directory")
    diff.add_argument("--out", type=Path, help="HTML page to write (default: RUN_B/diff.html)")
    diff.set_defaults(run=run_diff)

    strategies = _command(commands, "strategies", "list every strategy and preset with its parameters and source")
    strategies.add_argument("--json", action="store_true", help="print JSON")
    strategies.set_defaults(run=run_strategies)

    compact = _command(commands, "compact", "compact one session once with a strategy and show the result")
    compact.add_argument("path", metavar="PATH", help="a session file")
    compact.add_argument("--strategy", required=True, help="strategy or preset name, or path/to/file.py:Name")
    compact.add_argument(
        "--at",
        type=int,
        metavar="CALL",
        help="compact the context before this recorded call (0-based); default: where the trigger first fires",
    )
    compact.add_argument("--estimator", help="token estimator (default: the preset's, else hybrid)")
    compact.add_argument(
        "--window",
        type=int,
        help=f"a simulated context window, as `run` replays it (default as `run`'s: the model's real window for a file of "
        f"your own, {DEFAULT_WINDOW} for a bundled dataset's; 0: the model's real window)",
    )
    compact.add_argument("--lenient", action="store_true", help="skip damaged records (counted) instead of stopping")
    compact.add_argument("--json", action="store_true", help="print the compacted context and the event as JSON")
    compact.set_defaults(run=run_compact)

    formats = _command(commands, "formats", "list the session file formats compactlab reads")
    formats.set_defaults(run=run_formats)

    from compactlab.cli.export_cli import add_commands as add_export_commands

    add_export_commands(commands, _command, _add_input_arguments, _load)

    from compactlab.cli.engines_cli import add_command as add_engines_command

    add_engines_command(commands, _command, _add_input_arguments, _load)

    from compactlab.cli.gate_cli import add_commands as add_gate_commands  # check, baseline

    add_gate_commands(commands, _command)

    from compactlab.cli.prompts_cli import add_command as add_prompts_command

    add_prompts_command(commands, _command)

    from compactlab.cli.docs_cli import add_command as add_docs_command

    add_docs_command(commands, _command)
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
        for session in loaded.sessions:
            print(json.dumps(summarize(session), ensure_ascii=False))
        for failed in loaded.failed:
            print(json.dumps({"path": str(failed.path), "error": failed.error}, ensure_ascii=False))
    else:
        print(format_overview(loaded, args.all_skips))
    return 0


def run_datasets(args: argparse.Namespace) -> int:
    datasets = list_datasets()
    if not datasets:
        print(
            f"no datasets in {datasets_dir()} (no */dataset.toml there): set COMPACTLAB_DATASETS to a folder of datasets",
            file=sys.stderr,
        )
        return 2
    rows = []
    for dataset in datasets:
        loaded = load_inputs([dataset.name])
        frame = overview_frame(loaded.sessions)
        rows.append(
            {
                "name": dataset.name,
                "format": dataset.source_format,
                "files": len(dataset.files),
                "sessions": len(frame),
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
    if args.out:
        check_output_folder(args.out, args.paths or None)
    loaded = _load(args)
    result = run_estimation(
        loaded.sessions,
        args.estimators,
        ContextWindows(overrides=overrides),
        progress=sys.stderr.isatty(),
        keep_damaged=args.lenient,  # --lenient keeps files with skipped records, counted (compactlab.tokens.estimation)
    )
    summary = summarize_estimation(result.calls)
    if summary.empty:  # a measurement of nothing is not a result: refused, and nothing is written
        skipped = sum(len(session.skipped) for session in loaded.sessions)
        raise ValueError(
            f"no recorded LLM call to compare with in the {len(loaded.sessions):,} sessions read"
            + (f" ({skipped:,} damaged records skipped)" if skipped else "")
            + ": the estimators are measured against the prompt tokens each call billed"
        )
    print(format_summary(result, summary))
    _print_load_problems(loaded)
    if args.out:
        settings = {"estimators": args.estimators, "context_window_overrides": overrides}
        for path in write_estimation(result, args.out, settings, args.table, summary):
            print(f"wrote {path}")
    return 0


def _print_load_problems(loaded: Loaded) -> None:
    for failed in loaded.failed:
        print(f"  file not read: {failed.error}")


def run_report(args: argparse.Namespace) -> int:
    print(write_run_report(args.run_dir, args.out, all_pairs=args.all_pairs, progress=sys.stderr.isatty()))
    return 0


def run_init(args: argparse.Namespace) -> int:
    for path in write_init(args.folder, force=args.force):
        print(f"wrote {path}")
    print("next: edit compactlab.toml, then `compactlab run --config compactlab.toml`")
    return 0


def run_diff(args: argparse.Namespace) -> int:
    text, path = write_diff(args.run_a, args.run_b, args.out)
    print(text)
    print(f"\nwrote {path}")
    return 0


def run_strategies(args: argparse.Namespace) -> int:
    rows = describe_all()
    if args.json:
        print(json.dumps(rows, indent=2, default=str))
        return 0
    for row in rows:
        print(f"{row['name']}  [{row['kind']}: {row['strategy']}]  {row['description']}")
        if row["source"]:
            print(f"    source: {row['source']}")
        if row.get("version"):
            print(f"    reproduces: {row['version']}")
        if row.get("versioned_name"):
            newest = "the name alone is the newest" if "@" not in row["name"] else "an older version, kept to compare"
            print(f"    this version: {row['versioned_name']} ({newest})")
        if row.get("changed_since"):
            print(f"    changed since: {row['changed_since']}")
        if row.get("deviations"):
            print(f"    deviations: {row['deviations']}")
        print(f"    parameters: {json.dumps(row['parameters'], default=str)}")
    return 0


def run_compact(args: argparse.Namespace) -> int:
    sessions = load_file(args.path, lenient=args.lenient)
    # The window `run` would replay this file at (`RunConfig.for_its_data`), so the two show the same compaction.
    window = args.window if args.window is not None else window_for_data((str(args.path),))
    result = compact(sessions[0], args.strategy, args.at, args.estimator, windows_of(RunConfig(window=window)))
    print(json.dumps(preview_json(result), indent=2, default=str) if args.json else format_preview(result))
    return 0


def run_formats(args: argparse.Namespace) -> int:
    for name, importer in importers().items():
        print(f"{name:20} {importer.description}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
