"""A run's rows as Parquet: one part per session and kind, committed by its done.jsonl line.

The process that replays a session writes its call rows and its compaction rows as two Parquet
files under `rows/calls/` and `rows/compactions/` of the run directory (written to a temporary
name and renamed, so a file under its own name is whole); the run's process then commits them
with the session's line in done.jsonl, which names them (`compactlab.runs.run_files`). Only parts a done
line names are part of the run: what a killed run left unnamed is removed when the run directory
is opened again.

Each part is one row group, its rows setting after setting: a reader loads one session alone
(`sessions=`: its own file) or one setting's rows (`settings=`: each part's rows filtered). A row
group per setting would let a reader skip the others' pages, but a part holds a few thousand rows,
and each row group costs its writer some 0.5 ms whatever its size (a row group per setting was a
tenth of a 36-setting sweep's CPU: `python -m tests.scripts.speed_sweep`). Compaction rows
carry nested values (the preservation scores, a judge's verdict): those columns are stored as JSON
text, named in the file's metadata, and decoded when read, so a row reads back as the row the
replay wrote. `export_jsonl` writes the rows as JSON lines, one row per line.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from compactlab.replay.row_schema import CALL_TYPES, COMPACTION_TYPES, ColumnType
from compactlab.runs.call_rows import json_line
from compactlab.runs.run_files import DONE, before_write, naming, read_done

ROWS = "rows"
KINDS = ("calls", "compactions")
JSON_COLUMNS = b"compactlab.json_columns"  # file metadata: the columns stored as JSON text

_ARROW: dict[ColumnType, pa.DataType] = {
    str: pa.string(),
    int: pa.int64(),
    bool: pa.bool_(),
    float: pa.float64(),
    dict: pa.string(),
}
# One schema for every part, whatever a session's values are (a column that is empty in one
# session must not get another type there): the files then read as one table.
CALL_SCHEMA = pa.schema([(name, _ARROW[kind]) for name, kind in CALL_TYPES.items()])


def part_path(out: Path, name: str) -> Path:
    return Path(out) / name


def _new_name(kind: str) -> str:
    # Random, not numbered: workers on other machines (Dask) and earlier processes of a resumed run
    # write into the same folder.
    return f"{ROWS}/{kind}/part-{uuid.uuid4().hex}.parquet"


def write_part(out: Path, kind: str, table: pa.Table) -> str:
    """Write `table` as a new part of `kind` (one row group); its name relative to `out`."""
    name = _new_name(kind)
    path = part_path(out, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    before_write(path)
    try:
        with naming(path), pq.ParquetWriter(temporary, table.schema) as writer:
            writer.write_table(table, row_group_size=max(table.num_rows, 1))
        with naming(path):
            os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return name


def calls_table(columns: dict[str, np.ndarray | tuple[np.ndarray, list]]) -> pa.Table:
    """A session's call rows (arrays; text columns as codes into their values, `compactlab.runs.text_codes.text_codes`)."""
    arrays = []
    for field in CALL_SCHEMA:
        values = columns[field.name]
        if isinstance(values, tuple):  # codes into the distinct texts
            codes, distinct = values
            array = (
                pa.array(distinct, type=pa.string()).take(pa.array(codes, type=pa.int64()))
                if len(codes)
                else pa.array([], pa.string())
            )
        else:
            array = pa.array(values.tolist() if values.dtype == object else values, type=field.type, from_pandas=True)
        arrays.append(array)
    return pa.Table.from_arrays(arrays, schema=CALL_SCHEMA)


def compactions_table(rows: list[dict]) -> pa.Table:
    """Compaction rows as written by a replay (and the judge), typed by `COMPACTION_TYPES`: nested
    values (dicts, lists) as JSON text. A column the schema does not declare is an error, not a
    column stored with whatever type its values suggest."""
    names = list(dict.fromkeys(name for row in rows for name in row))
    undeclared = [name for name in names if name not in COMPACTION_TYPES]
    if undeclared:
        raise ValueError(f"compaction rows hold columns compactlab.replay.row_schema does not declare: {', '.join(undeclared)}")
    nested = [n for n in names if COMPACTION_TYPES[n] is dict]
    columns = {}
    for name in names:
        values = [row.get(name) for row in rows]
        if name in nested:
            values = [None if v is None else json.dumps(v, ensure_ascii=False) for v in values]
        columns[name] = pa.array(values, type=_ARROW[COMPACTION_TYPES[name]])
    table = pa.table(columns) if columns else pa.table({"setting": pa.array([], pa.string())})
    return table.replace_schema_metadata({JSON_COLUMNS: json.dumps(nested).encode()})


class DamagedPart(ValueError):
    """A committed row part that is gone or cannot be read (a deleted file, a corrupted page)."""

    def __init__(self, out: Path, name: str, session: str | None, reason: str) -> None:
        self.out, self.name, self.session = Path(out), name, session
        owner = f" (the rows of session {session!r})" if session is not None else ""
        super().__init__(
            f"{part_path(out, name)}{owner} cannot be read: {reason}; `compactlab run --resume --out {out}` "
            f"(with the run's options) replays that session again"
        )


def _read_part(out: Path, name: str, filters=None, columns: list[str] | None = None) -> pa.Table:
    """A part (its `columns` only, when given), a call column declared since it was written read as
    absent (null; `compactlab.runs.run_format`: an added column is no format event). A compaction
    part stores the columns its rows have (the judge's only with a judge): a row read back lacks the
    others, which readers take as None."""
    path = part_path(out, name)
    try:
        stored = columns if columns is None else [c for c in columns if c in pq.read_schema(path).names]
        table = pq.read_table(path, filters=filters, columns=stored)
    except (OSError, pa.ArrowException) as exc:  # a missing file, a damaged footer or page
        raise _damaged(out, name, exc) from None
    if not name.startswith(f"{ROWS}/calls/"):
        return table
    for field in CALL_SCHEMA if columns is None else [CALL_SCHEMA.field(c) for c in columns if c in CALL_TYPES]:
        if field.name not in table.column_names:
            table = table.append_column(field, pa.nulls(table.num_rows, field.type))
    return table.select([c for c in (CALL_SCHEMA.names if columns is None else columns) if c in table.column_names])


def _damaged(out: Path, name: str, exc: Exception) -> DamagedPart:
    owners = {part: t for t, commits in read_done(Path(out) / DONE).parts.items() for c in commits for part in c.values()}
    reason = "the file is gone" if isinstance(exc, FileNotFoundError) else str(exc).strip() or type(exc).__name__
    return DamagedPart(out, name, owners.get(name), reason)


def damaged_parts(out: Path, whole: bool = True) -> list[DamagedPart]:
    """Every committed part of the run in `out` that cannot be read whole (`whole=False`: whose file
    is gone or whose footer is damaged, which reading the footers alone finds), as its error."""
    found = []
    for kind in KINDS:
        for name in read_done(Path(out) / DONE).part_names(kind):
            try:
                if whole:
                    _read_part(out, name)
                else:
                    pq.read_metadata(part_path(out, name))
            except DamagedPart as exc:
                found.append(exc)
            except (OSError, pa.ArrowException) as exc:
                found.append(_damaged(out, name, exc))
    return found


def _tables(
    out: Path, names: Iterable[str], settings: Iterable[str] | None, columns: list[str] | None = None
) -> Iterator[pa.Table]:
    filters = None if settings is None else [("setting", "in", list(settings))]
    for name in names:
        yield _read_part(out, name, filters, columns)


def _part_rows(table: pa.Table) -> list[dict]:
    """A compaction part's rows as the replay wrote them (JSON text columns decoded: those the
    schema declares nested, and those an older part's metadata names)."""
    declared = [name for name in table.column_names if COMPACTION_TYPES.get(name) is dict]
    nested = dict.fromkeys([*declared, *json.loads((table.schema.metadata or {}).get(JSON_COLUMNS, b"[]"))])
    rows = table.to_pylist()
    for row in rows:
        for name in nested:
            if row.get(name) is not None:
                row[name] = json.loads(row[name])
    return rows


def part_calls(out: Path, names: Iterable[str]) -> pd.DataFrame:
    """The call rows of the parts `names`, in order, as one frame."""
    tables = list(_tables(out, names, None))
    return pa.concat_tables(tables).to_pandas() if tables else pd.DataFrame()


def part_compaction_rows(out: Path, names: Iterable[str]) -> list[dict]:
    """The compaction rows of the parts `names`, in order, as the replay wrote them."""
    return [row for table in _tables(out, names, None) for row in _part_rows(table)]


def _committed(out: Path, kind: str, sessions: Iterable[str] | None) -> list[str]:
    log = read_done(Path(out) / DONE)
    if sessions is None:
        return log.part_names(kind)
    return [commit[kind] for t in sessions for commit in log.parts.get(t, [])]


def run_calls(
    out: Path,
    settings: Iterable[str] | None = None,
    sessions: Iterable[str] | None = None,
    columns: list[str] | None = None,
) -> pd.DataFrame:
    """The committed call rows of the run in `out` (of `settings` and `sessions` only, and
    `columns` only, when given), in commit order."""
    tables = list(_tables(out, _committed(out, "calls", sessions), settings, columns))
    frame = pa.concat_tables(tables).to_pandas() if tables else pd.DataFrame()
    return frame if len(frame) else pd.DataFrame()


def run_compaction_rows(out: Path, settings: Iterable[str] | None = None, sessions: Iterable[str] | None = None) -> list[dict]:
    """The committed compaction rows of the run in `out`, as the replay wrote them (see `run_calls`)."""
    return list(iter_rows(out, "compactions", settings, sessions))


def run_compaction_rows_holding(out: Path, column: str) -> list[dict]:
    """The committed compaction rows of the run in `out` whose `column` holds a value (in commit
    order, as `run_compaction_rows` gives them): a run's statistics need the few rows carrying the
    real compactions' re-acquisition counts, and turning every row of a sweep into dicts was most of
    building its summary.json."""
    rows: list[dict] = []
    for table in _tables(out, _committed(out, "compactions", None), None):
        if column in table.column_names:
            rows += _part_rows(table.filter(pc.is_valid(table[column])))
    return rows


def iter_rows(
    out: Path, kind: str, settings: Iterable[str] | None = None, sessions: Iterable[str] | None = None
) -> Iterator[dict]:
    """The committed rows of `kind` ("calls" or "compactions"), part by part, as dicts of plain values."""
    for table in _tables(out, _committed(out, kind, sessions), settings):
        yield from _part_rows(table) if kind == "compactions" else table.to_pylist()


def remove_unnamed(out: Path, named: Iterable[str]) -> None:
    """Remove every part file (and temporary file) no done line names: a killed run's, never committed."""
    keep = {part_path(out, name).resolve() for name in named}
    for kind in KINDS:
        folder = Path(out) / ROWS / kind
        if folder.is_dir():
            for path in folder.iterdir():
                if path.resolve() not in keep:
                    path.unlink(missing_ok=True)


def export_jsonl(out: Path, kind: str, target: Path, settings: Iterable[str] | None = None) -> int:
    """Write the run's committed rows of `kind` as JSON lines to `target`, part by part (renamed
    into place when whole); how many rows."""
    target = Path(target)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    count = 0
    try:
        with temporary.open("w", encoding="utf-8") as handle, naming(target):
            for row in iter_rows(out, kind, settings):
                handle.write(json_line(row))
                count += 1
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return count
