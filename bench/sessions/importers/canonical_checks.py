"""Type checks for canonical records: each field of a model dataclass against its annotation.

Canonical files are compactlab's own, but they are files: edited by hand, written by other tools,
damaged. A value of the wrong type (a count given as "5", a cost of NaN, arguments given as an
object) would otherwise pass into the model and fail far away, or silently change a figure. The
checks read the dataclasses' own annotations, so a field added to the model is checked too.
"""

from __future__ import annotations

import types
import typing
from dataclasses import MISSING, fields
from functools import cache

from compactlab.sessions.importers.importer import is_cost, is_count


def checked(cls: type, data: object, where: str):
    """`cls(**data)` once every field of `data` has the type `cls` declares; else ValueError naming it."""
    if not isinstance(data, dict):
        raise ValueError(f"{where} must be an object, got {type(data).__name__}")
    hints, declared = _hints(cls), {f.name: f for f in fields(cls)}
    unknown = sorted(set(data) - set(declared))
    if unknown:
        raise ValueError(f"{where} has unknown field(s) {', '.join(map(repr, unknown))}")
    values = {}
    for name, field in declared.items():
        if name not in data:
            if field.default is MISSING and field.default_factory is MISSING:
                raise ValueError(f"{where} has no `{name}`")
            continue
        ok, value = _matches(hints[name], data[name])
        if not ok:
            raise ValueError(f"{where}.{name} must be {_describe(hints[name])}, got {data[name]!r:.40}")
        values[name] = value
    return cls(**values)


@cache
def _hints(cls: type) -> dict:
    return typing.get_type_hints(cls)


def _matches(hint: object, value: object) -> tuple[bool, object]:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        for option in typing.get_args(hint):
            ok, converted = _matches(option, value)
            if ok:
                return True, converted
        return False, value
    if origin is typing.Literal:
        return value in typing.get_args(hint) and isinstance(value, str), value
    if hint is type(None):
        return value is None, value
    if hint is bool:
        return isinstance(value, bool), value
    if hint is int:
        return type(value) is int and is_count(value), value
    if hint is float:
        return is_cost(value), float(value) if is_cost(value) else value
    if hint is str:
        return isinstance(value, str), value
    if origin is tuple and typing.get_args(hint)[1:] == (Ellipsis,) and isinstance(value, list):  # tuple[X, ...]
        items = [_matches(typing.get_args(hint)[0], item) for item in value]
        return all(ok for ok, _ in items), tuple(converted for _, converted in items)
    return False, value  # a field type these checks do not know: better refused than passed unchecked


def _describe(hint: object) -> str:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(option) for option in typing.get_args(hint))
    if origin is typing.Literal:
        return "one of " + ", ".join(map(repr, typing.get_args(hint)))
    names: dict[object, str] = {
        type(None): "null",
        bool: "true or false",
        int: "a non-negative integer below 2^53",
        float: "a finite, non-negative number",
        str: "a string",
    }
    if typing.get_origin(hint) is tuple and typing.get_args(hint)[1:] == (Ellipsis,):
        return f"a list of {_describe(typing.get_args(hint)[0])}s"
    return names.get(hint, str(hint))


def check_header(header: dict) -> None:
    """The fields of a session header that `Session` takes as they are; ValueError naming the first wrong one."""
    for name in ("id", "source_format", "source_path"):
        if not isinstance(header.get(name), str):
            raise ValueError(f"`{name}` must be a string, got {header.get(name)!r:.40}")
    models = header.get("models", [])
    if not isinstance(models, list) or not all(isinstance(m, str) for m in models):
        raise ValueError(f"`models` must be a list of strings, got {models!r:.60}")
    window = header.get("context_window")
    if window is not None and not (type(window) is int and is_count(window)):
        raise ValueError(f"`context_window` must be a non-negative integer or null, got {window!r:.40}")
    version = header.get("agent_version")
    if version is not None and not isinstance(version, str):
        raise ValueError(f"`agent_version` must be a string or absent, got {version!r:.40}")
    if not isinstance(header.get("is_subagent", False), bool):
        raise ValueError(f"`is_subagent` must be true or false, got {header.get('is_subagent')!r:.40}")
    for name in ("skipped", "ignored"):
        if not isinstance(header.get(name, []), list):
            raise ValueError(f"`{name}` must be a list, got {header.get(name)!r:.40}")
    for entry in header.get("ignored", []):
        if not (
            isinstance(entry, list)
            and len(entry) == 2
            and isinstance(entry[0], str)
            and type(entry[1]) is int
            and is_count(entry[1])
        ):
            raise ValueError(f"`ignored` entries must be [kind, count] pairs, got {entry!r:.60}")
