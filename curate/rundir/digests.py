"""Digests of a run's files by content, cached by path, size and modification time: a file read by several steps
of one run (a docs shard, a ledger) is hashed once. Per-shard keys (`curate.runner.shardkeys`) and the mix step's
kept measurements (`curate.stages.measured`) are made of them."""

from __future__ import annotations

import hashlib
import os

import pyarrow.compute as pc

from curate.io import fs
from curate.io.parquet import read_table

_cache: dict[tuple, str] = {}


def _cached(path: str, kind: str, compute) -> str | None:
    """`compute(path)` once per (path, size, modification time, kind); None when the file does not exist."""
    local = "://" not in path
    if local:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        key = (kind, path, st.st_size, st.st_mtime_ns, st.st_ino)
        if key in _cache:
            return _cache[key]
    elif not fs.exists(path):
        return None
    value = compute(path)
    if local:
        _cache[key] = value
    return value


def _bytes_digest(path: str) -> str:
    digest = hashlib.sha256()
    with fs.open_input(path) as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _ids_digest(path: str) -> str:
    with fs.open_input(path) as handle:
        ids = pc.unique(read_table(handle, columns=["id"]).column("id").combine_chunks()).sort()
    digest = hashlib.sha256()
    for chunk in ids.cast("large_string").buffers()[1:]:   # offsets, then the bytes: one string set, one digest
        digest.update(b"" if chunk is None else memoryview(chunk))
    return "ids:" + digest.hexdigest()


def file_digest(path: str) -> str | None:
    """sha256 of a file's bytes, or None when it does not exist."""
    return _cached(path, "bytes", _bytes_digest)


def removed_digest(path: str) -> str | None:
    """Of a ledger: sha256 of the set of ids it removed (what a later step reads of it), or None when there is none."""
    return _cached(path, "ids", _ids_digest)


def text_digests(run, source: str, shard: str, editors) -> list[str | None]:
    """What gives a docs shard's documents their text as a step reads it, by content: the docs file, then the edits
    of each text-editing step before it (in `editors`' order). Dedup's exact-check cache, tokenize's kept ids and
    mix's kept measurements are keyed by these."""
    return [file_digest(run.docs(source, shard)), *(file_digest(run.edits(step, source, shard)) for step in editors)]


def clear_cache() -> None:
    _cache.clear()
