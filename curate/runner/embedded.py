"""The embedded local Ray cluster: started for one run, authenticated, quiet, and gone with its driver.

- Token authentication stays on (Ray's default for a new local cluster: anyone who can reach its ports,
  other users of the machine included, could otherwise run code as this user); curate only sets
  `RAY_AUTH_MODE=token` explicitly, which keeps it on and stops Ray's warning at every start. A user's
  own `RAY_AUTH_MODE` is respected, and a cluster joined with `--address` is never touched.
- The session is marked as curate's (`curate-driver.json`, the driver's pid); the watcher (watcher.py)
  ends its leftover processes when the driver is gone, and a later run reaps the sessions of dead
  drivers whose watcher was killed too. Only sessions curate marked are ever reaped.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os

from curate.io.process import alive
from curate.runner.watcher import reap

MARK = "curate-driver.json"


def start(num_cpus: int, **kwargs) -> str:
    """`ray.init` of a new local cluster for this driver; returns its session directory."""
    import ray

    reap_dead_sessions()
    _token_auth()
    ray.init(address="local", num_cpus=num_cpus, **kwargs)
    session = ray._private.worker._global_node.get_session_dir_path()
    with open(os.path.join(session, MARK), "w") as handle:
        json.dump({"pid": os.getpid()}, handle)
    return session


def _token_auth() -> None:
    """Token authentication on, said explicitly (Ray warns only when it picks the mode itself). Ray reads the
    mode into its native config when imported, so that config is refreshed, as Ray does when it enables it."""
    if "RAY_AUTH_MODE" in os.environ:
        return
    os.environ["RAY_AUTH_MODE"] = "token"
    from ray._raylet import Config

    Config.initialize("")


def reap_dead_sessions(root: str | None = None) -> None:
    """Reap the sessions of embedded clusters whose curate driver is dead and whose watcher died with it."""
    root = root or os.path.join(os.environ.get("RAY_TMPDIR") or "/tmp", "ray")
    for mark in glob.glob(os.path.join(root, "session_*", MARK)):
        try:
            with open(mark) as handle:
                pid = int(json.load(handle)["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if not alive(pid):
            reap(os.path.dirname(mark))
            with contextlib.suppress(OSError):
                os.remove(mark)
