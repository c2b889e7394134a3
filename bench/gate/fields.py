"""The gate's own files checked field by field before any work: the baseline, the recorded answers, the suite.

A gate that reads its files loosely can be fooled by them: a value of the wrong type stops it with a
traceback (exit 1, which `check` uses for "regression"), and a value that cannot be compared (NaN,
infinite, outside the metric's range) or a tolerance no change can exceed makes a check that cannot
fail. So every field a command reads is checked first, and the error names the file and the key path:

    baseline.json: values.summarize.preservation_k5.<session>: expected a number in [0, 1] (a share), got 'abc'

Each metric has a range, from its kind in the catalogue (`compactlab.results.catalogue.Metric.kind`): a
share is in [0, 1]; tokens and counts are whole-number-like figures ≥ 0; dollars and other numbers may be
negative (a cost change). No figure is larger than 2**53: the largest whole number a float holds exactly,
so a count beyond it is no count (and a sum of such values overflows towards infinity).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

from compactlab.results.catalogue import BY_NAME

LARGEST = float(2**53)  # the largest whole number a float holds exactly: no figure of a session is larger
# No file of the gate nests deeper than 8 levels (the baseline's compactions: label, metric, session,
# points, point, lost items); 32 leaves room for settings tables, and deeper is damage, refused before
# Python's parsers or the hash of the suite recurse into it.
MAX_DEPTH = 32


class SuiteError(ValueError):
    """A suite, baseline or recorded answer that cannot be used as written (exit code 2); here, below
    `compactlab.gate.suite`, so that every file's checks raise it."""


# Shares of what compaction removed: a context that grew (a summary and re-attached files larger than
# what they replaced) removed a negative share, unbounded below (a real session's baseline has -0.11).
SIGNED_SHARES = frozenset({"removed_share"})


def value_range(metric: str) -> tuple[float, float]:
    """The values a session can have for `metric`: shares in [0, 1] (a removed share ≤ 1), tokens and counts ≥ 0."""
    kind = BY_NAME[metric].kind
    if kind == "share":
        return (-LARGEST if metric in SIGNED_SHARES else 0.0), 1.0
    if kind in ("tokens", "count"):
        return 0.0, LARGEST
    return -LARGEST, LARGEST


def range_text(metric: str) -> str:
    low, high = value_range(metric)
    kind = BY_NAME[metric].kind
    if kind == "share":
        return "a number ≤ 1 (a share of what was removed)" if low < 0 else "a number in [0, 1] (a share)"
    return f"a number ≥ 0 and ≤ 2**53 ({kind})" if low == 0 else "a number of magnitude ≤ 2**53"


def shown(value: object) -> str:
    """A bad value as an error shows it: its repr, cut short (it may be a whole damaged table)."""
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


def depth(value: object, limit: int = MAX_DEPTH) -> int:
    """How deep lists and tables nest in `value`, counted up to `limit + 1` (iteratively: no recursion)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level + 1)
            if deepest > limit:
                return deepest
            stack.extend((child, level + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


class Fields:
    """Checks of one file's fields; each failure is a `SuiteError` naming the file and the key path."""

    def __init__(self, file: Path | str) -> None:
        self.file = file

    def fail(self, key: str, expected: str, value: object) -> SuiteError:
        return SuiteError(f"{self.file}: {key}: expected {expected}, got {shown(value)}")

    def table(self, value: object, key: str, optional: bool = False) -> dict:
        if optional and value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail(key, "a table (a JSON object)" + (" or null" if optional else ""), value)
        return value

    def text(self, value: object, key: str, optional: bool = False) -> str | None:
        if optional and value is None:
            return None
        if not isinstance(value, str):
            raise self.fail(key, "a string" + (" or null" if optional else ""), value)
        return value

    def texts(self, value: object, key: str) -> list[str]:
        if not isinstance(value, list):
            raise self.fail(key, "a list of strings", value)
        for i, item in enumerate(value):
            self.text(item, f"{key}[{i}]")
        return value

    def flag(self, value: object, key: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(key, "true or false", value)
        return value

    def whole(self, value: object, key: str, low: int = 0, optional: bool = False) -> int | None:
        if optional and value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= LARGEST:
            raise self.fail(key, f"a whole number ≥ {low}" + (" or null" if optional else ""), value)
        return value

    def number(
        self, value: object, key: str, low: float = -LARGEST, high: float = LARGEST, expected: str = "", optional: bool = False
    ) -> float | None:
        """A finite number in [low, high] (NaN and infinities are never values of a figure)."""
        if optional and value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or not (math.isfinite(value) and low <= value <= high):
            raise self.fail(
                key, (expected or f"a finite number in [{low:g}, {high:g}]") + (" or null" if optional else ""), value
            )
        return float(value)

    def keys(self, table: dict, key: str, required: tuple[str, ...], allowed: tuple[str, ...] = ()) -> None:
        """`table` has every `required` key and no key outside `required` + `allowed`."""
        missing = [k for k in required if k not in table]
        if missing:
            raise SuiteError(f"{self.file}: {key or 'the file'}: missing {', '.join(map(repr, missing))}")
        extra = sorted(set(table) - set(required) - set(allowed))
        if extra:
            raise SuiteError(f"{self.file}: {key or 'the file'}: unknown keys {', '.join(map(repr, extra))}")

    def each(self, value: object, key: str, check: Callable[[str, object, str], object]) -> None:
        """`check(name, item, key path)` for every entry of the table `value`."""
        for name, item in self.table(value, key).items():
            check(name, item, f"{key}.{name}")


def check_depth(data: object, file: Path | str) -> None:
    if depth(data) > MAX_DEPTH:
        raise SuiteError(f"{file}: lists or tables nested deeper than {MAX_DEPTH} levels: not a file compactlab wrote")


# --- the baseline --------------------------------------------------------------------------------------

POWER_FIELDS = ("compactions", "sessions", "baseline", "required", "detects_required", "loss", "share")


def check_baseline(document: object, file: Path | str) -> dict:
    """The baseline `document` (as read, upgraded to this format's keys) with every field a command
    reads checked; `SuiteError` naming the first bad one."""
    f = Fields(file)
    top = f.table(document, "the file")
    check_depth(top, file)
    f.keys(
        top,
        "",
        ("format", "suite", "metrics", "strategies", "sessions", "values"),
        ("compactlab", "compactions", "summarizer", "sensitivity"),
    )
    f.text(top.get("compactlab"), "compactlab", optional=True)
    suite = f.table(top["suite"], "suite")
    f.keys(suite, "suite", ("file", "hash"))
    f.text(suite["file"], "suite.file")
    f.text(suite["hash"], "suite.hash")
    f.each(top["metrics"], "metrics", lambda name, spec, key: _metric_spec(f, name, spec, key))
    f.each(top["strategies"], "strategies", lambda _, entry, key: _strategy(f, entry, key))
    f.each(top["sessions"], "sessions", lambda _, entry, key: _session_file(f, entry, key))
    f.each(top["values"], "values", lambda _, per, key: f.each(per, key, lambda name, values, k: _values(f, name, values, k)))
    if "compactions" in top:
        f.each(
            top["compactions"],
            "compactions",
            lambda _, per, key: f.each(per, key, lambda name, points, k: _points(f, name, points, k)),
        )
    if top.get("summarizer") is not None:
        _summarizer(f, top["summarizer"])
    if "sensitivity" in top:
        f.each(top["sensitivity"], "sensitivity", lambda _, per, key: f.each(per, key, lambda _n, p, k: _power(f, p, k)))
    return top


def _known(f: Fields, name: str, key: str) -> None:
    if name not in BY_NAME:
        raise SuiteError(f"{f.file}: {key}: no metric of compactlab is called {name!r}")


def _metric_spec(f: Fields, name: str, spec: object, key: str) -> None:
    _known(f, name, key)
    table = f.table(spec, key)
    f.keys(table, key, ("direction", "tolerance", "relative"), ("relative_tolerance",))
    if table["direction"] not in ("higher", "lower"):
        raise f.fail(f"{key}.direction", '"higher" or "lower"', table["direction"])
    f.number(table["tolerance"], f"{key}.tolerance", 0.0, expected="a finite number ≥ 0")
    f.flag(table["relative"], f"{key}.relative")
    f.number(table.get("relative_tolerance"), f"{key}.relative_tolerance", 0.0, expected="a finite number ≥ 0", optional=True)


def _strategy(f: Fields, entry: object, key: str) -> None:
    table = f.table(entry, key)
    f.table(table.get("entry", {}), f"{key}.entry")
    f.texts(table.get("prompt_hashes", []), f"{key}.prompt_hashes")
    f.text(table.get("read_by"), f"{key}.read_by", optional=True)
    f.each(table.get("templates", {}), f"{key}.templates", lambda _, h, k: f.text(h, k))


def _session_file(f: Fields, entry: object, key: str) -> None:
    table = f.table(entry, key)
    f.text(table.get("file"), f"{key}.file", optional=True)
    f.text(table.get("sha256"), f"{key}.sha256", optional=True)


def _values(f: Fields, name: str, values: object, key: str) -> None:
    """One metric's value per session: a number in the metric's range, or null (no value)."""
    _known(f, name, key)
    low, high = value_range(name)
    for session, value in f.table(values, key).items():
        f.number(value, f"{key}.{session}", low, high, range_text(name), optional=True)


def _points(f: Fields, name: str, points: object, key: str) -> None:
    """One metric's compactions per session: [[message index, value, [lost items]], ...]."""
    _known(f, name, key)
    low, high = value_range(name)
    for session, found in f.table(points, key).items():
        if not isinstance(found, list):
            raise f.fail(f"{key}.{session}", "a list of [message index, value, [lost items]]", found)
        for i, point in enumerate(found):
            where = f"{key}.{session}[{i}]"
            if not isinstance(point, list) or len(point) != 3:
                raise f.fail(where, "[message index, value, [lost items]]", point)
            f.whole(point[0], f"{where}[0]")
            f.number(point[1], f"{where}[1]", low, high, range_text(name))
            f.texts(point[2], f"{where}[2]")


def _summarizer(f: Fields, record: object) -> None:
    table = f.table(record, "summarizer")
    for name in ("provider", "model", "base_url_host"):
        f.text(table.get(name), f"summarizer.{name}", optional=True)
    f.table(table.get("parameters", {}), "summarizer.parameters")
    f.each(
        table.get("environment", {}),
        "summarizer.environment",
        lambda _, found, key: f.each(found, key, lambda _n, set_, k: f.flag(set_, k)),
    )


def _power(f: Fields, power: object, key: str) -> None:
    table = f.table(power, key)
    f.keys(table, key, POWER_FIELDS)
    f.whole(table["compactions"], f"{key}.compactions")
    f.whole(table["sessions"], f"{key}.sessions")
    f.flag(table["detects_required"], f"{key}.detects_required")
    for name in ("baseline", "required", "loss", "share"):
        f.number(table[name], f"{key}.{name}", 0.0, 1.0, "a number in [0, 1] (a share)", optional=name in ("loss", "share"))
