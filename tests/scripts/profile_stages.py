"""Where a profiled command's CPU time goes, stage by stage (`speed_truncate --profile`, `speed_sweep --profile`).

A stage is the cumulative time of the function that does it (cProfile with a CPU-time timer, the
command in one process with one worker): the stages nest as indented, so a stage's share includes
those under it, and `reading` includes the check's second reading of the files (both go through
the importers' `load_file`). The shares are of the profile's total; a profile runs several times
slower than the command, most in the many small calls, so compare shares, not seconds.
"""

from __future__ import annotations

import cProfile
import pstats
import time

# One stage a line: the function's file in the package (bench/), its name, and the label, indented as the stages nest.
_TABLE = """\
runs/run_checks.py check_run | checks before the run (a pass over the files)
sessions/importers/__init__.py load_file | reading (importers, both passes)
runs/session_job.py replay_session | replaying every setting of every session
replay/replay.py replay |   the replays (engine, strategies, scoring)
compaction/engine.py _compact |     compactions (engine and strategy)
compaction/engine.py piece_size |       pieces the strategies count
replay/replay.py _scored |     scoring the compactions
runs/session_job.py assemble |   rows and per-session results
runs/session_job.py _results |     per-session results (sessions.csv rows)
runs/report_inputs.py estimated |       token estimation (the report's)
results/leaderboard.py summary_document | statistics (summary.json: bootstrap, Holm, figures)
report/run_report.py write_run_report | the report
"""
STAGES = tuple((*line.split(" | ")[0].split(), line.split(" | ")[1]) for line in _TABLE.splitlines())


def stage_lines(stats: pstats.Stats) -> list[str]:
    """One line per stage found in the profile: its share of the total and its profiled seconds."""
    total = stats.total_tt  # type: ignore[attr-defined]
    cumulative: dict[tuple[str, str], float] = {}
    for (filename, _, name), (_, _, _, ct, _) in stats.stats.items():  # type: ignore[attr-defined]
        for path, function, _ in STAGES:
            if name == function and filename.endswith("/" + path):
                cumulative[(path, function)] = cumulative.get((path, function), 0.0) + ct
    lines = [f"CPU seconds profiled: {total:.1f}"]
    for path, function, label in STAGES:
        if (path, function) in cumulative:
            seconds = cumulative[(path, function)]
            lines.append(f"{label}: {100 * seconds / total:.1f}% ({seconds:.1f} s; {function})")
    return lines


def profiled(cli_arguments: list[str]) -> None:
    """`compactlab CLI_ARGUMENTS` in this process under cProfile with a CPU-time timer; prints the
    stages, then the functions by cumulative and by own time."""
    from compactlab.cli.main import main as cli

    profile = cProfile.Profile(time.process_time)
    profile.enable()
    try:
        cli(cli_arguments)
    except SystemExit:
        pass
    profile.disable()
    stats = pstats.Stats(profile).sort_stats("cumulative")
    print("\n".join(stage_lines(stats)))
    stats.print_stats(40)
    stats.sort_stats("tottime").print_stats(25)
