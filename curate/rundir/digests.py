"""Digests of a run's files by content, cached by what `stat` says of the file (path, size, modification and change
times, inode): a file read by several steps of one run (a docs shard, a ledger) is hashed once, and a run folder keeps
the digests of its settled files for the next run (`load`, `save`). Per-shard keys (`curate.runner.shardkeys`) and the
mix step's kept measurements (`curate.stages.measured`) are made of them.

Every run keys every shard of every step by the content of what it reads, so without the kept digests each run hashed
the whole run folder again: at 1M documents ~6 s of a 1M append's single-threaded planning, most of a no-op run. As git
trusts its index, a kept digest is trusted while the file's `stat` is the same; curate writes a file by renaming a new
one into place (a new inode, new times), never edits one. A digest is kept only when the file had not changed for
`SETTLED_NS` when it was hashed: a file written again within the clock's tick would otherwise keep its times ("racy
git")."""

from __future__ import annotations

import hashlib
import json
import os
import time

import pyarrow.compute as pc

from curate.io import fs
from curate.io.fs import SETTLED_NS   # a file unchanged this long before it was hashed keeps its digest across runs
from curate.io.parquet import read_table

VERSION = 2   # 2: the files under the run folder named relative to it (`in_run`): a moved run folder keeps them

_cache: dict[tuple, str] = {}
_settled: set[tuple] = set()   # keys of `_cache` that `save` may keep
_new: set[tuple] = set()       # of those, the ones hashed since `load`: nothing to save without them
_loaded: set[tuple] = set()    # the kept files taken in, by `stat`: each once per process
_sets: dict[str, str] = {}     # a ledger's bytes digest -> the digest of the set of ids it holds (`removed_digest`)
_sets_new: list[str] = []      # of those, the ones found since `load`


def _stat_key(kind: str, path: str, st: os.stat_result) -> tuple:
    return (kind, path, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def _cached(path: str, kind: str, compute) -> str | None:
    """`compute(path)` once per (kind, `stat` of the file); None when the file does not exist."""
    local = "://" not in path
    if local:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        key = _stat_key(kind, path, st)
        if key in _cache:
            return _cache[key]
        started = time.time_ns()
    elif not fs.exists(path):
        return None
    value = compute(path)
    if local:
        _hold(key, st, started, value)
    return value


def _hold(key: tuple, st: os.stat_result, started: int, value: str) -> None:
    """`value` for the file of `stat` `st` while it stays so; kept for the next run (`save`) when the file had not
    changed for SETTLED_NS when it was read (from `started`)."""
    _cache[key] = value
    if fs.settled(st, started, SETTLED_NS):
        _settled.add(key)
        _new.add(key)


def load(path: str) -> None:
    """Take the digests a run kept (`save`) into this process's cache; nothing when there are none, they are of
    another version, the run folder is on an object store (whose files are keyed by their store's version), or this
    process took in that file as it is already. The driver loads it to plan; each worker loads it as it sets up a phase
    (`Work.prepare`), so that a task of an append does not hash again the docs shard and ledgers its restore is keyed by
    (a 1M append's dedup and mix each ran 1,167 such tasks)."""
    if "://" in path:
        return
    try:
        st = os.stat(path)
        if (seen := (path, st.st_size, st.st_mtime_ns, st.st_ino)) in _loaded:
            return
        kept = json.loads(fs.read_bytes(path))
    except (FileNotFoundError, OSError, ValueError):
        return
    _loaded.add(seen)
    if not isinstance(kept, dict) or kept.get("version") != VERSION:
        return
    root = _root_of(path)
    rows = [*kept["digests"], *([kind, fs.join(root, name), *rest] for kind, name, *rest in kept.get("in_run", []))]
    for *key, value in rows:
        _cache[tuple(key)] = value
        _settled.add(tuple(key))
    _sets.update(kept.get("sets", {}))


def _root_of(path: str) -> str:
    """The run folder of a kept digests file (`RunDir.digests_file`: `RUN/_state/<file>`): the paths under it are kept
    relative to it, so that a run folder moved (`mv`: the same inodes and times) keeps its digests."""
    return path.rsplit("/", 2)[0]


def save(path: str) -> None:
    """Keep the settled digests of the files that are still as they were hashed, for the next run (`load`); nothing is
    written when this process hashed no settled file (a no-op run leaves the file as it was), nor on an object store.
    Files under the run folder are named relative to it (`in_run`), the rest (inputs elsewhere) by their own path."""
    if not (_new or _sets_new) or "://" in path:
        return
    rows, in_run, under = [], [], _root_of(path) + "/"
    for key in list(_settled):
        try:
            st = os.stat(key[1])
        except OSError:
            continue
        if _stat_key(key[0], key[1], st) == key and key in _cache:
            kind, name, *rest = key
            if name.startswith(under):
                in_run.append([kind, name[len(under):], *rest, _cache[key]])
            else:
                rows.append([*key, _cache[key]])
    held = {value for key, value in _cache.items() if key[0] == "bytes"}   # the sets of ledgers this run saw, not older
    sets = {content: ids for content, ids in sorted(_sets.items()) if content in held}
    fs.write_bytes(path, json.dumps({"version": VERSION, "digests": sorted(rows), "in_run": sorted(in_run), "sets": sets}).encode())
    _new.clear()
    _sets_new.clear()


def _bytes_digest(path: str) -> str:
    digest = hashlib.sha256()
    with fs.open_input(path) as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _ids_digest(path: str) -> str:
    """By the ledger's bytes first: a ledger a step put back from its kept results (a hard link: a new change time, so
    its `stat`-keyed digest no longer holds) is hashed, a few kilobytes, and its set looked up by that, not read as a
    table again (~5 ms a ledger: 5.5 s of a 1M append's mix, whose 1,167 tasks read the dedup ledgers put back)."""
    content = file_digest(path)
    if (known := _sets.get(content)) is not None:
        return known
    with fs.open_input(path) as handle:
        ids = pc.unique(read_table(handle, columns=["id"]).column("id").combine_chunks()).sort()
    digest = hashlib.sha256()
    for chunk in ids.cast("large_string").buffers()[1:]:   # offsets, then the bytes: one string set, one digest
        digest.update(b"" if chunk is None else memoryview(chunk))
    _sets[content] = value = "ids:" + digest.hexdigest()
    _sets_new.append(content)
    return value


def file_digest(path: str) -> str | None:
    """sha256 of a file's bytes, or None when it does not exist."""
    return _cached(path, "bytes", _bytes_digest)


def known(path: str, st: os.stat_result | None = None) -> str | None:
    """The sha256 of a local file's bytes when this process has it for the file's `stat` (`st`, else as it is now;
    hashed here, or kept by an earlier run), without reading the file; None otherwise."""
    if "://" in path:
        return None
    try:
        st = st or os.stat(path)
    except OSError:
        return None
    return _cache.get(_stat_key("bytes", path, st))


def remember(path: str, st: os.stat_result, taken_ns: int, digest: str) -> None:
    """Keep `digest` of a local file that something else read whole after `st` was taken (at `taken_ns`): held while
    the file's `stat` is still `st` (checked here, so the file did not change while it was read), and kept for the
    next run when the file had settled before `st` was taken, as `file_digest`'s are."""
    if "://" in path:
        return
    try:
        now = os.stat(path)
    except OSError:
        return
    key = _stat_key("bytes", path, st)
    if _stat_key("bytes", path, now) == key and key not in _cache:
        _hold(key, st, taken_ns, digest)


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
    _loaded.clear()
    _sets.clear()
    _sets_new.clear()
    _settled.clear()
    _new.clear()
