"""Bounded reads: which shards of a per-shard table to read so a report stays fast on a large run.

Tables keyed by id are one file per docs shard (`RUN/<table>/<source>/<shard>.parquet`), and the ledger
of a stage has the same shard names, so a sample of shards can be joined with the ledger of exactly those
shards. Shards are taken spread over the whole list (first, middle, quarters, ...) until the budget of rows
is reached; a sample is then cut to the budget in DuckDB with a seeded reservoir.
"""

from __future__ import annotations

from dataclasses import dataclass

from curate.report.context import RunView


def spread(n: int) -> list[int]:
    """0..n-1 in an order that covers the range evenly early on: 0, n/2, n/4, 3n/4, n/8, ... (van der Corput)."""
    if n <= 0:
        return []
    order, seen = [], set()
    limit = 1
    while limit < n:
        limit *= 2
    for k in range(limit):
        bits, frac, denom = k, 0.0, 1.0
        while bits:
            denom *= 2
            frac += (bits & 1) / denom
            bits >>= 1
        i = int(frac * n)
        if i not in seen:
            seen.add(i)
            order.append(i)
    return order + [i for i in range(n) if i not in seen]


@dataclass(frozen=True)
class ShardSample:
    source: str
    shards: list[str]       # shard names (file stems), in file order
    rows: int               # rows in those files
    total_files: int

    @property
    def complete(self) -> bool:
        return len(self.shards) == self.total_files


def shard_name(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1].removesuffix(".parquet")


def pick_shards(run: RunView, table: str, source: str, budget: int) -> ShardSample | None:
    """Shards of `table` for `source` holding at least `budget` rows (all of them when fewer)."""
    files = run.glob(table, source, "*.parquet")
    if not files:
        return None
    chosen, rows = [], 0
    for i in spread(len(files)):
        if rows >= budget:
            break
        chosen.append(i)
        rows += run.rows_in(files[i])
    chosen.sort()
    return ShardSample(source, [shard_name(files[i]) for i in chosen], rows, len(files))


def shard_files(run: RunView, table_parts: tuple[str, ...], sample: ShardSample) -> list[str]:
    """The files of `sample`'s shards in another per-shard table (`("ledger", stage)`, `("signals",)`, ...)
    that exist."""
    present = {shard_name(p): p for p in run.glob(*table_parts, sample.source, "*.parquet")}
    return [present[s] for s in sample.shards if s in present]
