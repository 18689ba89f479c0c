"""Whether a process still runs: the one test the run lock and the worker watcher share."""

from __future__ import annotations

import os


def alive(pid: int) -> bool:
    """True while `pid` runs: it exists (or belongs to another user) and is not a zombie (exited, not yet waited for)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:  # no /proc (macOS): os.kill answered, so it runs
        return not os.path.isdir("/proc")
