"""Processes: whether one still runs (the one test the run lock and the worker watcher share), and how many cores
this one may use."""

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


def usable_cores() -> int:
    """The cores this process may run on: its affinity, which a container or `taskset` may narrow below the
    machine's count (`os.cpu_count`)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no affinity API (macOS)
        return os.cpu_count() or 1
