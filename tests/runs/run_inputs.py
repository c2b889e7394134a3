"""The real bundled sessions the run tests replay (a few seconds a run), copied into a folder of
their own as a user's dataset would be, and the run configuration they share."""

from __future__ import annotations

import shutil
from pathlib import Path

from compactlab.replay.setting import Setting
from compactlab.runs.run_config import RunConfig
from tests.conftest import bundled

SESSIONS = (
    bundled("claude-code-log", "-Users-dain-workspace-claude-code-log-sample__37f83ec9"),
    bundled("mini-swe-agent-pr816", "deepseek_reasoner_dev_marshmallow-code__marshmallow-1343"),
    bundled("claude-code-log", "-src-deep-manifest__a7da6a22"),
    bundled("mini-swe-agent-v1", "nano-output__django__django-11848"),
)
# What identifies a call row: sorted by it, two runs' rows compare one to one.
KEY = ["session", "setting", "call"]


def session_folder(folder: Path, sessions: tuple[Path, ...] = SESSIONS) -> Path:
    """`folder`, made, holding a copy of each of `sessions`."""
    folder.mkdir(parents=True)
    for path in sessions:
        shutil.copy(path, folder)
    return folder


def run_config(folder: Path, strategies: tuple[Setting, ...]) -> RunConfig:
    """A run of every session in `folder` through `strategies`, in a window small enough that they compact."""
    return RunConfig(datasets=(str(folder),), strategies=strategies, window=40_000)
