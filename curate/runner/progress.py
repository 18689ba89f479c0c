"""Live progress per stage: one updating line on a terminal, plain log lines otherwise.

A heartbeat thread prints the running phase's state every `interval` seconds while tasks run, not only
when one finishes: tasks done, what they counted, the rate and an ETA (from the tasks finished in this
invocation). What a phase counts is named by its unit: documents for the accounting phase and the phases
that read documents, other things (band keys, graph nodes, candidate pairs) for the dedup graph's phases.
"""

from __future__ import annotations

import sys
import threading
import time

# What the `in` of a non-accounting phase's tasks counts, by phase name (first matching prefix).
UNITS = (("read", "records"), ("buckets", "band keys"), ("verify", "pairs"), ("init", "nodes"), ("send-", "nodes"),
         ("receive-", "nodes"), ("decide", "nodes"), ("idrank", "ids"), ("choose", "nodes"), ("resolve", "removals"),
         ("merge", None), ("write", None), ("ids", None))


def unit_of(phase: str, accounts: bool) -> str | None:
    """The unit a phase's task counts are in; None when they count nothing worth showing."""
    if accounts:
        return "docs"
    return next((unit for prefix, unit in UNITS if phase.startswith(prefix)), "docs")


def duration(seconds: float) -> str:
    """12s, 4m05s, 2h03m."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class Progress:
    """Tasks done/total, counted units and their rate, and an ETA for the running phase."""

    def __init__(self, stream=None, interval: float = 5.0, quiet: bool = False, heartbeat: float | None = 10.0,
                 clock=time.monotonic):
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.interval = interval
        self.quiet = quiet
        self.heartbeat = heartbeat       # seconds between lines while no task finishes (None: never)
        self.clock = clock
        self._lock = threading.Lock()
        self._beat: threading.Thread | None = None
        self._stopped = threading.Event()

    def start(self, stage: str, total: int, skipped: int, unit: str | None = "docs") -> None:
        with self._lock:
            self.stage, self.total, self.done, self.skipped, self.docs, self.unit = stage, total, skipped, skipped, 0, unit
            self.started = self.last = self.clock()
        resumed = f" ({skipped} already done)" if skipped else ""
        self._line(f"[{stage}] {total} tasks{resumed}", final=True)
        if self.heartbeat and not self.quiet and total > skipped:
            self._stopped.clear()
            self._beat = threading.Thread(target=self._beats, name="curate-progress", daemon=True)
            self._beat.start()

    def update(self, docs: int) -> None:
        with self._lock:
            self.done += 1
            self.docs += docs
            now = self.clock()
            due = self.tty or now - self.last >= self.interval or self.done == self.total
            if due:
                self.last = now
        if due:
            self._line(self.status(now), final=not self.tty)

    def finish(self) -> float:
        self._stop()
        elapsed = self.clock() - self.started
        if self.tty:
            self._line(self.status(self.clock()), final=True)
        return elapsed

    def beat(self) -> None:
        """One heartbeat: print the state if nothing was printed for `heartbeat` seconds."""
        with self._lock:
            now = self.clock()
            if now - self.last < (self.heartbeat or 0):
                return
            self.last = now
        self._line(self.status(now), final=not self.tty)

    def _beats(self) -> None:
        step = min(self.heartbeat, 1.0)
        while not self._stopped.wait(step):  # a wait, not a sleep: a phase's end never waits out a step
            self.beat()

    def _stop(self) -> None:
        self._stopped.set()
        if self._beat is not None:
            self._beat.join(timeout=2)
            self._beat = None

    def status(self, now: float) -> str:
        elapsed = max(now - self.started, 1e-9)
        parts = [f"[{self.stage}] {self.done}/{self.total} tasks"]
        if self.unit:
            parts.append(f"{self.docs:,} {self.unit}  {self.docs / elapsed:,.0f} {self.unit}/s")
        finished = self.done - self.skipped
        left = self.total - self.done
        if left and finished:
            parts.append(f"ETA {duration(elapsed / finished * left)}")
        elif left:
            parts.append("first task running")
        parts.append(f"{elapsed:.1f}s")
        return "  ".join(parts)

    def _line(self, text: str, final: bool) -> None:
        if self.quiet:
            return
        with self._lock:
            if self.tty:
                self.stream.write("\r\033[K" + text + ("\n" if final else ""))
            else:
                self.stream.write(text + "\n")
            self.stream.flush()
