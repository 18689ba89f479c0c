"""What a decontaminate step publishes: its eval sets as indexed, the frequent grams, and the scan's cost."""

from __future__ import annotations

from dataclasses import dataclass

from curate.rundir.records import Record


@dataclass(frozen=True)
class DecontaminateRecord(Record):
    sets: dict              # per set: items, indexed, skipped (too short), grams, path
    n: int
    frequent_grams: int     # grams found in more than `frequent_docs` documents (they count only beside a rarer one)
    scan_seconds: float
    scanned_bytes: int
