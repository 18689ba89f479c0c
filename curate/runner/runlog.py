"""`RUN/logs/run-<UTC time>.log`: everything a `curate run` printed (progress, notes, warnings, Ray's worker
output, errors), one file per invocation, so a run can be looked back on after the terminal is gone.

stdout and stderr are teed line by line: what reaches the terminal is unchanged, and the file gets whole
lines only (a terminal's updating progress line, rewritten with `\\r`, is kept only in its final form).
A run in object storage holds the log in memory and uploads it when the command ends. An error that ends
the command is written to the log as `curate: error: ...` (the terminal gets it from the command itself).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import sys
import threading

from curate.io import fs

CLEAR = "\033[K"
_STARTED: set[str] = set()  # run directories whose run got past validation and took the lock in this process


def mark_started(run_root: str) -> None:
    """The run in `run_root` has started (validated, lock taken): its log may now be written there. A run
    refused before this point leaves the directory as it was, log included."""
    _STARTED.add(_key(run_root))


def _key(run_root: str) -> str:
    return run_root.rstrip("/") if "://" in run_root else os.path.abspath(run_root)


class _LogFile:
    """Lines for `RUN/logs/<name>`: held in memory until the run has started (`mark_started`: a command refused
    before any work changes nothing in the directory), then appended to the file as they come."""

    def __init__(self, run_root: str, name: str):
        self.remote = "://" in run_root
        self.root, self.target = run_root, (fs.join(run_root, "logs", name) if self.remote else os.path.join(run_root, "logs", name))
        self.held: list[str] = []
        self.handle = None

    def write(self, line: str) -> None:
        if self.handle is None and not self.remote and self.started():
            try:
                os.makedirs(os.path.dirname(self.target), exist_ok=True)
                self.handle = open(self.target, "w", encoding="utf-8")
            except OSError:
                self.remote = True  # cannot be written there: keep holding, like a remote run's log
            else:
                self.handle.write("".join(self.held))
                self.held = []
        if self.handle is None:
            self.held.append(line)
        else:
            self.handle.write(line)
            self.handle.flush()

    def started(self) -> bool:
        return _key(self.root) in _STARTED

    def close(self) -> str | None:
        """Close (a remote run's log is uploaded now); returns the log's path, or None when none was kept."""
        if self.handle is None and not self.remote and self.held and self.started():
            self.write("")  # a quiet run printed nothing while it ran: the held lines go to the file now
        if self.handle is not None:
            self.handle.close()
            return self.target
        if self.remote and self.started():
            with contextlib.suppress(Exception):  # the run's outcome stands; a log that cannot be uploaded is lost
                fs.write_bytes(self.target, "".join(self.held).encode())
                return self.target
        return None


class _Tee:
    """A text stream that writes through to `inner` and appends every complete line to `log`."""

    def __init__(self, inner, log, lock: threading.Lock):
        self.inner, self.log, self.lock, self.partial = inner, log, lock, ""

    def write(self, text: str) -> int:
        n = self.inner.write(text)
        with self.lock:
            buffer = self.partial + text.replace(CLEAR, "")
            *lines, self.partial = buffer.split("\n")
            if "\r" in self.partial:  # an updating line: only what follows the last carriage return counts
                self.partial = self.partial.rsplit("\r", 1)[1]
            for line in lines:
                self.log.write(line.rsplit("\r", 1)[-1] + "\n")
        return n

    def flush(self) -> None:
        self.inner.flush()

    def isatty(self) -> bool:
        return hasattr(self.inner, "isatty") and self.inner.isatty()

    def fileno(self) -> int:
        return self.inner.fileno()

    def __getattr__(self, name):
        return getattr(self.inner, name)


def log_name(now: dt.datetime | None = None) -> str:
    return f"run-{(now or dt.datetime.now(dt.UTC)).strftime('%Y%m%dT%H%M%SZ')}.log"


@contextlib.contextmanager
def run_log(run_root: str, argv: list[str] | None = None):
    """Tee stdout and stderr into `RUN/logs/<log_name()>` while the block runs; yields the log's path (written
    once the run directory exists; nothing is written when the command fails before making it)."""
    _STARTED.discard(_key(run_root))  # each invocation starts (or is refused) anew
    log = _LogFile(run_root, log_name())
    lock = threading.Lock()
    log.write(f"# curate {' '.join(argv or sys.argv[1:])}\n# started {dt.datetime.now(dt.UTC).isoformat(timespec='seconds')}\n")
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Tee(out, log, lock), _Tee(err, log, lock)
    try:
        yield log.target
    except BaseException as exc:
        log.write(f"curate: error: {exc}\n" if str(exc) else f"curate: {type(exc).__name__}\n")
        raise
    finally:
        for tee in (sys.stdout, sys.stderr):
            if isinstance(tee, _Tee) and tee.partial:
                log.write(tee.partial + "\n")
        sys.stdout, sys.stderr = out, err
        log.close()
        _STARTED.discard(_key(run_root))
