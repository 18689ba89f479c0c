"""Live progress per stage: one updating line on a terminal, plain log lines otherwise."""

from __future__ import annotations

import sys
import time


class Progress:
    """Tasks done/total and documents/s for the running stage."""

    def __init__(self, stream=None, interval: float = 5.0, quiet: bool = False):
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.interval = interval
        self.quiet = quiet

    def start(self, stage: str, total: int, skipped: int) -> None:
        self.stage, self.total, self.done, self.docs = stage, total, skipped, 0
        self.started = self.last = time.monotonic()
        resumed = f" ({skipped} already done)" if skipped else ""
        self._line(f"[{stage}] {total} tasks{resumed}", final=True)

    def update(self, docs: int) -> None:
        self.done += 1
        self.docs += docs
        now = time.monotonic()
        if self.tty or now - self.last >= self.interval or self.done == self.total:
            self.last = now
            self._line(self._status(now), final=not self.tty)

    def finish(self) -> float:
        elapsed = time.monotonic() - self.started
        if self.tty:
            self._line(self._status(time.monotonic()), final=True)
        return elapsed

    def _status(self, now: float) -> str:
        elapsed = max(now - self.started, 1e-9)
        return (f"[{self.stage}] {self.done}/{self.total} tasks  {self.docs:,} docs  "
                f"{self.docs / elapsed:,.0f} docs/s  {elapsed:.1f}s")

    def _line(self, text: str, final: bool) -> None:
        if self.quiet:
            return
        if self.tty:
            self.stream.write("\r\033[K" + text + ("\n" if final else ""))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
