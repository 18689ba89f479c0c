"""One `alive(pid)` for the run lock and the worker watcher: a zombie no longer counts as running."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from curate.io.process import alive


def test_this_process_runs_and_an_exited_child_does_not():
    assert alive(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 10
    while alive(child.pid) and time.monotonic() < deadline:  # exited but not waited for: a zombie
        time.sleep(0.05)
    assert not alive(child.pid)
    child.wait()
    assert not alive(child.pid)


def test_the_lock_and_the_watcher_share_it():
    from curate.rundir import lock
    from curate.runner import watcher

    assert lock.alive is alive and watcher.alive is alive
