"""The embedded local Ray cluster: started for one run, authenticated, quiet, and gone with its driver.

- Token authentication stays on (Ray's default for a new local cluster: anyone who can reach its ports,
  other users of the machine included, could otherwise run code as this user); curate only sets
  `RAY_AUTH_MODE=token` explicitly, which keeps it on and stops Ray's warning at every start. A user's
  own `RAY_AUTH_MODE` is respected, and a cluster joined with `--address` is never touched.
- The session is marked as curate's (`curate-driver.json`, the driver's pid); the watcher (watcher.py)
  ends its leftover processes when the driver is gone, and a later run reaps the sessions of dead
  drivers whose watcher was killed too. Only sessions curate marked are ever reaped.
- Lean: the head starts without the two processes a run never uses (lean_head), its local clients retry a
  socket every 50 ms rather than every second (QUICK_CONNECT), and the cluster is stopped without waiting for
  each of its processes to exit in turn (stop): ~1-2 s and ~1 CPU-second of every run.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import subprocess

from curate.io.process import alive
from curate.runner.watcher import reap

MARK = "curate-driver.json"

QUICK_CONNECT = {"raylet_client_connect_timeout_milliseconds": 50, "raylet_client_num_connect_attempts": 200}
"""Ray's local clients (the raylet's object manager to its object store, a worker to its raylet) retry a socket
that is not listening yet after `raylet_client_connect_timeout_milliseconds`, 1 s by default. The raylet's
first try at its object store loses the race in about half of all starts (ray.init: 3.0 s instead of 2.0 s,
5 of 10 starts measured); retried every 50 ms, the same 10 s in all, it always took 2.0 s (10 of 10)."""


def start(num_cpus: int, **kwargs) -> str:
    """`ray.init` of a new local cluster for this driver; returns its session directory."""
    import ray

    reap_dead_sessions()
    _token_auth()
    with lean_head():
        ray.init(address="local", num_cpus=num_cpus, _system_config=QUICK_CONNECT, **kwargs)
    session = ray._private.worker._global_node.get_session_dir_path()
    with open(os.path.join(session, MARK), "w") as handle:
        json.dump({"pid": os.getpid()}, handle)
    return session


@contextlib.contextmanager
def lean_head():
    """While Ray starts a head node, skip two of its processes: the dashboard's API server, which Ray starts
    even with `include_dashboard=False` (to report usage statistics, off here) and then waits for until it
    has registered (1.5-2 s of every start, more on a busy machine), and the autoscaler's monitor (a local
    cluster of fixed size never scales). Neither serves tasks, objects or logs. Ray's own methods are put
    back afterwards; a Ray without them starts as it always does."""
    from ray._private.node import Node

    saved = {name: getattr(Node, name) for name in ("start_api_server", "start_monitor") if hasattr(Node, name)}
    for name in saved:
        setattr(Node, name, _skipped)
    try:
        yield
    finally:
        for name, method in saved.items():
            setattr(Node, name, method)


def _skipped(self, *args, **kwargs) -> None:
    return None


def stop(session: str) -> None:
    """End the embedded cluster at once: this driver disconnects (`ray.shutdown` of a node whose processes it
    no longer holds), then every process of the session gets SIGKILL. Ray's own shutdown terminates its
    head's processes one after the other and waits for each (1.3 s, the GCS outwaits its SIGTERM), and the
    raylet's workers and agents linger seconds after it. Nothing is lost: each task wrote its outputs
    before it returned, and a run stopped mid-phase resumes from its markers as after kill -9."""
    import ray

    node = getattr(ray._private.worker, "_global_node", None)
    processes = getattr(node, "all_processes", None) or {}
    head = [info.process for infos in processes.values() for info in infos]
    processes.clear()
    ray.shutdown()
    for process in head:
        with contextlib.suppress(OSError):
            process.kill()
    reap(session, spare=(os.getpid(),), grace=0.0)
    for process in head:  # no zombies left behind in a driver that goes on (tests, notebooks)
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            process.wait(timeout=1.0)


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
