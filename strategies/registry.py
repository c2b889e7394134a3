"""Finding strategies by name: entry points, or a `path/to/file.py:Name` reference.

Built-in strategies and presets register exactly as a user's own would: through the
`compactlab.strategies` entry-point group (see `pyproject.toml`). An entry point may name a
strategy class (instantiated with its defaults) or a function returning a configured strategy (a
preset). A strategy in the user's repository needs no packaging: `my_strategies.py:Mine`.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib.util
import inspect
import sys
import tomllib
from collections.abc import Mapping
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, TypeVar

from compactlab.contract import Strategy
from compactlab.registry import Registry
from compactlab.strategies.base import StrategyName, parameters_of
from compactlab.strategies.preset_versions import OLDER, VERSIONS, Version, checked_version, split_version

GROUP = "compactlab.strategies"
T = TypeVar("T")


def _entry_points(registry: Registry[str]) -> None:
    # Nothing is imported here, so one broken third-party entry point cannot break the others.
    found = sorted((point.name, point.value) for point in entry_points(group=GROUP))
    if not found:
        raise RuntimeError(
            f"no strategies found in the {GROUP!r} entry-point group: install compactlab (pip install -e .) "
            "so its built-in strategies are registered"
        )
    for name, target in found:
        registry.register(name, target)


# This checkout's pyproject.toml, beside bench/ and strategies/ (an installed wheel has none there).
PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
REINSTALL = "reinstall (`pip install -e .`)"


def declared() -> dict[str, str]:
    """The strategies this checkout's pyproject.toml declares (name → "module:attribute"); none when
    compactlab runs from an installed wheel, which carries no pyproject.toml."""
    try:
        project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8")).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        return {}
    if project.get("name") != "compactlab":
        return {}
    return dict(project.get("entry-points", {}).get(GROUP, {}))


def _reinstall_hint(name: str) -> str | None:
    if name in declared():
        return f"{PYPROJECT} declares it, but the installed metadata does not list it: {REINSTALL} registers a new entry point."
    return None


STRATEGIES: Registry[str] = Registry(
    "strategy",
    _entry_points,
    hint=_reinstall_hint,
    see="See `compactlab strategies`, or name your own as path/to/file.py:ClassName.",
    cutoff=0.5,
)


def registered() -> Registry[str]:
    """Every strategy and preset installed through the entry-point group: name → "module:attribute"."""
    return STRATEGIES


def get_strategy(name: str, **settings: object) -> Strategy:
    """The strategy or preset `name` (or `file.py:Name`), with `settings` overriding its defaults."""
    obj = _load_reference(name) if ":" in name else _load_registered(name)
    # What an entry point or a file names: a strategy, or a class or function that makes one.
    strategy: Any = obj() if callable(obj) and not _is_strategy_instance(obj) else obj
    if not hasattr(strategy, "compact"):
        raise TypeError(f"{name!r} does not give a strategy: {strategy!r} has no compact() method")
    if settings and hasattr(strategy, "trigger") and hasattr(strategy, "strategy"):
        # A preset: its settings are its strategy's.
        return resolved(dataclasses.replace(strategy, strategy=_with_settings(name, strategy.strategy, settings)))
    return resolved(_with_settings(name, strategy, settings))


def resolved(strategy: T) -> T:
    """`strategy` with every strategy its settings name built, in the strategies it holds too (a preset's,
    a pipeline's stages): each name becomes a `StrategyName` carrying the strategy `get_strategy` makes
    of it. The registry does it when it builds a strategy, and the engine for one built by hand, so a
    strategy that composes others never imports the registry (which imports every strategy)."""
    if not dataclasses.is_dataclass(strategy) or isinstance(strategy, type):
        return strategy
    changes = {}
    for field in dataclasses.fields(strategy):
        value = getattr(strategy, field.name)
        built = _built(value, field.metadata)
        if field.init and built is not value:
            changes[field.name] = built
    return dataclasses.replace(strategy, **changes) if changes else strategy


def _built(value: object, metadata: Mapping[str, Any]) -> object:
    if isinstance(value, tuple):
        items = tuple(_built(item, metadata) for item in value)
        return items if any(new is not old for new, old in zip(items, value)) else value
    if isinstance(value, str):
        if isinstance(value, StrategyName) or not metadata.get("names_strategies") or value in metadata.get("besides", ()):
            return value
        return StrategyName(value, get_strategy(value))
    return resolved(value) if hasattr(value, "compact") else value


def settings_of(name: str) -> frozenset[str]:
    """The names of the settings strategy or preset `name` accepts (a preset's are its strategy's)."""
    strategy = get_strategy(name)
    inner = strategy.strategy if hasattr(strategy, "trigger") and hasattr(strategy, "strategy") else strategy
    return frozenset(f.name for f in dataclasses.fields(inner)) if dataclasses.is_dataclass(inner) else frozenset()


def _with_settings(name: str, strategy: Any, settings: dict) -> Strategy:
    if settings:
        known = {f.name for f in dataclasses.fields(strategy)}
        unknown = sorted(set(settings) - known)
        if unknown:
            close = {u: difflib.get_close_matches(u, known, n=1) for u in unknown}
            hints = ", ".join(f"{u!r}" + (f" (did you mean {c[0]!r}?)" if c else "") for u, c in close.items())
            raise KeyError(f"strategy {name!r} has no setting {hints}; its settings: {', '.join(sorted(known))}")
        strategy = dataclasses.replace(strategy, **settings)
    return strategy


def _is_strategy_instance(obj: object) -> bool:
    return not inspect.isclass(obj) and not inspect.isfunction(obj) and hasattr(obj, "compact")


def _load_registered(name: str) -> object:
    STRATEGIES.get_entry(split_version(name)[0])  # an unknown name is refused first, with a did-you-mean
    # "cline@21cb8d25": the registered cline, when that is its version; "codex@0100b103": the older version kept.
    name, older = checked_version(name)
    target = older or STRATEGIES.get_entry(name)
    module, _, attribute = target.partition(":")
    try:
        return getattr(importlib.import_module(module), attribute)
    except (ImportError, AttributeError) as exc:
        # Installed metadata this checkout no longer matches (a strategy moved or removed since).
        stale = f"; {PYPROJECT} says {declared()[name]!r}: {REINSTALL}" if declared().get(name, target) != target else ""
        raise KeyError(f"strategy {name!r} is registered as {target!r} but cannot be loaded: {exc}{stale}") from exc


def _load_reference(reference: str) -> object:
    path_text, _, attribute = reference.rpartition(":")
    path = Path(path_text)
    if not path.is_file():
        raise KeyError(f"strategy reference {reference!r}: no file {path}")
    module_name = f"compactlab_user_{path.stem}_{abs(hash(path.resolve()))}"
    # A user's file runs once per process while it is unchanged, however often a setting naming it is
    # built (the run's grouping of identical settings builds it before the run does): it may have effects.
    stamp = path.stat().st_mtime_ns
    module = sys.modules.get(module_name)
    if module is None or getattr(module, "__compactlab_stamp__", None) != stamp:
        spec = importlib.util.spec_from_file_location(module_name, path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
        module.__compactlab_stamp__ = stamp  # type: ignore[attr-defined]
    if not hasattr(module, attribute):
        names = [n for n in vars(module) if not n.startswith("_")]
        close = difflib.get_close_matches(attribute, names, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise KeyError(f"{path} has no {attribute!r}.{hint}")
    return getattr(module, attribute)


def describe_all() -> list[dict]:
    """Every registered strategy and preset with its parameters and source (for `compactlab strategies`);
    each older version of a preset kept (`OLDER`) right after its newest."""
    rows = []
    for name, target in registered().items():
        rows.append(_described(name, target, VERSIONS.get(name)))
        rows += [_described(f"{name}@{o.version.tag}", o.target, o.version) for o in OLDER.get(name, ())]
    return rows


def _described(name: str, target: str, version: Version | None) -> dict:
    obj = _load_registered(name)
    strategy = get_strategy(name)
    doc = inspect.getdoc(obj) or inspect.getdoc(type(strategy)) or ""
    return {
        "name": name,
        "kind": "strategy" if inspect.isclass(obj) else "preset",
        "strategy": getattr(strategy, "name", type(strategy).__name__),
        "target": target,
        "description": doc.split("\n\n")[0].replace("\n", " "),
        "source": getattr(obj, "source", "") or getattr(strategy, "source", ""),
        # The version of its source a preset reproduces and what its engine changed since (issue 42).
        **(
            {
                "version": version.line(),
                "versioned_name": f"{split_version(name)[0]}@{version.tag}" if version.tag else "",
                "changed_since": version.changed_since,
            }
            if version is not None
            else {}
        ),
        # A preset names its deviations among its parameters; a strategy after a design states its own.
        "deviations": "" if hasattr(strategy, "trigger") else getattr(strategy, "deviations", ""),
        "parameters": _parameters(strategy),
    }


def _parameters(strategy: Any) -> dict:
    if hasattr(strategy, "trigger") and hasattr(strategy, "strategy"):  # a preset
        return {
            "strategy": _plain(strategy.strategy),
            "trigger": {k: v for k, v in dataclasses.asdict(strategy.trigger).items() if v},
            "estimator": strategy.estimator,
            "deviations": strategy.deviations,
            "choices": strategy.choices,
        }
    return {p.name: _plain(p.default) for p in parameters_of(strategy)}


def _plain(value: object) -> object:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            "strategy": getattr(value, "name", type(value).__name__),
            **{p.name: _plain(p.default) for p in parameters_of(value)},
        }
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value
