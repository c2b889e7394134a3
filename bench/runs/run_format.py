"""The run directory's format number, and the one step that reads a directory of an older format.

meta.json's `format` says how a run directory was written; every reader of a run directory goes
through `checked` (or `upgraded_table`), so no other module branches on how old a directory is.

- 1: rows appended to `calls.jsonl` and `compactions.jsonl`, done.jsonl recording where they end
  (or one unit per line). Not read: it is refused, naming the format (replay it with this version).
- 2: Parquet row parts committed by done.jsonl (`compactlab.runs.run_storage`), no format number.
  Read: its table (transcripts.csv) gets the columns later versions added (`upgraded_table`); it has
  no per-session facts nor estimation (`compactlab.runs.report_inputs`), which the report says it lacks.
- 3: meta.json holds the number; the run writes its per-session facts and, when asked, its token
  estimation. Its files, columns and keys say "transcript" and "config" (`transcripts.csv`, the
  `transcript` and `config` columns, `sessions.json` for the facts). Read: `compactlab.runs.format_names`
  gives them format 4's names.
- 4 (`FORMAT`, this version): one word for each thing (issue 30 §3): `sessions.csv`,
  `session_facts.json`, the `session` and `setting` columns and keys.

`--resume` continues a directory of this format only: one run's rows stay of one format.

A directory whose meta.json names a format above `FORMAT` was written by a newer compactlab: refused.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from compactlab.results.metrics import LOSS_COLUMNS, with_derived
from compactlab.runs.format_names import run_file, with_current_columns
from compactlab.runs.run_files import DONE
from compactlab.sessions.neutralise import read_csv

FORMAT = 4
FIRST_READ = 2  # the oldest format this version reads
OLD_ROW_FILES = ("calls.jsonl", "compactions.jsonl")  # format 1's rows (an overwritten run directory loses them)


class UnreadableFormat(ValueError):
    """A run directory of a format this version does not read."""


def format_of(out: Path, meta: dict | None = None) -> int:
    """The format the run directory `out` was written in (see the module docstring)."""
    out = Path(out)
    if meta is None:
        path = out / "meta.json"
        meta = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    if "format" in meta:
        return int(meta["format"])
    first = _first_commit(out / DONE)
    if first is not None and "parts" not in first:  # (not the row files' names: `export-rows` writes calls.jsonl there)
        return 1
    if meta:
        return 2
    # No meta.json yet (a run cut off before its end): its commits say "transcript" up to format 3.
    return 3 if first is not None and "transcript" in first else FORMAT


def _first_commit(path: Path) -> dict | None:
    """done.jsonl's first whole line (None without one, or when it is damaged: read_done names it)."""
    if not path.exists():
        return None
    with path.open("rb") as handle:
        first = handle.readline()
    try:
        record = json.loads(first) if first.endswith(b"\n") else None
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return record if isinstance(record, dict) else None


def checked(out: Path, meta: dict | None = None) -> int:
    """The format of the run directory `out`, when this version reads it; else a clear refusal."""
    found = format_of(out, meta)
    if found > FORMAT:
        raise UnreadableFormat(
            f"{out}: run directory format {found}, written by a newer compactlab; this version reads formats "
            f"{FIRST_READ} to {FORMAT}: upgrade compactlab"
        )
    if found < FIRST_READ:
        raise UnreadableFormat(
            f"{out}: run directory format {found} (rows appended to calls.jsonl and compactions.jsonl, by compactlab "
            f"before the Parquet row parts); this version reads formats {FIRST_READ} to {FORMAT}: replay it with "
            f"`compactlab run` (another --out)"
        )
    return found


def resumable(out: Path) -> int:
    """The format of the run directory `out` when `--resume` may continue it: this version's only."""
    found = checked(out)
    if found != FORMAT:
        raise UnreadableFormat(
            f"{out}: run directory format {found}; --resume continues a run of format {FORMAT} only (its rows would "
            f"mix two formats): replay it with `compactlab run` (another --out), or read it as it is (`compactlab report`)"
        )
    return found


def meta_format() -> dict[str, int]:
    """What meta.json holds of the format (written by every run)."""
    return {"format": FORMAT}


def upgraded_table(out: Path, meta: dict) -> pd.DataFrame:
    """sessions.csv (gzipped in a committed reference run) as this version writes it: a table of
    format 2 gets the columns added since, unknown (NaN) where they could not be measured then,
    `damaged` from meta.json; the derived columns are computed again (`with_derived`)."""
    out = Path(out)
    version = checked(out, meta)
    table = next((t for t in (run_file(out, "sessions.csv"), run_file(out, "sessions.csv.gz")) if t.exists()), None)
    if table is None:
        raise FileNotFoundError(
            f"{out} is not a finished run directory (no sessions.csv): `compactlab run --out {out}` writes it"
        )
    sessions = with_current_columns(read_csv(table))  # (read_csv undoes the formula neutralising of write_csv)
    if version >= 3:  # (format 3 wrote every column; only their names changed)
        return sessions
    if "damaged" not in sessions:
        sessions["damaged"] = sessions["session"].isin(set(meta.get("skipped_records") or {}))
    missing = [c for c in (*LOSS_COLUMNS, "floor_tokens") if c not in sessions]
    return with_derived(sessions.assign(**dict.fromkeys(missing, float("nan"))))
