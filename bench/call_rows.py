"""A run's rows as the process that replayed them hands them over: JSON lines and arrays.

A sweep writes hundreds of thousands of call rows, and most of them are the same for every
setting of a transcript: the uncompacted replay's rows before the setting's first compaction
(`bench.uncompacted`), but for the setting's label. `SharedRows` holds those once per transcript
and estimator, as JSON lines with a stand-in label and as column values; each setting adds only
its own rows after them. `json_rows` formats rows exactly as `json.dumps(row)` would, from one
template; `call_arrays` gathers a transcript's rows into the arrays `bench.runs.finish` joins.
"""

from __future__ import annotations

import json
from itertools import accumulate

import numpy as np

from bench.metrics import TextCodes, text_codes
from bench.walk import CALL_COLUMNS, CallColumns

TEXT_COLUMNS = frozenset({"transcript", "config", "model"})


class SharedRows:
    """The uncompacted replay's call rows as JSON lines, with a stand-in config label, and as columns.

    Every setting of a transcript (with the same estimator) starts with these rows but for its
    label: they are formatted and kept once, and each setting takes as many as it shares."""

    STAND_IN = f'"config": {json.dumps(chr(0))}, '  # no label's JSON text: "\u0000" is no label

    def __init__(self) -> None:
        # Each line is `head` (`{"transcript": ..., `, the same in every row), the config, and its
        # own rest: a setting's lines are joined from the rests with its label, not searched for
        # the stand-in and replaced. Kept as UTF-8, the bytes the run's file gets: a sweep writes
        # them for every setting, a hundred megabytes, and encoding them each time was a copy more.
        self.head = ""
        self.rests: list[bytes] = []
        self.columns: CallColumns = {name: [] for name in CALL_COLUMNS}

    def first(self, count: int, label: str, calls: CallColumns) -> bytes:
        """The first `count` rows' lines with `label`, as UTF-8; `calls` (a replay sharing them) gives any not kept yet."""
        if count > len(self.rests):
            more = {name: values[len(self.rests) : count] for name, values in calls.items()}
            for name, values in more.items():
                self.columns[name] += values
            more["config"] = [chr(0)] * len(more["config"])
            for line in json_rows(more):
                self.head, _, rest = line.partition(self.STAND_IN)  # the config's text comes right after the transcript's
                self.rests.append(rest.encode("utf-8"))
        if not count:
            return b""
        start = f'{self.head}"config": {json_value(label)}, '.encode("utf-8")
        return start + start.join(self.rests[:count])


def call_arrays(
    transcript: str, labels: list[str], parts: list[tuple[SharedRows, int, int]], own: CallColumns
) -> dict[str, np.ndarray | TextCodes]:
    """A transcript's call rows as arrays, setting after setting: for each (its shared rows, how
    many of them it takes, how many own rows follow in `own`). Each value is converted once and
    the rows are gathered by one index per column (converting every setting's copy of the shared
    rows took most of this). Text columns come as codes (`bench.metrics.text_codes`)."""
    sources = list({id(shared): shared.columns for shared, _, _ in parts}.values()) + [own]
    starts = dict(zip(map(id, sources), accumulate((len(s["call"]) for s in sources), initial=0)))
    index, position = [], starts[id(own)]
    for shared, taken, added in parts:
        start = starts[id(shared.columns)]
        index += [np.arange(start, start + taken), np.arange(position, position + added)]
        position += added
    index = np.concatenate(index) if index else np.zeros(0, dtype=np.intp)
    arrays: dict[str, np.ndarray | TextCodes] = {
        "transcript": (np.zeros(len(index), dtype=np.intp), [transcript]),
        "config": (np.repeat(np.arange(len(labels)), [taken + added for _, taken, added in parts]), list(labels)),
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


def json_rows(columns: CallColumns) -> list[str]:
    """Each row's JSON line, as `json.dumps(row)` would write it, formatted from one template: a
    sweep writes hundreds of thousands of call rows, and dumping each row's dict took a tenth of
    its time."""
    names = list(columns)
    template = "{" + ", ".join(f"{json.dumps(name)}: %s" for name in names) + "}\n"
    encoded = [_json_column(columns[name]) for name in names]
    return [template % row for row in zip(*encoded)]


def _json_column(values: list) -> list:
    """A column's values as JSON texts (ints are their own text under %s)."""
    types = set(map(type, values))
    if types == {int}:
        return values
    if bool in types and types != {bool}:  # True == 1: one shared text would write both alike
        return [json_value(v) for v in values]
    texts: dict = {}
    return [texts.get(v) or texts.setdefault(v, json_value(v)) for v in values]


def json_value(value: object) -> str:
    if value is True or value is False:
        return "true" if value else "false"
    return json.dumps(value, ensure_ascii=False)


def json_line(row: dict) -> str:
    # A row holds no reference to itself: the encoder need not keep track of what it is inside.
    return json.dumps(row, ensure_ascii=False, check_circular=False) + "\n"
