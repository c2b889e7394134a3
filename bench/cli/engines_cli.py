"""`compactlab engines`: the presets against the real engines' own compactions in some datasets."""

from __future__ import annotations

import argparse
import json

from compactlab.results.real_engines import engine_rows, format_engines


def add_command(commands, command, add_input_arguments, load) -> None:
    engines = command(
        commands,
        "engines",
        "where each real compaction happened beside where its engine's preset (claude-code, pi, codex) would have compacted",
    )
    add_input_arguments(engines)
    engines.add_argument("--json", action="store_true", help="print one JSON object per real compaction")
    engines.set_defaults(run=lambda args: run_engines(args, load))


def run_engines(args: argparse.Namespace, load) -> int:
    loaded = load(args)
    rows = [row for session in loaded.sessions for row in engine_rows(session)]
    if args.json:
        for row in rows:
            print(json.dumps(row.as_json(), ensure_ascii=False))
    else:
        print(format_engines(rows))
    return 0
