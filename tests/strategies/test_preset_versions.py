"""Issue 42, need 4: every preset names the version of its source it reproduces and that version's
date (or why the date is not known), and `compactlab strategies` shows both."""

from __future__ import annotations

import contextlib
import io
import re

from compactlab.cli.main import main
from compactlab.strategies.preset_versions import OLDER, VERSIONS
from compactlab.strategies.registry import describe_all

DATED = re.compile(r"\d{4}-\d{2}(-\d{2})?|undated: .+|date unknown: .+|the sessions recorded up to \d{4}-\d{2}-\d{2}.*")


def test_every_preset_names_its_version_and_date() -> None:
    presets = {row["name"] for row in describe_all() if row["kind"] == "preset" and "@" not in row["name"]}
    assert presets <= set(VERSIONS), f"presets without a version: {sorted(presets - set(VERSIONS))}"
    assert set(VERSIONS) <= presets, f"versions of no preset: {sorted(set(VERSIONS) - presets)}"
    for name, version in VERSIONS.items():
        assert version.reproduces, name
        assert DATED.fullmatch(version.date), f"{name}: {version.date!r} is neither a date nor says why there is none"


def test_the_strategies_command_shows_what_each_preset_reproduces() -> None:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["strategies"]) == 0
    out = printed.getvalue()
    assert "reproduces: badlogic/pi-mono 83378aad, 2026-03-15" in out
    assert "reproduces: google-gemini/gemini-cli 5411f113, 2026-08-21" in out
    assert "changed since: opencode V2 keeps a serialized tail" in out
    assert out.count("    reproduces: ") == len(VERSIONS) + sum(len(older) for older in OLDER.values())
    # Issue 48: each preset's versioned name (its commit, else its date; none for a composite or recorded one).
    assert "    this version: cline@21cb8d25 (the name alone is the newest)" in out
    assert out.count("    this version: ") == sum(bool(v.tag) for v in VERSIONS.values()) + sum(
        bool(o.version.tag) for older in OLDER.values() for o in older
    )
