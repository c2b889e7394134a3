"""The worker pool of `read_files` reads only a few files ahead of its caller: a run commits files in
order, so results read ahead wait in the run's process, and a pool handed every file at once would
hold a corpus's worth of them behind one slow file (issue 31: memory flat in corpus size)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from compactlab.sessions.loading import IN_FLIGHT_PER_WORKER, read_files
from tests.conftest import DATASETS

FILES = sorted((DATASETS / "mini-swe-agent-pr816" / "sessions").iterdir())
WORKERS = 2


def test_the_pool_reads_a_bounded_number_of_files_ahead_of_its_caller(tmp_path: Path) -> None:
    assert len(FILES) > 2 * IN_FLIGHT_PER_WORKER * WORKERS  # enough real files for the pool to run ahead

    def note(sessions) -> None:  # runs in the worker that read the file
        (tmp_path / f"{os.getpid()}-{time.monotonic_ns()}").touch()

    reads = read_files(FILES, workers=WORKERS, then=note)
    try:
        first = next(reads)
        assert first.error is None and first.sessions
        # The caller holds on to its first file; the workers read on as far as they are allowed to,
        # until nothing more is read for a while (a bound on waiting, not a timing the test needs).
        deadline, seen, still_since = time.monotonic() + 120, -1, time.monotonic()
        while time.monotonic() < deadline and time.monotonic() - still_since < 3:
            count = len(list(tmp_path.iterdir()))
            if count != seen:
                seen, still_since = count, time.monotonic()
            time.sleep(0.1)
        read_so_far = len(list(tmp_path.iterdir()))
        assert 1 < read_so_far <= IN_FLIGHT_PER_WORKER * WORKERS, f"{read_so_far} of {len(FILES)} files read ahead"
        rest = list(reads)
    finally:
        reads.close()
    assert [r.path for r in [first, *rest]] == FILES  # in file order, every file once
    assert len(list(tmp_path.iterdir())) == len(FILES)
