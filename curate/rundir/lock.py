"""One writer per run directory: `RUN/_lock.json` names the run holding it, and a heartbeat keeps it fresh.

A second `curate run` on the same output stops in one line naming the holder. A lock whose holder is
gone is taken over: on the same host when its process no longer exists, anywhere when its heartbeat is
older than `STALE_SECONDS` (a run killed with -9 on another machine, or on object storage). The lock is
created exclusively: O_EXCL on a local disk, a conditional put (`If-None-Match`) on object stores that
have one (S3 does); elsewhere it is written and read back.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid

from curate.errors import CurateError
from curate.io import fs
from curate.io.process import alive

log = logging.getLogger("curate")
HEARTBEAT_SECONDS = 20
STALE_SECONDS = 90
CORRUPT = "_corrupt"


class RunLock:
    def __init__(self, run):
        self.path = run.lock_file
        self.root = run.root
        self.token = uuid.uuid4().hex
        self.holder = {"host": socket.gethostname(), "pid": os.getpid(), "started": time.strftime("%Y-%m-%d %H:%M:%S"),
                       "token": self.token}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def acquire(self) -> None:
        current = self._read()
        if current is not None and CORRUPT in current:
            time.sleep(1.0)  # a lock created this instant has its body a moment later
            current = self._read()
        if current is not None and CORRUPT in current:  # a disk that was full when a run started, say
            log.warning("curate: warning: %s holds no run (%s); treating it as stale and taking it over",
                        self.path, current[CORRUPT])
            fs.remove(self.path)
            current = None
        if current is not None and not self._stale(current):
            raise CurateError(f"{self.root} is being written by another run: pid {current.get('pid')} on "
                              f"{current.get('host')} since {current.get('started')}; wait for it to finish, or stop it "
                              f"(its lock is {self.path})")
        if current is not None:
            log.info("taking over the lock of a run that is gone (pid %s on %s)", current.get("pid"), current.get("host"))
            fs.remove(self.path)
        if not self._write(exclusive=True):
            time.sleep(1.0)
        if (self._read() or {}).get("token") != self.token:  # another run won the race to write it
            current = self._read() or {}
            raise CurateError(f"{self.root} is being written by another run: pid {current.get('pid')} on {current.get('host')}")
        self._thread = threading.Thread(target=self._beat, name="curate-lock", daemon=True)
        self._thread.start()

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if (self._read() or {}).get("token") == self.token:
            fs.remove(self.path)

    def _stale(self, holder: dict) -> bool:
        if holder.get("host") == socket.gethostname() and isinstance(holder.get("pid"), int):
            return not alive(holder["pid"]) or holder["pid"] == os.getpid()
        return time.time() - float(holder.get("heartbeat", 0)) > STALE_SECONDS

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_SECONDS):
            try:
                self._write(exclusive=False)
            except OSError as exc:  # a missed heartbeat is not fatal; a stale lock is only taken after STALE_SECONDS
                log.warning("could not refresh the run lock %s: %s", self.path, exc)

    def _write(self, exclusive: bool) -> bool:
        """Write the lock; `exclusive`: only if there is none (a local O_EXCL create, or an object store's
        conditional put, `xb`). Returns whether the write was exclusive, so no read-back is needed."""
        body = json.dumps({**self.holder, "heartbeat": time.time()}).encode()
        filesystem, stripped = fs.filesystem(self.path)
        if exclusive and fs.is_local(filesystem):
            os.makedirs(os.path.dirname(stripped), exist_ok=True)
            try:
                fd = os.open(stripped, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                self._held_by_another()
            with os.fdopen(fd, "wb") as handle:
                handle.write(body)
            return True
        if exclusive:
            try:
                with filesystem.open(stripped, "xb") as handle:
                    handle.write(body)
                return True
            except FileExistsError:
                self._held_by_another()
            except (ValueError, NotImplementedError, TypeError):
                pass  # this store has no conditional writes: written plainly, then read back
        fs.write_bytes(self.path, body)
        return False

    def _held_by_another(self):
        current = self._read() or {}
        raise CurateError(f"{self.root} is being written by another run: pid {current.get('pid')} on "
                          f"{current.get('host')}") from None

    def _read(self) -> dict | None:
        """The holder; None when there is no lock; `{CORRUPT: why}` for a lock file that names no run."""
        try:
            raw = fs.read_bytes(self.path)
        except FileNotFoundError:
            return None
        try:
            holder = json.loads(raw)
        except ValueError:
            holder = None
        if isinstance(holder, dict) and "token" in holder:
            return holder
        return {CORRUPT: "an empty file" if not raw.strip() else f"{len(raw)} bytes that are not a curate lock"}
