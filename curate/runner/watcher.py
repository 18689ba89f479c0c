"""A small process beside the driver that outlives it, for what the driver cannot do once it is gone.

- Embedded cluster: Ray leaves the dashboard and runtime-env agents of a local cluster running when its
  driver is killed (-9). When the driver is gone, however it died, the watcher ends every Ray process
  that still holds files of that cluster's session directory.
- Joined cluster: when the head node dies, Ray ends a driver that runs on it at once, from native code,
  without a word. If the driver ends without saying it is done and the head no longer answers, the
  watcher writes the one paragraph the driver could not: which stage was running and how to resume.

The driver writes `stage NAME` lines on the watcher's stdin as stages start, and `done` when it closes
normally. Run as a script (`python watcher.py SESSION|- DRIVER_PID HEAD|- RUN`): standard library only.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time

from curate.io.process import alive


class Watcher:
    """The driver's end: the pipe to the watcher process."""

    def __init__(self, session: str | None, head: str | None, run: str):
        self.process = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), session or "-", str(os.getpid()), head or "-", run],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, start_new_session=True, close_fds=True)

    def stage(self, name: str) -> None:
        self._say(f"stage {name}")

    def close(self, wait: bool = True) -> None:
        """The driver is done (its own errors are its own to report): the watcher only sweeps, then exits."""
        self._say("done")
        with contextlib.suppress(OSError):
            self.process.stdin.close()
        if wait:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=15)

    def _say(self, line: str) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.process.stdin.write(line.encode() + b"\n")
            self.process.stdin.flush()


def holders(session: str, spare: tuple[int, ...] = ()) -> list[int]:
    """Ray processes of this user that hold a file under `session` open (never this one, nor `spare`)."""
    prefix = os.path.realpath(session).rstrip("/") + "/"
    skip, uid, found = {os.getpid(), *spare}, os.getuid(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in skip:
            continue
        try:
            if os.stat(f"/proc/{entry}").st_uid != uid:
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                if b"ray" not in handle.read():
                    continue
            for fd in os.listdir(f"/proc/{entry}/fd"):
                if os.readlink(f"/proc/{entry}/fd/{fd}").startswith(prefix):
                    found.append(int(entry))
                    break
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


def reap(session: str, spare: tuple[int, ...] = (), grace: float = 3.0) -> int:
    """End the processes left holding `session` (SIGTERM, then SIGKILL after `grace`); how many there were."""
    pids = holders(session, spare)
    found = len(pids)
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while pids and time.monotonic() < deadline:
        time.sleep(0.1)
        pids = [p for p in pids if alive(p)]
    for pid in pids:
        _signal(pid, signal.SIGKILL)
    return found


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(OSError):
        os.kill(pid, sig)


def settle(session: str, driver: int, seconds: float = 1.0) -> None:
    """Give a clean shutdown up to `seconds` to end its own processes; return as soon as none is left, so a
    driver that waits for the sweep is not held a fixed second."""
    deadline = time.monotonic() + seconds
    while holders(session, spare=(driver,)) and time.monotonic() < deadline:
        time.sleep(0.05)


def answers(address: str, tries: int = 3, pause: float = 2.0) -> bool:
    host, _, port = address.rpartition(":")
    for attempt in range(tries):
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=2.0):
                return True
        except OSError:
            if attempt < tries - 1:
                time.sleep(pause)
    return False


def _watch(session: str, driver: int, head: str, run: str) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C meant for the driver must not stop the sweep
    stage, done = None, False
    for raw in sys.stdin.buffer:
        line = raw.decode(errors="replace").strip()
        if line.startswith("stage "):
            stage = line[6:]
        elif line == "done":
            done = True
    if session != "-":
        settle(session, driver)
        reap(session, spare=(driver,))
    if not done and head != "-" and not answers(head):
        during = f" during stage '{stage}'" if stage else ""
        sys.stderr.write(f"curate: error: the Ray cluster's head node ({head}) is gone and Ray ended this run{during}; "
                         f"every task that finished is recorded in {run}: start a new cluster and run the same command "
                         "against it to resume from there\n")
        sys.stderr.flush()


if __name__ == "__main__" and len(sys.argv) == 5:
    _watch(sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4])
