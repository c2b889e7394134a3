"""The names a run directory of format 3 or older gave what format 4 calls a session or a setting.

Format 4 has one word for each (issue 30 §3): "session" wherever older formats said "transcript",
"setting" where they said "config" (a strategy with its settings, what a run ranks). The table is
`sessions.csv`, the per-session facts are `session_facts.json`, the rows' columns are `session` and
`setting`, done.jsonl's commits name their `settings`, and the JSON documents' keys follow. Every
reader passes what it read through these functions, which change only names of an older format (a
format 4 name passes unchanged), so no reader branches on a directory's age.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TypeVar

import pandas as pd
import pyarrow as pa

OLD_COLUMNS = {"transcript": "session", "config": "setting"}  # a row column's older name -> its name
OLD_FILES = {"sessions.csv": "transcripts.csv", "session_facts.json": "sessions.json"}  # name -> older name
_OLD_KEY = re.compile(r"^[a-z_]*transcript[a-z_]*$")  # a document key of the older word (not a path)
# Up to format 3 a document's "config" key always held a setting's label ("configs": labels); a run's
# configuration is its own file, config.json, whose keys never were these.
_OLD_KEYS = {"config": "setting", "configs": "settings"}

Found = TypeVar("Found")


def current_key(key: str) -> str:
    """A JSON key (or done.jsonl field) under its format 4 name."""
    if key in _OLD_KEYS:
        return _OLD_KEYS[key]
    return key.replace("transcript", "session") if _OLD_KEY.match(key) else key


def with_current_keys(document: Found) -> Found:
    """A JSON document with every key of an older format renamed (values, such as ids, are kept)."""
    if isinstance(document, dict):
        return {current_key(k) if isinstance(k, str) else k: with_current_keys(v) for k, v in document.items()}  # type: ignore[return-value]
    if isinstance(document, list):
        return [with_current_keys(v) for v in document]  # type: ignore[return-value]
    return document


def with_current_columns(table: Found) -> Found:
    """A Parquet table or data frame with its older column names renamed."""
    if isinstance(table, pa.Table) and any(name in OLD_COLUMNS for name in table.column_names):
        return table.rename_columns([OLD_COLUMNS.get(name, name) for name in table.column_names])
    if isinstance(table, pd.DataFrame) and any(name in OLD_COLUMNS for name in table.columns):
        return table.rename(columns=OLD_COLUMNS)
    return table


def stored_name(column: str, present: list[str]) -> str:
    """The name `column` is stored under in a part whose columns are `present`."""
    older = next((old for old, new in OLD_COLUMNS.items() if new == column), None)
    return older if column not in present and older in present else column


def stored_columns(columns: list[str] | None, present: list[str]) -> list[str] | None:
    """The names `columns` are stored under in a part whose columns are `present`."""
    return None if columns is None else [stored_name(c, present) for c in columns]


def run_file(out: Path, name: str) -> Path:
    """The path of the run file `name` in `out`, under its older name in a directory of an older format."""
    path = Path(out) / name
    old = OLD_FILES.get(name.removesuffix(".gz"))
    if path.exists() or old is None:
        return path
    older = Path(out) / (old + (".gz" if name.endswith(".gz") else ""))
    return older if older.exists() else path
