"""A global step's per-docs-shard results kept by what they were made from, so that an append writes again only the
shards whose results changed.

An append labels and settles dedup's graph whole (a cluster spans sources and shards), yet most docs shards come out
as before: the new documents join few clusters. What a shard's `resolve` task sends (its representatives' ids) follows
from the rows the graph sent it and its ids; its ledger and clusters files follow from its decisions and its live
documents. The mix step re-plans every source, yet a shard whose documents and whose source's epochs are the same
downsamples the same documents. Each result is kept under `_work/<step>/outcomes/` beside the digest of its inputs,
and put back (a hard link where the run folder is local, else a copy) in place of being computed when the digest is
the same: the same bytes, written once. A digest names every input, so a kept result is never used for other inputs;
one that is not reused is replaced, and those of shards the run no longer has go (`prune`).
"""

from __future__ import annotations

import hashlib
import json
from typing import Iterable

import numpy as np
import pyarrow as pa

from curate.io import fs

VERSION = 1   # bump when what a kept result is keyed by changes


def digest(basis: dict, arrays: dict[str, np.ndarray | pa.Array]) -> str:
    """sha256 of `basis` (JSON: files by digest, the step's names and version) and of each array's bytes, by name (an
    Arrow array's: its length and buffers, made at offset 0)."""
    h = hashlib.sha256(json.dumps({"version": VERSION, **basis}, sort_keys=True).encode())
    for name in sorted(arrays):
        a = arrays[name]
        h.update(name.encode() + b"\0")
        if isinstance(a, pa.Array):
            a = pa.concat_arrays([a]) if a.offset else a
            h.update(str(len(a)).encode())
            for buffer in a.buffers():
                h.update(b"\2" if buffer is None else b"\3")
                h.update(b"" if buffer is None else buffer)
        else:
            h.update("\0".join(map(str, a)).encode() if a.dtype == object else np.ascontiguousarray(a).tobytes())
        h.update(b"\1")
    return h.hexdigest()


def reuse(folder: str, name: str, key: str, targets: dict[str, str], make, quick: str | None = None) -> dict:
    """The task's counts: put back from what was kept under `key` (`restore`), else `make()` (which writes `targets`)
    and keep its result for the next run (`keep`). `quick`: a second key of the same result, known before its inputs
    are read (what a graph phase sent the shard, by digest), kept beside `key` for the next run's `restore(...,
    field="quick")`."""
    if (kept := restore(folder, name, key, targets, quick=quick)) is not None:
        return kept
    result = make()
    keep(folder, name, key, targets, result, quick)
    return result


def restore(folder: str, name: str, key: str, targets: dict[str, str], field: str = "key", quick: str | None = None) -> dict | None:
    """The kept result of `name` when it was made from inputs of digest `key` (or of quick key `key`, by `field`): its
    files linked to `targets` (by role), and the task's counts it returned; None (nothing done) when there is none.
    `quick`: kept beside the result put back, for the next run."""
    path = fs.join(folder, f"{name}.json")
    kept = _read(path)
    if kept is None or kept.get(field) != key or set(kept["files"]) != set(targets):
        return None
    for role, target in targets.items():
        if kept["files"][role]:
            fs.link(fs.join(folder, f"{name}.{role}"), target)
        else:
            fs.remove(target)
    if quick is not None and kept.get("quick") != quick:
        fs.write_bytes(path, json.dumps({**kept, "quick": quick}).encode())
    return kept["result"]


def restore_all(folder: str, wanted: Iterable[tuple[str, str | None, str, dict[str, str]]], field: str = "key") -> dict[str, dict]:
    """In the driver, before a phase's tasks (`Phase.restore`): of `wanted` (task key, key by `field`, kept name,
    targets), the results kept under their key, put back, by task key. Only in a local run folder (a link each; on an
    object store a put back is a copy, and each task makes its own)."""
    if not fs.is_local(fs.filesystem(folder)[0]):
        return {}
    return {task: kept for task, key, name, targets in wanted
            if key is not None and (kept := restore(folder, name, key, targets, field)) is not None}


def keep(folder: str, name: str, key: str, targets: dict[str, str], result: dict, quick: str | None = None) -> None:
    """Keep what a task just wrote to `targets` (a role absent on disk is kept as absent) and its counts, under `key`
    (and `quick`); the digest is written last, so a killed task leaves nothing that restores."""
    fs.remove(fs.join(folder, f"{name}.json"))
    files = {}
    for role, path in targets.items():
        files[role] = fs.exists(path)
        if files[role]:
            fs.link(path, fs.join(folder, f"{name}.{role}"))
    record = {"key": key, "files": files, "result": result, **({"quick": quick} if quick is not None else {})}
    fs.write_bytes(fs.join(folder, f"{name}.json"), json.dumps(record).encode())


def records(folder: str, names: list[str]) -> list[str]:
    """The files that `restore` reads first for these names: what a phase asks of the disk before its tasks run
    (`Phase.prefetch`): in an append, most of a thousand tasks read only theirs, written by an earlier run."""
    return [fs.join(folder, f"{name}.json") for name in names]


def prune(folder: str, names: set[str]) -> None:
    """Remove the kept results of everything not in `names` (shards the run no longer has)."""
    for path in fs.glob(fs.join(folder, "*", "*.json")):
        name = "/".join(path.rstrip("/").rsplit("/", 2)[-2:]).removesuffix(".json")
        if name not in names:
            for other in fs.glob(path.removesuffix(".json") + ".*"):
                fs.remove(other)


def _read(path: str) -> dict | None:
    try:
        return json.loads(fs.read_bytes(path))
    except (FileNotFoundError, OSError, ValueError):
        return None
