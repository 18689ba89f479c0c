"""What a decontaminate step publishes: its eval sets as indexed, the frequent grams, and the scan's cost."""

from __future__ import annotations

from dataclasses import dataclass

from curate.common.record import Record


@dataclass(frozen=True)
class DecontaminateRecord(Record):
    sets: dict              # per set: items, indexed, skipped (too short), grams, path
    n: int
    frequent_grams: int     # grams found in more than `frequent_docs` documents (they count only beside a rarer one)
    scan_seconds: float
    scanned_bytes: int

    def lines(self, step: str, markers: list[dict]) -> list[str]:
        """What the run prints after the summary table: the sets as indexed, then per source what was flagged."""
        sets = "; ".join(f"{name} {s['items']:,} items ({s['skipped']:,} too short), {s['grams']:,} grams" for name, s in self.sets.items())
        out = [f"{step}: {sets}; {self.frequent_grams:,} grams frequent in the corpus; scan {self.scan_seconds:.1f}s over "
               f"{self.scanned_bytes / 1e6:,.1f} MB"]
        by_source: dict[str, list[int]] = {}
        for m in markers:
            counts = by_source.setdefault(m["source"], [0, 0, 0])
            counts[0] += m.get("in", 0)
            counts[1] += m.get("matched", 0)
            counts[2] += m.get("flagged", 0)
        out += [f"  {s:10} scanned {n:,}  matched an item {matched:,}  flagged {flagged:,}" for s, (n, matched, flagged) in by_source.items()]
        return out
