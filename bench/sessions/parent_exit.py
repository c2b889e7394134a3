"""Worker processes end with the process that started them.

A run's workers are forked by its process pool. If the run is killed (SIGKILL, the OOM killer),
the pool cannot stop them, and each would go on replaying its file (some 120 MB each) with no one
to hand its rows to. On Linux the kernel sends a worker SIGKILL when its parent dies
(prctl PR_SET_PDEATHSIG); elsewhere the pool's own shutdown is all there is.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def exit_with_parent(parent: int) -> bool:
    """Ask the kernel to kill this process when its parent `parent` ends; whether it could. Called
    first thing in a worker: if the parent already ended before the request, the worker ends now."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            return False
    except (OSError, AttributeError):
        return False
    if os.getppid() != parent:  # the parent ended between the fork and the request
        os._exit(1)
    return True
