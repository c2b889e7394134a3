"""The run directory's format number, and the one step that reads a run directory or refuses it by name.

meta.json's `format` says how a run directory was written; every reader of a run directory goes
through `checked` (or `upgraded_table`), so no other module branches on how old a directory is.

Format 4 (`FORMAT`) is the only one this version reads: Parquet row parts committed by done.jsonl
(`compactlab.runs.run_storage`), `sessions.csv`, `session_facts.json`, the `session` and `setting`
columns and keys, meta.json and summary.json as their JSON Schemas say (bench/runs/schema/
run-meta-v4.schema.json, run-summary-v4.schema.json: versioned with this number).
Formats 1 to 3 (rows in `calls.jsonl`; no format number; the older words "transcript" and "config")
were written by development versions before 0.1.0 had users: refused by name, with the command
that replays them.

A column added to the rows or to the per-session table is not a format event: a run written before
it reads it as absent (empty: NaN in the table, None in a row), so its figure is "–" where it was not
measured (`upgraded_table`, `compactlab.runs.run_storage`). A change that makes an older directory
mean something else (a column renamed, a file moved) is one: it takes `FORMAT + 1`.

`--resume` continues a directory of this format only: one run's rows stay of one format.

A directory whose meta.json names a format above `FORMAT` was written by a newer compactlab: refused.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from compactlab.results.metrics import TABLE_COLUMNS, with_derived
from compactlab.runs.run_files import DONE
from compactlab.sessions.neutralise import read_csv

FORMAT = 4
OLD_ROW_FILES = ("calls.jsonl", "compactions.jsonl")  # format 1's rows (an overwritten run directory loses them)
# What each format this version refuses was, for the refusal.
_REFUSED = {
    1: "rows appended to calls.jsonl and compactions.jsonl, by compactlab before the Parquet row parts",
    2: "Parquet row parts, meta.json without a format number",
    3: 'transcripts.csv and the older words "transcript" and "config"',
}


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
            f"{out}: run directory format {found}, written by a newer compactlab; this version reads format "
            f"{FORMAT}: upgrade compactlab"
        )
    if found < FORMAT:
        raise UnreadableFormat(
            f"{out}: run directory format {found} ({_REFUSED.get(found, 'an older layout')}); this version reads "
            f"format {FORMAT} only: replay it with `compactlab run` (another --out)"
        )
    return found


def resumable(out: Path) -> int:
    """The format of the run directory `out` when `--resume` may continue it: this version's only."""
    return checked(out)


def meta_format() -> dict[str, int]:
    """What meta.json holds of the format (written by every run)."""
    return {"format": FORMAT}


def upgraded_table(out: Path, meta: dict) -> pd.DataFrame:
    """sessions.csv (gzipped in a committed reference run) as this version writes it: a column of the
    per-session table the run's version did not write is read as absent (NaN: "–" wherever it is
    shown), `damaged` from meta.json where the table lacks it; the derived columns are computed again
    (`with_derived`)."""
    out = Path(out)
    checked(out, meta)
    table = next((t for t in (out / "sessions.csv", out / "sessions.csv.gz") if t.exists()), None)
    if table is None:
        raise FileNotFoundError(
            f"{out} is not a finished run directory (no sessions.csv): `compactlab run --out {out}` writes it"
        )
    sessions = read_csv(table)  # (read_csv undoes the formula neutralising of write_csv)
    if "damaged" not in sessions:
        sessions["damaged"] = sessions["session"].isin(set(meta.get("skipped_records") or {}))
    missing = [column for column in TABLE_COLUMNS if column not in sessions]
    return with_derived(sessions.assign(**dict.fromkeys(missing, float("nan"))))
