"""Frozen documents: the kept documents of an earlier run or published manifest, which a dedup step never removes.

A lab that has trained on a mixture appends new data and must not lose what it already used: `dedup.frozen`
names that run (its folder) or its `manifest.json`, and every document of its `kept/` stays kept. Frozen
documents rank above every source (a virtual top source): a new document that duplicates one is removed with
evidence naming it, whatever the priority; what no frozen document claims is settled as usual.

Docs shards are named by their input file, so the frozen documents of a shard are the ids of the same-named
`kept/<source>/<shard>.parquet`: a task reads one small file, never the whole earlier mixture.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from curate.io import fs
from curate.io.parquet import read_table


def frozen_root(where: str) -> str:
    """The folder that holds the frozen `kept/`: the run folder named, or the folder of the manifest named."""
    if os.path.isdir(where):
        return where
    return os.path.dirname(where) or "."


def kept_files(where: str) -> dict[tuple[str, str], str]:
    """(source, shard) -> the frozen kept file: those a manifest lists, or every `kept/<source>/<shard>.parquet`."""
    root = frozen_root(where)
    manifest = where if not os.path.isdir(where) else None
    if manifest is not None:
        listed = [f["path"] for f in json.loads(fs.read_bytes(manifest)).get("files", [])]
    else:
        listed = [os.path.relpath(p, root).replace(os.sep, "/") for p in fs.glob(fs.join(root, "kept", "*", "*.parquet"))]
    out = {}
    for rel in listed:
        parts = rel.split("/")
        if len(parts) == 3 and parts[0] == "kept" and parts[2].endswith(".parquet"):
            out[(parts[1], parts[2][:-len(".parquet")])] = fs.join(root, rel)
    return out


def check(where: str) -> str | None:
    """Why `where` cannot be frozen (one line), or None."""
    if not os.path.exists(where):
        return f"{where} does not exist (name an earlier run's folder or its manifest.json)"
    try:
        files = kept_files(where)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return f"{where}: not a manifest ({exc})"
    if not files:
        return f"{where}: no kept/<source>/<shard>.parquet files (name a finished run or its manifest.json)"
    return None


def identity(where: str, file_identity) -> object:
    """What stands for the frozen mixture in a fingerprint: its manifest's identity (`file_identity`), or each kept
    file's size and modification time."""
    root = frozen_root(where)
    manifest = where if not os.path.isdir(where) else os.path.join(root, "manifest.json")
    if os.path.exists(manifest):
        return {"manifest": file_identity(manifest)}
    return {f"{s}/{h}": [os.stat(p).st_size, os.stat(p).st_mtime_ns] for (s, h), p in sorted(kept_files(where).items())
            if os.path.exists(p)}


def frozen_ids(path: str | None) -> pa.Array:
    """The ids of one frozen kept file (empty when there is none)."""
    if path is None or not fs.exists(path):
        return pa.array([], pa.string())
    with fs.open_input(path) as handle:
        return read_table(handle, columns=["id"]).column("id").combine_chunks().cast(pa.string())


def count(path: str) -> int:
    """Documents in one frozen kept file (from its footer)."""
    with fs.open_input(path) as handle:
        return pq.ParquetFile(handle).metadata.num_rows


def frozen_mask(ids: pa.Array, path: str | None) -> np.ndarray:
    """Per id: whether it is a frozen document of the kept file at `path`."""
    return mask_in(ids, frozen_ids(path))


def mask_in(ids: pa.Array, frozen: pa.Array) -> np.ndarray:
    """Per id: whether it is one of `frozen` (vectorised set membership)."""
    if not len(frozen) or not len(ids):
        return np.zeros(len(ids), bool)
    return pc.is_in(ids.cast(pa.string()), value_set=frozen).to_numpy(zero_copy_only=False).astype(bool)
