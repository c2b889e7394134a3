"""Session text made harmless where it leaves compactlab: on a terminal and in CSV files.

Sessions hold whatever an agent read or wrote, ids and file names included, so they may hold
escape sequences that clear a terminal, set its title (OSC 0) or write the clipboard (OSC 52),
and cells that a spreadsheet runs as formulas (`=HYPERLINK(...)`).
"""

from __future__ import annotations

import re
from typing import TextIO

import pandas as pd

# C0 controls but newline and tab (ESC starts ANSI/OSC sequences, CR overwrites a line), DEL, the
# C1 controls (0x9b is a one-character CSI, 0x9d an OSC), and lone surrogates (bytes of a file
# name that are not UTF-8, which a UTF-8 terminal cannot be sent).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def terminal_text(text: str) -> str:
    """`text` with every control character written as a visible \\uXXXX escape (valid in JSON too)."""
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


class TerminalSafe:
    """A text stream that writes `terminal_text` of whatever it is given to `stream`."""

    def __init__(self, stream: TextIO):
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(terminal_text(text))
        return len(text)

    def __getattr__(self, name: str):  # flush, isatty, fileno, encoding, ...
        return getattr(self.stream, name)


# A spreadsheet reads a cell starting with one of these as a formula (OWASP, "CSV Injection").
CSV_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: object) -> object:
    """A text cell prefixed with ' when a spreadsheet would run it, or when it starts with ' itself
    (so that `csv_text` can take the prefix off again exactly). Numbers are left alone."""
    if isinstance(value, str) and value[:1] in (*CSV_FORMULA_STARTS, "'"):
        return "'" + value
    return value


def csv_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` with `csv_cell` applied to its text columns (numeric columns keep their numbers)."""
    text_columns = _text_columns(frame)
    if not text_columns:
        return frame
    return frame.assign(**{c: frame[c].map(csv_cell) for c in text_columns})


def write_csv(frame: pd.DataFrame, path) -> None:
    csv_frame(frame).to_csv(path, index=False)


def read_csv(path) -> pd.DataFrame:
    """A CSV file written by `write_csv`, its cells as they were before."""
    frame = pd.read_csv(path)
    text_columns = _text_columns(frame)
    return frame.assign(**{c: frame[c].map(_uncell) for c in text_columns}) if text_columns else frame


def _text_columns(frame: pd.DataFrame) -> list:
    is_number = pd.api.types.is_numeric_dtype
    return [c for c in frame.columns if not is_number(frame[c]) and not pd.api.types.is_datetime64_any_dtype(frame[c])]


def _uncell(value: object) -> object:
    if isinstance(value, str) and value[:1] == "'" and value[1:2] in (*CSV_FORMULA_STARTS, "'"):
        return value[1:]
    return value
