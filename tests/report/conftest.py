"""Real runs the report's first-screen and size tests share (made once per test session)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import SHARED, SharedRun, _made_once

# 50 real Claude Code sessions the repository does not hold (claude-code-log's names are long:
# -Users-…-project__uuid), four strategies, the default window: about 20 seconds.
SHARED_FOLDERS = ("claude-code-log", "pai-claude-2")
SHARED_STRATEGIES = ("summarize", "pi", "prune", "recorded")


def shared_run_argv(out: Path) -> list[str]:
    folders = [str(SHARED / name) for name in SHARED_FOLDERS]
    return ["run", "--dataset", *folders, "--strategy", *SHARED_STRATEGIES, "--lenient", "--out", str(out)]


@pytest.fixture(scope="session")
def shared_claude_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedRun]:
    if not all((SHARED / name).is_dir() for name in SHARED_FOLDERS):
        pytest.skip(f"the shared real sessions are not at {SHARED}")
    yield from _made_once(tmp_path_factory, "shared-claude-run", shared_run_argv)
