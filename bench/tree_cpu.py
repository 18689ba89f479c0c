"""CPU seconds of a whole process tree, the processes that are nobody's waited-for children included.

`getrusage(RUSAGE_CHILDREN)` counts only children that were waited for, and their waited-for children: it
misses Ray's workers and agents (children of a raylet that is stopped without being waited for) and the
processes reparented when their parent exits first. Here a thread samples /proc every `interval` seconds,
follows every process descended from this one (by parent pid, remembered once seen, so a process keeps
counting after its parent is gone) and keeps each one's last own user + system time. Sums own times only,
never `cutime`, so no process is counted twice. What a process spends after its last sample (at most
`interval`) and processes that live less than `interval` are missed: a close lower bound. Linux only.
"""

from __future__ import annotations

import os
import threading
import time

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, int, float] | None:
    """(parent pid, start time in ticks, own user + system seconds) of a process, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1]), int(fields[19]), (int(fields[11]) + int(fields[12])) / TICK


class TreeCPU:
    """`with TreeCPU() as cpu: ...` then `cpu.seconds`: CPU of this process and all its descendants in between."""

    def __init__(self, interval: float = 0.1):
        self.interval, self.seconds = interval, 0.0
        self._seen: dict[tuple[int, int], float] = {}  # (pid, start time) -> last own CPU seconds
        self._stop = threading.Event()

    def _sample(self) -> None:
        stats = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit() and (stat := _stat(int(entry))) is not None:
                stats[int(entry)] = stat
        alive = {pid for pid, started in self._seen if pid in stats and stats[pid][1] == started}  # not a reused pid
        ours = {os.getpid()} | alive
        grew = True
        while grew:  # descendants of what is ours, however deep
            new = {pid for pid, (parent, _, _) in stats.items() if parent in ours and pid not in ours}
            ours |= new
            grew = bool(new)
        for pid in ours:
            if pid in stats and pid != os.getpid():
                _, started, cpu = stats[pid]
                self._seen[(pid, started)] = cpu

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()
        self._sampling = time.thread_time()  # the sampler's own CPU, not the measured work's

    def __enter__(self) -> TreeCPU:
        self._own = time.process_time()
        self._sample()
        self._before = dict(self._seen)  # what the processes already running had spent before
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()
        children = sum(cpu - self._before.get(key, 0.0) for key, cpu in self._seen.items())
        self.seconds = time.process_time() - self._own - self._sampling + children
