"""`compactlab export` (sessions as canonical JSONL) and `compactlab export-rows` (a run's rows as JSON lines)."""

from __future__ import annotations

import argparse
from pathlib import Path

from compactlab.runs.run_files import DONE
from compactlab.runs.run_storage import KINDS, export_jsonl
from compactlab.sessions.importers.canonical import write_canonical
from compactlab.sessions.output_folder import check_output_folder


def add_commands(commands, command, add_input_arguments, load) -> None:
    export = command(commands, "export", "write sessions as compactlab canonical JSONL")
    add_input_arguments(export)
    export.add_argument("--out", type=Path, required=True, help="output folder (one .jsonl per input session file)")
    export.set_defaults(run=lambda args: run_export(args, load))

    rows = command(commands, "export-rows", "write a run's call or compaction rows (Parquet in the run directory) as JSON lines")
    rows.add_argument("run_dir", type=Path, metavar="RUN", help="a run directory")
    rows.add_argument("--kind", choices=KINDS, default="calls", help="which rows (default: calls)")
    rows.add_argument("--format", choices=("jsonl",), default="jsonl", help="the output format (JSON lines, one row per line)")
    rows.add_argument("--strategy", nargs="+", metavar="LABEL", help="only these settings' rows")
    rows.add_argument("--out", type=Path, help="output file (default: RUN/KIND.jsonl)")
    rows.set_defaults(run=run_export_rows)


def run_export_rows(args: argparse.Namespace) -> int:
    if not (args.run_dir / DONE).exists():
        raise ValueError(
            f"{args.run_dir} is not a run directory (no done.jsonl): run `compactlab run --out {args.run_dir}` first"
        )
    target = args.out or args.run_dir / f"{args.kind}.jsonl"
    count = export_jsonl(args.run_dir, args.kind, target, args.strategy)
    print(f"{count:,} {args.kind} rows: {target}")
    return 0


def run_export(args: argparse.Namespace, load) -> int:
    # The folder is checked before anything is read: a refused export leaves no folder behind.
    check_output_folder(args.out, args.paths or None, own_files=frozenset())
    loaded = load(args)
    args.out.mkdir(parents=True, exist_ok=True)
    by_file: dict[str, list] = {}
    for session in loaded.sessions:
        by_file.setdefault(session.source_path, []).append(session)
    for source_path, sessions in by_file.items():
        name = Path(source_path).name.removesuffix(".gz").removesuffix(".json").removesuffix(".jsonl")
        target = write_canonical(sessions, args.out / f"{name}.jsonl")
        print(target)
    return 0
