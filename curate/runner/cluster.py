"""Joining a Ray cluster and checking it fits the run, before any task: each problem is one line.

- An `--address` that nothing answers at fails within seconds, instead of Ray's minutes of retries
  (a TCP probe of the head first; `ray.init` itself is bounded by `INIT_SECONDS`).
- On a cluster of several nodes, a local `--output` or input would be written or read on each node's
  own disk: the run stops and says to use object storage, or `execution.shared_fs: true` for a path
  that really is shared (NFS, Lustre).
- `execution.env` names environment variables the driver forwards to every worker (Ray's runtime
  environment), for clusters whose nodes lack the credentials; nodes otherwise use their own.
- While tasks run, the head is probed: a lost head ends the run with one paragraph saying how to resume.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time

from curate.errors import CurateError

PROBE_SECONDS = 20.0   # how long an unanswered --address is retried (the head may be starting)
INIT_SECONDS = 30.0    # how long ray.init may take once the head answers
HEAD_LOST_SECONDS = 15.0


def host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of `host:port` or `ray://host:port`; None for `auto` and what Ray resolves itself."""
    rest = address.split("://", 1)[-1]
    host, _, port = rest.rpartition(":")
    if not host or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def resolve(address: str) -> str:
    """`auto` (or `localhost:port`) as the host:port Ray would connect to; other addresses as given."""
    if address != "auto":
        return address
    try:
        from ray._private.services import canonicalize_bootstrap_address

        return canonicalize_bootstrap_address(address) or address
    except Exception:  # noqa: BLE001 - no cluster recorded on this machine: the probe below says so
        raise CurateError("--address auto: no Ray cluster is running on this machine (`ray start --head` starts one; "
                          "leave out --address for an embedded local cluster)") from None


def reachable(host: str, port: int, timeout: float = 2.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def probe(address: str, seconds: float = PROBE_SECONDS) -> str:
    """The address to join, once its head answers on TCP; a CurateError after `seconds` without an answer."""
    address = resolve(address)
    target = host_port(address)
    if target is None:
        return address
    deadline = time.monotonic() + seconds
    while not reachable(*target):
        if time.monotonic() > deadline:
            raise CurateError(f"--address {address}: no Ray cluster answers there (nothing accepted a connection to "
                              f"{target[0]}:{target[1]} for {seconds:.0f}s); start its head with `ray start --head`, "
                              "check the host and port, or leave out --address for an embedded local cluster")
        time.sleep(1.0)
    return address


def join(address: str, runtime_env: dict | None, **kwargs) -> None:
    """`ray.init(address)` with a bound on its time: Ray's client retries for minutes in native code that no
    exception can interrupt, so past `INIT_SECONDS` the process prints one line and exits."""
    import ray

    given, address = address, probe(address)
    done = threading.Event()

    def watchdog():
        if not done.wait(INIT_SECONDS):
            sys.stderr.write(f"curate: error: --address {address}: the Ray cluster there did not accept this driver within "
                             f"{INIT_SECONDS:.0f}s (is it a Ray head's GCS port, and is it healthy? `ray status --address "
                             f"{address}` tells)\n")
            sys.stderr.flush()
            os._exit(1)

    threading.Thread(target=watchdog, name="curate-ray-init", daemon=True).start()
    try:  # `auto` goes to Ray as `auto`: Ray then finds the local cluster's session, its auth token included
        ray.init(address="auto" if given == "auto" else address, runtime_env=runtime_env, **kwargs)
    finally:
        done.set()


def runtime_env(names: list[str]) -> dict | None:
    """The driver's values of `execution.env`'s variables, for every worker; a name the driver lacks is an error."""
    if not names:
        return None
    missing = [n for n in names if n not in os.environ]
    if missing:
        raise CurateError(f"execution.env: {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not set in this "
                          "driver's environment, so it cannot be forwarded to the workers")
    return {"env_vars": {n: os.environ[n] for n in names}}


def alive_nodes() -> list[dict]:
    import ray

    return [n for n in ray.nodes() if n.get("Alive")]


def check_paths(nodes: int, local_paths: list[tuple[str, str]], shared_fs: bool) -> None:
    """On a cluster of several nodes, refuse local paths unless they are declared shared."""
    if nodes <= 1 or shared_fs or not local_paths:
        return
    what, path = local_paths[0]
    more = f" (and {len(local_paths) - 1} more local path{'s' if len(local_paths) > 2 else ''})" if len(local_paths) > 1 else ""
    raise CurateError(f"{what} {path} is a local path{more}, but the Ray cluster has {nodes} nodes: each node would read "
                      "and write its own disk; put it in object storage (s3://, gs://, ...) or, if the path is on a "
                      "file system every node mounts (NFS, Lustre), set execution.shared_fs: true")


class HeadWatch:
    """Tells whether the cluster's head (its GCS) still answers; probed at most every few seconds."""

    def __init__(self, gcs_address: str | None, every: float = 3.0):
        self.target = host_port(gcs_address) if gcs_address else None
        self.address, self.every = gcs_address, every
        self.checked = time.monotonic()
        self.silent_since: float | None = None

    def lost(self) -> bool:
        """True once the head has not answered for HEAD_LOST_SECONDS."""
        now = time.monotonic()
        if self.target is None or now - self.checked < self.every:
            return False
        self.checked = now
        if reachable(*self.target, timeout=1.0):
            self.silent_since = None
            return False
        self.silent_since = self.silent_since or now
        return now - self.silent_since >= HEAD_LOST_SECONDS
