"""A partition's band rows of every docs shard kept across runs, sorted by key: an append reads the kept rows and the
band files of its new or changed shards, sorts only the new rows, and writes only those again.

The minhash step writes a docs shard's band rows as one file per partition (an append reuses those of every unchanged
shard), so a 1M-document dedup's `buckets` opened 1,167 files a partition. Read cold, days after they were written (as
an append reads them), each cost ~4 ms on the disks measured: 6.1 of a 1M append's 18.9 s of dedup, against 2.1 warm.
The kept rows (`<keep>/p=<partition>.arrow`, Arrow IPC, uncompressed: random bits) are (band, key, row, tie, shard),
sorted by key, with each shard's band file `stat` when it was read; a shard's rows are taken from them while its band
file's `stat` is the same and the file had settled before it was read (`fs.SETTLED_NS`, the kept digests' rule: curate
replaces a file by renaming a new one into place, never edits one). The rows of shards added since (an append's new dump)
are kept beside them, sorted too (`p=<partition>-new.arrow`): an append writes only those, and folds them into the
first file once they are a quarter of it (a kept shard whose band file changed or went leaves its kept rows out
until then, and its new rows go with the new ones; one read before its band file settled is confirmed by content once
it has, and that is kept beside the new rows). Only the rows whose key another row has can join a bucket
(`candidates`); in sorted runs those are found by comparing neighbours and by one search of the new keys among the
kept ones, with no sort of the partition's rows (at 2.2M rows a partition: a sort of 0.25 s, a 55 MB file written
again, and a second sort to look up the nodes' ranks). The rows are the band files' own,
so the graph is the same with or without the kept ones; on an object store (no `stat` to trust) the band files are
read every run."""

from __future__ import annotations

import json
import os
import time

import numpy as np
import pyarrow as pa

from curate.dedup import nodes
from curate.dedup.candidates import shared, shared_sorted
from curate.dedup.layout import PLAIN, WORK, read_columns, read_frame
from curate.io import fs
from curate.io.fs import SETTLED_NS   # a band file unchanged this long before it was read may be trusted by its stat
from curate.io.ipc import read_ipc, write_ipc

COLUMNS = {"band": np.uint16, "key": np.uint64, "row": np.uint64, "tie": np.uint64}
KEPT = {**COLUMNS, "shard": np.uint32}   # shard: an index into the file's SHARDS
SHARDS = b"shards"   # schema metadata: [source, shard, stat identity, settled, rows] of each shard the file holds
BANDS = b"bands"     # schema metadata: the minhash folder the rows came from
CONFIRMED = b"confirmed"   # schema metadata of the new rows' file: kept shards found since to be as their band file is
LAYOUT = b"layout"   # schema metadata: "by key" (files of an earlier version, in shard order, are not read)
BY_KEY = b"by key"
FOLD = 0.25          # the new shards' rows join the first file once they are this share of it
NUMBERED = {"band": np.uint16, "key": np.uint64, "node": np.uint64, "hi": np.uint64}


def candidates(bands: str, p: int, numbers: dict[tuple[str, str], tuple[int, int]] | None,
               keep: str | None = None) -> tuple[dict[str, np.ndarray], int]:
    """(rows, live rows): partition `p`'s band rows (band, key, node, hi) whose key another row has (every bucket of
    two or more rows is among them), and how many rows of shards the run has the partition holds. With `numbers`,
    files are a minhash step's, one per docs shard (`p=<p>/<source>/<shard>.arrow`), read through the kept rows in
    `keep` (`runs`) and numbered here: node from the shard's (priority, index) and row, hi from the priority and the
    rank; shards the run no longer has are left out. Without, exact_dedup's keys, numbered already."""
    if numbers is None:
        cols = read_columns(fs.join(bands, f"p={p:05d}", "*.parquet"), list(NUMBERED), NUMBERED)
        pick = shared(cols["key"])
        return {n: c[pick] for n, c in cols.items()}, len(cols["key"])
    picked, live_rows = [], 0
    for shards, cols, pick in runs(bands, p, keep):
        has = np.array([numbers.get(s) is not None for s in shards] + [False])
        live_rows += int(has[cols["shard"]].sum())
        pick = pick[has[cols["shard"][pick]]]
        picked.append(_numbered({n: cols[n][pick] for n in COLUMNS}, cols["shard"][pick], [numbers.get(s) for s in shards]))
    return {n: np.concatenate([c[n] for c in picked]) if picked else np.empty(0, d) for n, d in NUMBERED.items()}, live_rows


def _numbered(cols: dict[str, np.ndarray], shard: np.ndarray, at: list[tuple[int, int] | None]) -> dict[str, np.ndarray]:
    """Rows of shards numbered `at` (priority, index) as (band, key, node, hi)."""
    base = np.array([nodes.pack(*a, np.zeros(1, np.uint64))[0] if a is not None else 0 for a in at] + [0], np.uint64)
    high = np.array([np.uint64(a[0]) << np.uint64(32) if a is not None else 0 for a in at] + [0], np.uint64)
    return {"band": cols["band"], "key": cols["key"], "node": base[shard] | cols["row"], "hi": high[shard] | cols["tie"]}


def runs(bands: str, p: int, keep: str | None) -> list[tuple[list[tuple[str, str]], dict[str, np.ndarray], np.ndarray]]:
    """Partition `p`'s band rows of every docs shard under `bands`, as runs of (shards, columns with `shard` an index
    into those, the rows whose key another row of any run has). With `keep` (a local folder): the kept rows and those
    of shards added since, each sorted by key, brought up to date with the band files (`_refresh`)."""
    files = {}
    for path in fs.glob(fs.join(bands, f"p={p:05d}", "*", f"*{WORK}")):
        source, name = path.rstrip("/").rsplit("/", 2)[-2:]
        files[(source, name.removesuffix(WORK))] = path
    local = keep is not None and fs.is_local(fs.filesystem(bands)[0]) and fs.is_local(fs.filesystem(keep)[0])
    if not local:
        shards = sorted(files)
        fs.prefetch([files[s] for s in shards])
        cols = _concat([_read_file(files[s], i) for i, s in enumerate(shards)])
        return [(shards, cols, shared(cols["key"]))]
    (first, old), (later, new) = _refresh(files, bands, p, keep)
    a, b = old["key"], new["key"]
    in_old, in_new = shared_sorted(a), shared_sorted(b)
    if len(a) and len(b):   # a new key that a kept row has: both rows
        at = np.minimum(np.searchsorted(a, b), len(a) - 1)
        hit = a[at] == b
        in_new |= hit
        in_old[at[hit]] = True   # a kept key held by two or more kept rows is marked already
    return [(first, old, np.flatnonzero(in_old)), (later, new, np.flatnonzero(in_new))]


def _refresh(files: dict[tuple[str, str], str], bands: str, p: int, keep: str):
    """((shards, rows) kept, (shards, rows) of shards added since), both sorted by key and true to the band files,
    written again where they were not: the new rows alone (and those of kept shards whose band file changed, went or
    had not settled when it was read: their kept rows are left out) until they are a quarter of the kept ones, then
    all in one file."""
    stats = {s: _identity(path) for s, path in files.items()}
    first, old, _ = _load(kept_path(keep, p), bands)
    later, new, confirmed = _load(new_path(keep, p), bands)
    unsettled = [s for s, e in first.items() if not e["settled"]]
    for e in confirmed:   # kept shards read before their band file settled, found since to be as it is
        if first.get(key := (e["source"], e["shard"]), {}).get("stat") == e["stat"]:
            first[key] = e
    now = _confirm(first, old, stats, files)
    confirmed = [first[s] for s in unsettled if first[s]["settled"]]
    shards = list(first)
    stale = {s for s, e in first.items() if not _trusted(e, stats.get(s))}
    if stale:
        held = ~np.isin(old["shard"], np.array([i for i, s in enumerate(shards) if s in stale], np.uint32))
        old = {n: c[held] for n, c in old.items()}
    added = sorted(s for s in files if s not in first or s in stale)
    if not now and list(later) == added and all(_trusted(e, stats[s]) for s, e in later.items()):
        return (shards, old), (added, new)
    fresh, seen = _gather(added, stats, files, [(later, new)])
    gone = sum(first[s]["rows"] for s in stale)
    if len(old["key"]) and gone + len(fresh["key"]) <= FOLD * (len(old["key"]) + gone):
        if added or confirmed:
            _write(new_path(keep, p), bands, fresh, seen, confirmed)
        else:   # the shards added before went again
            fs.remove(new_path(keep, p))
        return (shards, old), (added, fresh)
    held = [s for s in shards if s not in stale]
    number = np.zeros(len(shards), np.int64)
    number[[i for i, s in enumerate(shards) if s not in stale]] = np.arange(len(held))
    old["shard"] = number[old["shard"]].astype(np.uint32)
    fresh["shard"] = fresh["shard"] + np.uint32(len(held))
    folded = _sorted(_concat([old, fresh]))
    _write(kept_path(keep, p), bands, folded, [*(first[s] for s in held), *seen])
    fs.remove(new_path(keep, p))
    return ([*held, *added], folded), ([], _empty())


def _confirm(first: dict, old: dict[str, np.ndarray], stats: dict, files: dict) -> list[dict]:
    """Kept shards whose band file had not settled when it was read, and has now with the same `stat`, whose file holds
    the kept rows: their entries, settled (a from-scratch run reads the band files its minhash step wrote a moment
    before, and without this an append would take them all as changed)."""
    suspects = [(i, s) for i, (s, e) in enumerate(first.items()) if not e["settled"] and (st := stats.get(s)) is not None
                and st[4] and e["stat"] == list(st[:4])]
    if not suspects:
        return []
    fs.prefetch([files[s] for _, s in suspects])
    suspect = np.zeros(len(first), bool)
    suspect[[i for i, _ in suspects]] = True
    rows = np.flatnonzero(suspect[old["shard"]])   # the suspects' rows only (~15%), not a sort of the partition's
    order = rows[np.argsort(old["shard"][rows], kind="stable")]
    bounds = np.searchsorted(old["shard"][order], np.arange(len(first) + 1))
    out = []
    for i, s in suspects:
        mine = {n: old[n][order[bounds[i]:bounds[i + 1]]] for n in COLUMNS}
        theirs = _read_file(files[s], i)
        a, b = np.lexsort((mine["row"], mine["key"])), np.lexsort((theirs["row"], theirs["key"]))
        if len(a) == len(b) and all(np.array_equal(mine[n][a], theirs[n][b]) for n in COLUMNS):
            first[s] = {**first[s], "settled": True}
            out.append(first[s])
    return out


def _gather(wanted: list[tuple[str, str]], stats: dict, files: dict, kept: list[tuple[dict, dict]]):
    """(rows sorted by key, entries) of the `wanted` shards, `shard` indexing them: each shard's rows from a kept run
    that holds it as its band file is (its rows in one pass over the run), else from its band file."""
    index, parts, entries = {s: i for i, s in enumerate(wanted)}, [], {}
    for held, cols in kept:
        remap = np.array([index[s] if s in index and s not in entries and _trusted(e, stats.get(s)) else -1
                          for s, e in held.items()] + [-1], np.int64)
        entries.update({s: held[s] for s, at in zip(held, remap) if at >= 0})
        at = remap[cols["shard"]] if len(cols["shard"]) else np.empty(0, np.int64)
        if (take := at >= 0).any():
            parts.append({**{n: cols[n][take] for n in COLUMNS}, "shard": at[take].astype(np.uint32)})
    missing = [s for s in wanted if s not in entries]
    fs.prefetch([files[s] for s in missing])
    for s in missing:
        parts.append(_read_file(files[s], index[s]))
        entries[s] = _entry(s, stats[s], len(parts[-1]["key"]))
    return _sorted(_concat(parts)), [entries[s] for s in wanted]


def _trusted(entry: dict | None, st: tuple | None) -> bool:
    return entry is not None and st is not None and entry["stat"] == list(st[:4]) and entry["settled"]


def _entry(shard: tuple[str, str], st: tuple | None, rows: int) -> dict:
    return {"source": shard[0], "shard": shard[1], "stat": list(st[:4]) if st else None, "settled": bool(st) and st[4],
            "rows": rows}


def _read_file(path: str, index: int) -> dict[str, np.ndarray]:
    table = read_frame(path, list(COLUMNS))
    cols = {n: table.column(n).to_numpy().astype(d, copy=False) for n, d in COLUMNS.items()}
    cols["shard"] = np.full(table.num_rows, index, np.uint32)
    return cols


def _empty() -> dict[str, np.ndarray]:
    return {n: np.empty(0, d) for n, d in KEPT.items()}


def _concat(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    return {n: np.concatenate([c[n] for c in parts]).astype(d, copy=False) for n, d in KEPT.items()} if parts else _empty()


def _sorted(cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    order = np.argsort(cols["key"], kind="stable")
    return {n: c[order] for n, c in cols.items()}


def kept_path(keep: str, p: int) -> str:
    return fs.join(keep, f"p={p:05d}{WORK}")


def new_path(keep: str, p: int) -> str:
    return fs.join(keep, f"p={p:05d}-new{WORK}")


def _identity(path: str) -> tuple | None:
    """(size, modification ns, change ns, inode, settled): settled when the file had not changed for SETTLED_NS as it
    is read here (a file written again within the clock's tick could otherwise keep its stat)."""
    try:
        st = os.stat(fs.filesystem(path)[1])
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, fs.settled(st, time.time_ns(), SETTLED_NS)


def _load(path: str, bands: str) -> tuple[dict[tuple[str, str], dict], dict[str, np.ndarray], list[dict]]:
    """The kept shards ({(source, shard): entry}, in the file's order), rows and confirmed entries; none when there is
    no file for these bands in this layout."""
    try:
        table = read_ipc(path)
    except (FileNotFoundError, OSError, pa.ArrowInvalid):
        return {}, _empty(), []
    meta = table.schema.metadata or {}
    if meta.get(BANDS, b"").decode() != bands or SHARDS not in meta or meta.get(LAYOUT) != BY_KEY:
        return {}, _empty(), []
    entries = {(e["source"], e["shard"]): e for e in json.loads(meta[SHARDS])}
    return entries, {n: table.column(n).to_numpy() for n in KEPT}, json.loads(meta.get(CONFIRMED, b"[]"))


def _write(path: str, bands: str, cols: dict[str, np.ndarray], seen: list[dict], confirmed: list[dict] = ()) -> None:
    schema = pa.schema([(n, pa.from_numpy_dtype(d)) for n, d in KEPT.items()],
                       metadata={BANDS: bands.encode(), SHARDS: json.dumps(seen).encode(), LAYOUT: BY_KEY,
                                 CONFIRMED: json.dumps(list(confirmed)).encode()})
    write_ipc(path, pa.table({n: cols[n] for n in KEPT}, schema=schema), PLAIN)


def prune(keep: str, partitions: int) -> None:
    """Remove the kept files of partitions a run no longer has (the count changed)."""
    for path in fs.glob(fs.join(keep, f"p=*{WORK}")):
        if int(path.rsplit("p=", 1)[1].removesuffix(WORK).removesuffix("-new")) >= partitions:
            fs.remove(path)
