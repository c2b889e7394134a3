"""One registry type for everything compactlab finds by name: strategies, importers, metrics.

A `Registry` maps names to entries of one kind, filled once, on first use, by its `load` function
(importing every importer, reading the strategy entry points), so that importing the registry pulls
in nothing. Asking for an unknown name raises `Unknown` (a `KeyError`), whose message names the
kind, suggests the closest names ("did you mean") and adds the registry's own hint when it has one
(a strategy named in pyproject.toml but not installed: "reinstall"). Registering a name twice is an
error, so that which entry wins never depends on import order.

It imports nothing of compactlab's: every stage may use it (tests/package/test_layers.py).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator, Mapping
from typing import Generic, TypeVar

T = TypeVar("T")


class Unknown(KeyError):
    """A name no entry of the registry has; `str()` is the whole message (a `KeyError` quotes it)."""

    def __init__(self, message: str, name: str, close: tuple[str, ...]):
        super().__init__(message)
        self.message, self.name, self.close = message, name, close

    def __str__(self) -> str:
        return self.message


class Registry(Mapping[str, T], Generic[T]):
    """Names → entries of one kind (`kind`: "strategy", "format", "metric"), in registration order.

    `load` registers the built-in entries (called once, before the first look-up); `hint(name)` may
    add a sentence to the error for an unknown name; `see` ends that error (where to list the names;
    by default the names themselves); `cutoff` is how close a name must be to be suggested.
    """

    def __init__(
        self,
        kind: str,
        load: Callable[[Registry[T]], None] | None = None,
        *,
        hint: Callable[[str], str | None] | None = None,
        see: str = "",
        cutoff: float = 0.6,
    ):
        self.kind, self._load, self._hint, self._see, self._cutoff = kind, load, hint, see, cutoff
        self._entries: dict[str, T] = {}
        self._loaded = load is None

    def register(self, name: str, entry: T) -> T:
        """Add `entry` under `name`; a name registered twice is an error, not a silent replacement
        (the built-in entries are loaded first, so that one added later cannot shadow them)."""
        if name in self._all():
            raise ValueError(f"{self.kind} {name!r} is registered twice: {self._entries[name]!r} and {entry!r}")
        self._entries[name] = entry
        return entry

    def get_entry(self, name: str) -> T:
        """The entry called `name`, or `Unknown` with the closest names and the registry's hint."""
        entries = self._all()
        if name in entries:
            return entries[name]
        raise self.unknown(name)

    def unknown(self, name: str) -> Unknown:
        """The error for `name`, which no entry has: did you mean, the hint, the known names."""
        close = tuple(difflib.get_close_matches(name, list(self._all()), n=3, cutoff=self._cutoff))
        parts = [f"unknown {self.kind} {name!r}."]
        if close:
            parts.append(f"Did you mean {', '.join(repr(c) for c in close)}?")
        if self._hint is not None and (extra := self._hint(name)):
            parts.append(extra)
        parts.append(self._see or f"Known: {', '.join(self._all())}.")
        return Unknown(" ".join(parts), name, close)

    def _all(self) -> dict[str, T]:
        if not self._loaded:
            self._loaded = True  # set first: `load` registers through `register`, which does not look up
            try:
                assert self._load is not None
                self._load(self)
            except BaseException:
                self._loaded, self._entries = False, {}
                raise
        return self._entries

    def reload(self) -> None:
        """Forget every entry; the next look-up loads them again (after an install, in tests)."""
        if self._load is not None:
            self._loaded, self._entries = False, {}

    def __getitem__(self, name: str) -> T:
        return self.get_entry(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def __contains__(self, name: object) -> bool:
        return name in self._all()

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {list(self._entries)!r})"
