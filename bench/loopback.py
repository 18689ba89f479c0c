"""A test bed on one machine: a Ray cluster of several nodes (separate raylets) and an S3 server, loopback only.

Used by bench/bench_nodes.py and tests/runner/test_four_nodes.py. The S3 server is moto's, in a process of
its own on 127.0.0.1; curate and every Ray worker reach it through the standard AWS variables, which
`S3Server` puts in this process's environment (children inherit them). The nodes are
`ray.cluster_utils.Cluster`'s: each node is its own raylet process (with its own object store and
workers) on 127.0.0.1, all under one temp dir; `kill` ends one the way a lost machine goes, SIGKILL to its
raylet and everything it started. `NodeMeter` reads /proc for what each node's processes used (CPU
seconds, bytes through read/write calls, sockets to S3 included), since a task's marker names its node
but not its I/O.
"""

from __future__ import annotations

import contextlib
import glob
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

AWS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
       "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
       "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
DROP = ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class S3Server:
    """moto's S3 server on 127.0.0.1 with `bucket` made; os.environ points the AWS variables at it until `stop`."""

    def __init__(self, bucket: str):
        self.port = free_port()
        self.env = {**AWS, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{self.port}"}
        self.saved = {k: os.environ.get(k) for k in (*self.env, *DROP)}
        for key in DROP:
            os.environ.pop(key, None)
        os.environ.update(self.env)
        self.process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=1):
                break
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.stop()
                raise RuntimeError(f"moto's S3 server did not start on 127.0.0.1:{self.port}")
            time.sleep(0.2)
        from curate.io import fs

        fs.filesystem(f"s3://{bucket}")[0].mkdir(bucket)

    def stop(self) -> None:
        self.process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=30)
        for key, value in self.saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def ray_temp_dir() -> str:
    """Ray's temporary folder as Ray picks it: `$RAY_TMPDIR/ray` when set, else the system's (`/tmp/ray`)."""
    from ray._private.utils import get_ray_address_file

    return os.path.dirname(get_ray_address_file(None))


class LoopbackCluster:
    """A Ray cluster of `nodes` nodes (one raylet each) on 127.0.0.1 in its own temp dir.

    Ray's test cluster records its address in the machine-wide ray_current_cluster of Ray's temp folder (what
    `--address auto` reads, for everyone): the file is put back as it was. A killed node is declared dead after
    3 failed 1 s health checks (Ray's default: 5 of 3 s), so a run that ends soon after losing one sees it go.
    Stopping also ends what a killed node left (its agents)."""

    def __init__(self, nodes: int, cpus: int = 1, object_store_mb: int = 80):
        from ray.cluster_utils import Cluster

        self.node_args = {"num_cpus": cpus, "object_store_memory": object_store_mb << 20, "node_ip_address": "127.0.0.1"}
        self.address_file = os.path.join(ray_temp_dir(), "ray_current_cluster")
        self.temp = tempfile.mkdtemp(prefix="cmn", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
        previous = self._address_file()
        try:
            fast = {"health_check_period_ms": 1000, "health_check_failure_threshold": 3}
            self.cluster = Cluster(initialize_head=True, head_node_args={**self.node_args, "include_dashboard": False,
                                                                         "temp_dir": self.temp, "_system_config": fast})
            for _ in range(nodes - 1):
                self.cluster.add_node(**self.node_args)
            self.cluster.wait_for_nodes()
        finally:
            self._restore(previous)
        self.address = self.cluster.address

    def add(self, **env):
        node = self.cluster.add_node(**self.node_args, env_vars=env or None)
        self.cluster.wait_for_nodes()
        return node

    @property
    def workers(self) -> list:
        """The live nodes other than the head, oldest first."""
        return list(self.cluster.worker_nodes)

    def nodes(self) -> list:
        return [self.cluster.head_node, *self.workers]

    @staticmethod
    def node_id(node) -> str:
        """The 8 hex digits curate's markers and messages name a node by."""
        return node.node_id[:8]

    def kill(self, node) -> None:
        """A lost machine: SIGKILL to the node's raylet and every process it runs, nothing said to the cluster."""
        self.cluster.remove_node(node, allow_graceful=False)

    def stop(self) -> None:
        from curate.runner.watcher import reap

        previous = self._address_file()
        with contextlib.suppress(Exception):
            self.cluster.shutdown()
        for session in glob.glob(os.path.join(self.temp, "session_2*")):
            reap(session)
        self._restore(previous)

    def _address_file(self):
        try:
            return Path(self.address_file).read_text()
        except OSError:
            return None

    def _restore(self, previous) -> None:
        if previous is None:
            with contextlib.suppress(OSError):
                os.remove(self.address_file)
        else:
            Path(self.address_file).write_text(previous)


def children_of() -> dict[int, list[int]]:
    """Every live process's children, by parent pid, from /proc."""
    out: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            out.setdefault(ppid, []).append(int(entry))
    return out


def _cpu(pid: int) -> float | None:
    """CPU seconds (user + system) a process used so far."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _s3_sockets(port: int) -> dict[tuple[int, str], tuple[int, int]]:
    """(pid, local address) -> (bytes sent, bytes received) of every open TCP connection to 127.0.0.1:`port`,
    as `ss` reports them (/proc/<pid>/io counts no socket traffic)."""
    try:
        text = subprocess.run(["ss", "-tinpH", "state", "established", f"( dport = :{port} )"], capture_output=True,
                              text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    out, key = {}, None
    for line in text.splitlines():
        if not line.startswith(("\t", " ")) and "pid=" in line:
            key = (int(line.split("pid=", 1)[1].split(",", 1)[0]), line.split()[2])
        elif key is not None:
            stats = dict(f.split(":", 1) for f in line.split() if f.startswith(("bytes_sent:", "bytes_received:")))
            out[key] = (int(stats.get("bytes_sent", 0)), int(stats.get("bytes_received", 0)))
            key = None
    return out


class NodeMeter:
    """Samples, every `every` seconds, the processes below each node's raylet (its workers): their CPU
    seconds, and the bytes of their connections to the S3 server on `s3_port` (sent: written to S3,
    received: read from it). Each process's and connection's last sample is kept, so a worker that ended (or
    a node killed) still counts up to its last sample; a connection opened and closed between two samples is
    missed (s3fs keeps its connections open, so few are)."""

    def __init__(self, nodes: dict[str, int], s3_port: int, every: float = 0.5):
        self.nodes, self.port, self.every = nodes, s3_port, every   # node id -> its raylet's pid
        self.cpu: dict[tuple[str, int], float] = {}
        self.base: dict[tuple[str, int], float] = {}
        self.net: dict[tuple[str, int, str], tuple[int, int]] = {}
        self.net_base: dict[tuple[str, int, str], tuple[int, int]] = {}
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="node-meter", daemon=True)

    def __enter__(self):
        self._sample(self.base, self.net_base)   # what the workers that exist already had used before the run
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join()
        self._sample(self.cpu, self.net)

    def _loop(self) -> None:
        while not self.done.wait(self.every):
            self._sample(self.cpu, self.net)

    def _sample(self, cpu: dict, net: dict) -> None:
        children, owner = children_of(), {}
        for node, raylet in self.nodes.items():
            todo = list(children.get(raylet, []))
            while todo:
                pid = todo.pop()
                todo += children.get(pid, [])
                owner[pid] = node
                if (used := _cpu(pid)) is not None:
                    cpu[(node, pid)] = used
        for (pid, local), counts in _s3_sockets(self.port).items():
            if pid in owner:
                net[(owner[pid], pid, local)] = counts

    def totals(self) -> dict[str, dict]:
        """node id -> cpu_s, s3_read_mb, s3_written_mb of its workers during the metered span."""
        out = {node: {"cpu_s": 0.0, "s3_read_mb": 0.0, "s3_written_mb": 0.0} for node in self.nodes}
        for (node, pid), used in self.cpu.items():
            out[node]["cpu_s"] += used - self.base.get((node, pid), 0.0)
        for key, (sent, received) in self.net.items():
            b = self.net_base.get(key, (0, 0))
            out[key[0]]["s3_written_mb"] += (sent - b[0]) / 1e6
            out[key[0]]["s3_read_mb"] += (received - b[1]) / 1e6
        return {n: {k: round(v, 1) for k, v in t.items()} for n, t in out.items()}


def raylet_pid(node) -> int:
    """The pid of a `ray.cluster_utils` node's raylet."""
    from ray._private import ray_constants

    return node.all_processes[ray_constants.PROCESS_TYPE_RAYLET][0].process.pid
