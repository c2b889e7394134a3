"""The `run` and `sweep` commands: their arguments and what they print (text, or JSON with --json)."""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from compactlab.cli import exit_codes
from compactlab.cli.verdict_lines import add_stress_verdict, command_line, finish_document, verdict_lines
from compactlab.report.run_report import write_run_report
from compactlab.results.cost_coverage import format_cost_coverage
from compactlab.results.leaderboard import format_leaderboard
from compactlab.results.recommendation import Recommendation, Rule
from compactlab.results.recorded_results import format_recorded
from compactlab.results.run_failures import INCOMPLETE_EXIT, failure_ranks, format_failures
from compactlab.results.same_by_construction import SameGroup
from compactlab.runs import run_checks, run_result, runs, sweep_run
from compactlab.runs.config_schema import check_number, schema_key
from compactlab.runs.executors import EXECUTORS, executor_for
from compactlab.runs.llm_config import make_run_summarizer
from compactlab.runs.run_config import DEFAULT_WINDOW, load_config, setting_from
from compactlab.runs.run_files import DONE, RunLock, read_done
from compactlab.runs.run_summary import run_summary
from compactlab.runs.sweep import DEFAULT_KEEP, DEFAULT_THRESHOLDS, LABELS, format_sweep
from compactlab.runs.sweep import DEFAULT_STRATEGIES as DEFAULT_SWEEP_STRATEGIES
from compactlab.tokens.context_windows import parse_override

EXIT_CODES = exit_codes.described(
    exit_codes.DONE, exit_codes.BAD_INPUT, exit_codes.INCOMPLETE, exit_codes.BUDGET, exit_codes.INTERRUPTED
)


def add_run_commands(commands, command) -> None:
    run = command(commands, "run", "replay datasets through strategies: the main job", EXIT_CODES)
    _add_run_arguments(run)
    run.add_argument(
        "--strategy", nargs="+", metavar="NAME", help="strategies or presets to replay (default: every built-in offline one)"
    )
    run.add_argument(
        "--all-pairs", action="store_true", help="also compare every pair of settings (summary.json's all_pairs, the report)"
    )
    run.add_argument(
        "--no-estimation",
        action="store_true",
        help="do not measure the token estimators on the run's sessions (`estimation = false`; the report then leaves them out)",
    )
    run.set_defaults(run=run_run)

    sweep = command(
        commands,
        "sweep",
        "a grid of thresholds × keep budgets × strategies, its Pareto frontier and a recommendation",
        f"Settings are labelled STRATEGY@F/keep=N ({LABELS}).\n"
        "The recommended setting is printed (and written to OUT/recommended.toml) as a run configuration that "
        "`compactlab run --config` replays to the same numbers; the report is written to OUT/report.html.\n" + EXIT_CODES,
    )
    _add_run_arguments(sweep)
    sweep.add_argument(
        "--strategy", nargs="+", metavar="NAME", default=list(DEFAULT_SWEEP_STRATEGIES), help="strategies in the grid"
    )
    sweep.add_argument(
        "--thresholds",
        nargs="+",
        type=float,
        default=list(DEFAULT_THRESHOLDS),
        metavar="F",
        help="trigger fractions of the window, each in (0, 1]",
    )
    sweep.add_argument(
        "--keep",
        nargs="+",
        type=int,
        metavar="TOKENS",
        help=f"keep-recent budgets (> 0), for strategies that have one; given, every swept strategy must have one "
        f"(default: {' '.join(map(str, DEFAULT_KEEP))} where a strategy has one)",
    )
    sweep.add_argument(
        "--on-cache-expiry",
        nargs="+",
        type=float,
        metavar="F",
        help="also sweep the trigger rule that compacts from F of the window at a call made after the prompt cache "
        "expired (labelled /expired@F), beside each setting without it (default: without it only)",
    )
    sweep.add_argument(
        "--min-preservation", type=float, default=0.9, help="the recommendation keeps at least this share of needed facts"
    )
    sweep.add_argument("--no-report", action="store_true", help="do not write OUT/report.html")
    sweep.set_defaults(run=run_sweep)


def _add_run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config", type=Path, help="TOML configuration (command-line flags override it; `compactlab init` writes one)"
    )
    parser.add_argument(
        "--dataset", nargs="+", metavar="NAME|PATH", help="datasets, files or folders (default: all bundled datasets)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="run directory (default: reports/run, or reports/sweep for sweeps, replaced by each new run; an explicit --out is never overwritten)",
    )
    parser.add_argument(
        "--resume", action="store_true", help="continue an interrupted run in --out without repeating finished work"
    )
    parser.add_argument(
        "--window",
        type=int,
        help=f"replay every model with this simulated context window, a stress test (default: each model's real window for "
        f"your own sessions, {DEFAULT_WINDOW} for the bundled datasets alone; 0: real windows)",
    )
    parser.add_argument("--estimator", help="token estimator for strategies that do not set one (default: hybrid)")
    parser.add_argument(
        "--context-window",
        action="append",
        default=[],
        metavar="MODEL=TOKENS",
        help="one model's window, over --window too (repeatable)",
    )
    parser.add_argument("--lenient", action="store_true", help="skip damaged records (counted) instead of stopping")
    parser.add_argument("--json", action="store_true", help="print the summary (the recommendation included) as one JSON object")
    parser.add_argument(
        "--executor",
        choices=EXECUTORS,
        default="local",
        help="where files are replayed: worker processes here (local), or a Dask cluster (dask; needs compactlab[dask])",
    )
    parser.add_argument(
        "--scheduler", metavar="ADDRESS", help="with --executor dask: a running Dask scheduler (default: a LocalCluster here)"
    )
    parser.add_argument("--limit", type=int, metavar="N", help="replay only the first N session files (a quick look)")
    parser.add_argument("--workers", type=int, metavar="N", help="processes replaying files side by side (default: one per core)")
    parser.add_argument(
        "--max-in-flight",
        type=int,
        metavar="N",
        help="LLM calls sent at once per provider (the [summarizer] and [judge] tables' max_in_flight)",
    )
    parser.add_argument(
        "--max-cost",
        type=float,
        metavar="USD",
        help="what this invocation may spend on LLM calls (max_cost_usd); --resume continues",
    )


def _run_config(args: argparse.Namespace, strategies=None):
    config = load_config(args.config)
    changes: dict[str, Any] = {}  # RunConfig fields the command line sets
    if args.dataset:
        changes["datasets"] = tuple(args.dataset)
    if strategies is not None:
        changes["strategies"] = tuple(strategies)
    elif getattr(args, "strategy", None):
        changes["strategies"] = tuple(setting_from(name, "--strategy") for name in args.strategy)
    if args.window is not None:
        check_number(schema_key("", "window"), args.window, "the command line", "--window")
        changes["window"] = args.window
    if args.estimator:
        changes["estimator"] = args.estimator
    if args.context_window:
        changes["context_windows"] = {**config.context_windows, **dict(parse_override(text) for text in args.context_window)}
    if args.lenient:
        changes["lenient"] = True
    if getattr(args, "no_estimation", False):
        changes["estimation"] = False
    if args.max_cost is not None:
        if not args.max_cost > 0:
            raise ValueError(f"--max-cost: {args.max_cost:g} out of range: a budget in USD > 0")
        changes["max_cost_usd"] = args.max_cost
    if args.max_in_flight is not None:
        changes.update(_in_flight(config, args.max_in_flight))
    if args.workers is not None and args.workers < 1:
        raise ValueError(f"--workers: {args.workers} out of range: at least 1 process")
    # What the configuration file set is checked already, naming it: what fails here came from a flag.
    return replace(config, **changes).checked("the command line")


def _in_flight(config, calls: int) -> dict[str, dict]:
    """--max-in-flight on each configured LLM table; without one there are no calls to bound, which is said."""
    if calls < 1:
        raise ValueError(f"--max-in-flight: {calls} out of range: at least 1 call at once")
    tables = {name: getattr(config, name) for name in ("summarizer", "judge") if getattr(config, name)}
    if not tables:
        raise ValueError(
            "--max-in-flight: the run sends no LLM calls (no [summarizer] or [judge] table in the configuration), so there "
            "is nothing to bound"
        )
    return {name: {**table, "max_in_flight": calls} for name, table in tables.items()}


def _replay(
    config, out: Path, options: dict[str, Any], rule: Rule = Rule(), all_pairs: bool = False
) -> tuple[run_result.RunResult, dict]:
    result = runs.run(config, out, **options)
    if result.llm_calls is not None:
        print(result.llm_calls, file=sys.stderr)
    if result.replayed_again:
        print(
            f"replayed again: {len(result.replayed_again)} sessions whose row parts were gone or unreadable "
            f"({', '.join(result.replayed_again[:5])}{', ...' if len(result.replayed_again) > 5 else ''})",
            file=sys.stderr,
        )
    # summary.json is written once, by `finish_document`, with the stress verdict and the next steps in it.
    return result, run_summary(result, config, rule=rule, all_pairs=all_pairs)


def _run_options(config, args: argparse.Namespace) -> dict[str, Any]:
    """What `compactlab.runs.runs.run` takes from the command line besides the configuration."""
    return {
        "resume": args.resume,
        "overwrite": args.out is None,
        "progress": sys.stderr.isatty(),
        "summarizer": make_run_summarizer(config),
        "executor": executor_for(args.executor, args.scheduler, None),
        "workers": args.workers,
        "limit": args.limit,
    }


def run_run(args: argparse.Namespace) -> int:
    config = _run_config(args)
    out = args.out or Path("reports/run")
    options = _run_options(config, args)
    checked = run_checks.check_run(config, out, **options)  # a refused run writes nothing: checked before the lock
    command = command_line("run", args)
    with RunLock(out), _interruptible(out, args):  # over the run and the files written from it
        result, document = _replay(config, out, {**options, "checked": checked}, all_pairs=args.all_pairs)
        add_stress_verdict(document, result, config, out, command, options)
        finish_document(document, out, command)
        # With failures and nothing to rank (every LLM setting fell back) the report still shows them, first.
        shown = document.get("leaderboard") or document.get("failures")
        report = write_run_report(out, progress=sys.stderr.isatty()) if shown else None
    if args.json:
        print(json.dumps(_brief(document, out, report), indent=2, default=str))
        return _incomplete_exit(document["failures"], quiet=True)
    if document.get("leaderboard"):
        recommendation = Recommendation.from_json(document["recommendation"])
        same = [SameGroup.from_json(g) for g in document["same_by_construction"]]
        board = pd.DataFrame(document["leaderboard"]).fillna(float("nan"))
        print(format_leaderboard(board, recommendation, same, width=terminal_width()))
    if "recorded" in document["strategies"]:
        print(
            format_recorded(
                document["recorded"],
                document["recorded_fidelity"],
                document["sessions"],
                document.get("trust", {}).get("reacquisition"),
                document.get("fidelity"),
                document.get("real_costs"),
            )
        )
    print(f"\n{document['sessions']} sessions × {len(document['strategies'])} strategies; results in {out}/")
    print("\n".join(verdict_lines(document, out)))
    print(format_cost_coverage(document["cost_coverage"]))
    _print_price_warnings(document)
    _print_left_out(document)
    if report is not None:
        print(f"report: {report}")
    elif document["strategies"]:
        print("no report: no strategy one can choose was replayed on an undamaged session (nothing to rank)")
    return _incomplete_exit(document["failures"])


def _incomplete_exit(failures: list[dict], quiet: bool = False) -> int:
    """0, or INCOMPLETE_EXIT (with the reason on stderr) when a strategy's results are not its own."""
    if not failures:
        return 0
    if not quiet:
        print("compactions that failed or fell back (see summary.json `failures`):")
        print("\n".join(format_failures(failures)))
    left_out = failure_ranks({"failures": failures}, ranked=False)
    if not left_out:
        return 0
    print(
        f"compactlab: results incomplete: {', '.join(left_out)} not ranked (their compactions failed or fell back; "
        f"`max_failed_share` in the configuration allows a share)",
        file=sys.stderr,
    )
    return INCOMPLETE_EXIT


def _brief(document: dict, out: Path, report: Path | None) -> dict:
    """What a script needs of a run: where it is, the recommendation, every setting's figures, what was left out."""
    keys = (
        "sessions",
        "strategies",
        "verdict_window",
        "recommendation",
        "stress_verdict",
        "next_steps",
        "leaderboard",
        "cost_coverage",
        "left_out",
    )
    return {"out": str(out), "report": str(report) if report else None, **{k: document.get(k) for k in keys}}


def run_sweep(args: argparse.Namespace) -> int:
    expiry = (None, *args.on_cache_expiry) if args.on_cache_expiry else (None,)  # each setting also without the rule
    sweep_run.checked_grid(args.strategy, args.thresholds, args.keep, args.min_preservation, expiry)  # before anything is written
    config = _run_config(args, strategies=())
    out = args.out or Path("reports/sweep")
    options = _run_options(config, args)
    grid = (args.strategy, args.thresholds, args.keep, args.min_preservation)
    checked = run_checks.check_run(sweep_run.grid_config(config, *grid, expiry), out, **options)  # a refused sweep writes nothing
    command = command_line("sweep", args)
    with RunLock(out), _interruptible(out, args):
        swept = sweep_run.sweep_grid(config, out, *grid, checked=checked, command=command, cache_expiry=expiry, **options)
        if swept.run.llm_calls is not None:
            print(swept.run.llm_calls, file=sys.stderr)
        document, sweep, analysis = swept.summary, swept.document, swept.result
        report = None if args.no_report else write_run_report(out, progress=sys.stderr.isatty())
    settings = len(analysis.settings)
    if args.json:
        brief = _brief(document, out, report)
        print(json.dumps({**brief, **sweep, "settings": settings}, indent=2, default=str))
        return _incomplete_exit(document["failures"], quiet=True)
    print(format_sweep(analysis, width=terminal_width()))
    print(f"\n{settings} settings × {swept.run.sessions['session'].nunique()} sessions; results in {out}/")
    print("\n".join(verdict_lines(document, out)))
    print(format_cost_coverage(document["cost_coverage"]))
    _print_price_warnings(document)
    if sweep["recommended_config"]:
        print(f"recommended configuration: {out / 'recommended.toml'}")
    else:
        print(f"no recommendation: the reasons and the next command are in {out / sweep_run.NO_RECOMMENDATION}")
    if report is not None:
        print(f"report: {report}")
    return _incomplete_exit(document["failures"])


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a run or a sweep; its message says what was kept and the command that continues."""


@contextmanager
def _interruptible(out: Path, args: argparse.Namespace) -> Iterator[None]:
    """Ctrl-C in the block: `Interrupted`, naming the sessions kept in `out` and the `--resume` command
    made of the user's own arguments (`compactlab.cli.main` prints it, one line, and exits 130)."""
    try:
        yield
    except KeyboardInterrupt:
        finished = len({session for session, _ in read_done(out / DONE).units})
        words = list(getattr(args, "argv", None) or [])
        if "--resume" not in words:
            words.append("--resume")
        raise Interrupted(
            f"interrupted: {finished} session{'s' if finished != 1 else ''} finished, kept in {out}/; continue with: "
            f"{shlex.join(['compactlab', *words])}"
        ) from None


def _print_left_out(document: dict) -> None:
    left = document["left_out"]
    if left["skipped_records"]:
        print(
            f"  {sum(left['skipped_records'].values())} damaged records skipped in {len(left['skipped_records'])} sessions (see summary.json)"
        )
    if left["sessions_without_calls"]:
        print(f"  {len(left['sessions_without_calls'])} sessions have no recorded LLM calls and were not replayed")
    for failed in left["files_not_read"]:
        print(f"  file not read: {failed['error']}")


def terminal_width() -> int | None:
    """The terminal's columns, which the tables and their prose fit (None when the output is not a terminal:
    a file or a pipe gets every figure; scripts read --json)."""
    return shutil.get_terminal_size().columns if sys.stdout.isatty() else None


def _print_price_warnings(document: dict) -> None:
    for warning in document.get("unmatched_price_keys", []):
        print(f"warning: {warning}", file=sys.stderr)
