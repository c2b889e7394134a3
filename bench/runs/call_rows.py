"""A session's call rows as the process that replayed them gathers them: arrays.

A sweep makes hundreds of thousands of call rows, and most of them are the same for every setting
of a session: the uncompacted replay's rows before the setting's first compaction
(`compactlab.replay.uncompacted`), but for the setting's label. `SharedRows` holds those once per session
and estimator, as column values; each setting adds only its own rows after them. `call_arrays`
gathers a session's rows into the arrays its Parquet part is written from (`compactlab.runs.run_storage`).
`json_line` writes a row as a JSON line (an export of the rows, `compactlab.runs.run_storage.export_jsonl`).
"""

from __future__ import annotations

import json
from itertools import accumulate

import numpy as np

from compactlab.replay.row_schema import CALL_COLUMNS, CallColumns
from compactlab.runs.text_codes import TextCodes, text_codes

TEXT_COLUMNS = frozenset({"session", "setting", "model"})


class SharedRows:
    """The uncompacted replay's call rows as columns, kept once for every setting of a session
    (with the same estimator): each setting takes as many as it shares, under its own label."""

    def __init__(self) -> None:
        self.columns: CallColumns = {name: [] for name in CALL_COLUMNS}

    def take(self, count: int, calls: CallColumns) -> None:
        """Make sure the first `count` rows are kept; `calls` (a replay sharing them) gives any not kept yet."""
        kept = len(self.columns["call"])
        if count > kept:
            for name, values in calls.items():
                self.columns[name] += values[kept:count]


def call_arrays(
    session: str, labels: list[str], parts: list[tuple[SharedRows, int, int]], own: CallColumns
) -> dict[str, np.ndarray | TextCodes]:
    """A session's call rows as arrays, setting after setting: for each (its shared rows, how
    many of them it takes, how many own rows follow in `own`). Each value is converted once and
    the rows are gathered by one index per column, not converted again for every setting's copy
    of the shared rows. Text columns come as codes (`compactlab.runs.text_codes.text_codes`)."""
    sources = list({id(shared): shared.columns for shared, _, _ in parts}.values()) + [own]
    starts = dict(zip(map(id, sources), accumulate((len(s["call"]) for s in sources), initial=0)))
    ranges: list[np.ndarray] = []
    position = starts[id(own)]
    for shared, taken, added in parts:
        start = starts[id(shared.columns)]
        ranges += [np.arange(start, start + taken), np.arange(position, position + added)]
        position += added
    index = np.concatenate(ranges) if ranges else np.zeros(0, dtype=np.intp)
    arrays: dict[str, np.ndarray | TextCodes] = {
        "session": (np.zeros(len(index), dtype=np.intp), [session]),
        "setting": (np.repeat(np.arange(len(labels)), [taken + added for _, taken, added in parts]), list(labels)),
    }
    for name in CALL_COLUMNS:
        if name not in arrays:
            values = [value for source in sources for value in source[name]]
            if name in TEXT_COLUMNS:
                codes, distinct = text_codes(values)
                arrays[name] = (codes[index], distinct)
            else:
                arrays[name] = np.array(values)[index]
    return arrays


def json_line(row: dict) -> str:
    # A row holds no reference to itself: the encoder need not keep track of what it is inside.
    return json.dumps(row, ensure_ascii=False, check_circular=False) + "\n"
