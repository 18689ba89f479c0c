"""Progress lines for hashing and copying: hashing a run of large token files takes minutes, so say how far
along it is, one log line every `every` files or `seconds` seconds, never one per block."""

from __future__ import annotations

import logging
import threading
import time

log = logging.getLogger("curate")


class Ticker:
    """Thread-safe counter of files and bytes done that logs at most every `every` files or `seconds` seconds."""

    def __init__(self, what: str, files: int, total_bytes: int | None = None, every: int = 100, seconds: float = 5.0):
        self.what, self.files, self.total_bytes = what, files, total_bytes
        self.every, self.seconds = every, seconds
        self.done_files = self.done_bytes = 0
        self.started = self.last = time.monotonic()
        self._lock = threading.Lock()
        self._logged_at = 0

    def add(self, nbytes: int = 0, file_done: bool = False) -> None:
        with self._lock:
            self.done_bytes += nbytes
            self.done_files += bool(file_done)
            now = time.monotonic()
            if now - self.last >= self.seconds or (file_done and self.done_files - self._logged_at >= self.every):
                self.last, self._logged_at = now, self.done_files
                log.info("%s", self._status(now))

    def finish(self) -> float:
        """Log the totals when the work took long enough to be worth a line (or progress was shown)."""
        elapsed = time.monotonic() - self.started
        if elapsed >= 1.0 or self._logged_at:
            log.info("%s", self._status(time.monotonic()))
        return elapsed

    def _status(self, now: float) -> str:
        elapsed = max(now - self.started, 1e-9)
        total = f"/{self.total_bytes / 2**20:,.1f}" if self.total_bytes is not None else ""
        return (f"[{self.what}] {self.done_files}/{self.files} files  {self.done_bytes / 2**20:,.1f}{total} MiB  "
                f"{self.done_bytes / 2**20 / elapsed:,.1f} MiB/s  {elapsed:.1f}s")
