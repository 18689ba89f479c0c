"""`RUN/logs/run-<UTC time>.log`: everything a `curate run` printed (progress, notes, warnings, Ray's worker
output, errors), one file per invocation, so a run can be looked back on after the terminal is gone.

stdout and stderr are teed line by line: what reaches the terminal is unchanged, and the file gets whole
lines only (a terminal's updating progress line, rewritten with `\\r`, is kept only in its final form).
A run in object storage writes the log locally and uploads it when the command ends.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import sys
import tempfile
import threading

from curate.io import fs

CLEAR = "\033[K"


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
            if lines:
                self.log.flush()
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
    """Tee stdout and stderr into `RUN/logs/<log_name()>` while the block runs; yields the log's path (None
    when no log can be kept there: the output is a file, or the directory cannot be made)."""
    remote = "://" in run_root
    name = log_name()
    target = fs.join(run_root, "logs", name) if remote else os.path.join(run_root, "logs", name)
    try:
        if remote:
            handle = tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".log", delete=False)
        else:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            handle = open(target, "w", encoding="utf-8")
    except OSError:
        yield None
        return
    lock = threading.Lock()
    handle.write(f"# curate {' '.join(argv or sys.argv[1:])}\n# started {dt.datetime.now(dt.UTC).isoformat(timespec='seconds')}\n")
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Tee(out, handle, lock), _Tee(err, handle, lock)
    try:
        yield target
    finally:
        for tee in (sys.stdout, sys.stderr):
            if isinstance(tee, _Tee) and tee.partial:
                handle.write(tee.partial + "\n")
        sys.stdout, sys.stderr = out, err
        handle.close()
        if remote:
            with contextlib.suppress(Exception):  # the run's outcome stands; a log that cannot be uploaded is lost
                fs.write_bytes(target, open(handle.name, "rb").read())
            os.unlink(handle.name)
