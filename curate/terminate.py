"""SIGTERM ends a run the way Ctrl-C does: the exception unwinds every stage and executor (Ray shut down,
the lock released), and `curate` prints one line and exits 143, instead of Ray's handler calling
`sys.exit` at any point and its native shutdown aborting the process (a crash dump, exit 134).

Ray installs its own handler in `ray.init`, so `install` runs again once a cluster is joined."""

from __future__ import annotations

import signal
import threading

EXIT_CODE = 128 + signal.SIGTERM


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived; a KeyboardInterrupt, so every cleanup that handles Ctrl-C handles it too."""


def _raise(signum, frame):
    raise Terminated()


def install() -> None:
    """Make SIGTERM raise `Terminated` in the main thread (signal handlers can only be set there)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise)
