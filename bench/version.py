"""compactlab's version: the one in pyproject.toml, as the installed package's metadata says."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def compactlab_version() -> str | None:
    try:
        return version("compactlab")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return None
