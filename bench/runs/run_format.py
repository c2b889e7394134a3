"""The run directory's format number, and the one step that reads a directory of an older format.

meta.json's `format` says how a run directory was written; every reader of a run directory goes
through `checked` (or `upgraded_table`), so no other module branches on how old a directory is.

- 1: rows appended to `calls.jsonl` and `compactions.jsonl`, done.jsonl recording where they end
  (or one unit per line). Not read: it is refused, naming the format (replay it with this version).
- 2: Parquet row parts committed by done.jsonl (`compactlab.runs.run_storage`), no format number.
  Read: its transcripts.csv gets the columns later versions added (`upgraded_table`); it has no
  sessions.json nor estimation (`compactlab.runs.report_inputs`), which the report says it lacks.
- 3 (`FORMAT`, this version): meta.json holds the number; the run writes sessions.json and, when
  asked, its token estimation.

A directory whose meta.json names a format above `FORMAT` was written by a newer compactlab: refused.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from compactlab.results.metrics import LOSS_COLUMNS, with_derived
from compactlab.runs.run_files import DONE
from compactlab.transcripts.neutralise import read_csv

FORMAT = 3
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
    if _commits_without_parts(out / DONE):  # (not the row files' names: `export-rows` writes calls.jsonl there)
        return 1
    # No meta.json yet (a run cut off before its end) with Parquet parts: the rows are this version's.
    return 2 if meta else FORMAT


def _commits_without_parts(path: Path) -> bool:
    """Whether done.jsonl's first whole line is a format 1 commit (it names no row parts)."""
    if not path.exists():
        return False
    with path.open("rb") as handle:
        first = handle.readline()
    try:
        return first.endswith(b"\n") and "parts" not in json.loads(first)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return False  # a damaged line: read_done names it


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


def meta_format() -> dict[str, int]:
    """What meta.json holds of the format (written by every run)."""
    return {"format": FORMAT}


def upgraded_table(out: Path, meta: dict) -> pd.DataFrame:
    """transcripts.csv (gzipped in a committed reference run) as this version writes it: a table of
    format 2 gets the columns added since, unknown (NaN) where they could not be measured then,
    `damaged` from meta.json; the derived columns are computed again (`with_derived`)."""
    out = Path(out)
    version = checked(out, meta)
    table = next((t for t in (out / "transcripts.csv", out / "transcripts.csv.gz") if t.exists()), None)
    if table is None:
        raise FileNotFoundError(
            f"{out} is not a finished run directory (no transcripts.csv): `compactlab run --out {out}` writes it"
        )
    transcripts = read_csv(table)  # (undoes the formula neutralising of write_csv)
    if version == FORMAT:
        return transcripts
    if "damaged" not in transcripts:
        transcripts["damaged"] = transcripts["transcript"].isin(set(meta.get("skipped_records") or {}))
    missing = [c for c in (*LOSS_COLUMNS, "floor_tokens") if c not in transcripts]
    return with_derived(transcripts.assign(**dict.fromkeys(missing, float("nan"))))
