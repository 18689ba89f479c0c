"""Rows one graph task sends to many docs shards, in one work file: `<folder>/from-<origin>.arrow`.

A partition's task (decide, settle, route, the exact check's planning) sends rows to every docs shard with a member in
it, and a docs shard's `resolve` task sends its representatives' ids to their members' shards. (Edges, nodes and each
round's label messages, all uint64 and sent to node partitions, go in `curate.dedup.mailbox`'s raw files, cheaper
still to write and read.) A file per (task, receiver) made ~25,000 of a 1M-document dedup's ~31,000 small files, and
P^2 files a round of label propagation (160,000 at 100M documents): creating a file costs more than writing its few
kilobytes (~0.25 ms each here), and on an object store it is a PUT. A bundle is one Arrow IPC file per sending task
with one record batch per receiver, the receivers' names in its schema's metadata. A receiver opens each bundle of a
folder written by partitions (a partition count of them), or, from docs shards, only those of the senders it knows of
(`receive_from`), and reads its own batch only (IPC files are read at offsets: on an object store too, only the footer
and that batch travel).

A partition's bundle names every docs shard (5,500 at 5M documents), and every docs shard's task opens every partition's
bundle: finding the batch must not cost the receivers' count. The tags are kept sorted and fixed-width (`TAGS`), looked
up by a binary search over the metadata's bytes, with no list parsed (a JSON list and a dict of 5,500 tags cost 0.46 ms
a bundle, paid by each of 5,500 tasks for each of 40 bundles: most of a 5M run's 160 s accounting).
"""

from __future__ import annotations

import json
import os
import threading
from typing import Callable, Iterable, Iterator

import numpy as np
import pyarrow as pa

from curate.dedup import rowset
from curate.dedup.layout import IPC, PLAIN, WORK, tag_of
from curate.io.ipc import SMALL_FILE
from curate.io import fs

SMALL_BATCH = 1024     # rows a batch, on average, under which a bundle is written uncompressed (`PLAIN`: see `send`)

SHARDS = b"shards"   # schema metadata of bundles from before `TAGS`: the receiving shards' tags, in batch order (JSON)
TAGS = b"tags"       # schema metadata: the receivers' tags, sorted, each padded with NULs to the longest (numpy `S<width>`)
WIDTH = b"tag_width"
BATCH = b"tag_batch"   # ... and the batch of each, in that order (little-endian int32)
DIGESTS = b"tag_digest"   # ... and, where the sender asked (`send(digests=True)`), a digest of each (DIGEST bytes)
DIGEST = rowset.LANES * 8
NOTHING = rowset.add([]).tobytes().hex()   # `digest` of a tag nothing was sent to


def send(folder: str, origin: str, parts: Iterable[tuple[int, dict[str, np.ndarray]]], name: Callable[[int], str] = tag_of,
         options: pa.ipc.IpcWriteOptions | None = None, digests: bool = False) -> dict[str, str]:
    """Write `(key, columns)` parts as the bundle `folder/from-<origin>`, each batch under `name(key)` (a docs shard's
    tag by default; `partition` for a node partition): replaces what an earlier try of the same task sent (nothing to
    send removes it). `options`: how buffers are written (default: by batch size, below). With `digests`, each batch's
    content digest is kept beside its tag (`digest`: what a receiver was sent, known without reading it) and returned,
    by tag."""
    path = fs.join(folder, f"from-{origin}{WORK}")
    tags, batches, fields, raw = [], [], None, []
    for key, columns in parts:
        tags.append(name(key))
        batches.append([col if isinstance(col, pa.Array) else pa.array(col) for col in columns.values()])
        fields = fields or list(zip(columns, (a.type for a in batches[-1])))
        if digests:
            raw.append(list(columns.values()))
    if not batches:
        fs.remove(path)
        return {}
    sums = [row.tobytes() for row in rowset.digests([f for f, _ in fields], raw)] if digests else []
    # record batches straight to the writer: at 100M documents a task sends to 400 partitions a round, and a table
    # per part, its metadata replaced, cost 2.6x the batch itself (~0.4 against ~0.16 ms a part)
    # a bundle of small batches (a docs shard's few members, at 1M documents ~10 rows) goes uncompressed: lz4 makes each
    # buffer of each batch a frame to undo (~75 us a batch against ~18 read in place) and saves nothing at that size
    rows = sum(len(arrays[0]) for arrays in batches)
    schema = pa.schema(fields, metadata=TagIndex.metadata(tags, sums or None))
    options = options or (PLAIN if rows < SMALL_BATCH * len(batches) else IPC)
    with fs.AtomicWriter(path) as handle, pa.ipc.new_file(handle, schema, options=options) as writer:
        for arrays in batches:
            writer.write_batch(pa.RecordBatch.from_arrays(arrays, schema=schema))
    return {tag: digest.hex() for tag, digest in zip(tags, sums)}


def digest(folder: str, tag: str) -> str | None:
    """What every bundle under `folder` sent to `tag`, by content (`rowset`: whatever the order and split of the rows
    among senders), without reading it: from the digests its senders kept (`send(digests=True)`); None where a sender
    kept none (an earlier version wrote it)."""
    parts = []
    for path in _bundles(folder):
        at = (index := _open(path)[1]).position(tag)
        if at is None:
            continue
        if index.digests is None:
            return None
        parts.append(index.digests[at].view(np.uint64))
    return rowset.add(parts).tobytes().hex()


def digests(folder: str) -> dict[str, str] | None:
    """`digest` of every tag sent to under `folder`, from the bundles' indexes at once (a driver putting back a thousand
    shards' results); None where a bundle kept no digests."""
    tags, lanes = [], []
    for path in _bundles(folder):
        index = _open(path)[1]
        if index.digests is None:
            return None
        tags.append(index.tags)
        lanes.append(index.digests.view(np.uint64).reshape(-1, rowset.LANES))
    if not tags:
        return {}
    width = max(t.dtype.itemsize for t in tags)
    names, at = np.unique(np.concatenate([t.astype(f"S{width}") for t in tags]), return_inverse=True)
    sums = np.zeros((len(names), rowset.LANES), np.uint64)
    with np.errstate(over="ignore"):
        np.add.at(sums, at, np.concatenate(lanes))
    return {name.decode(): row.tobytes().hex() for name, row in zip(names, sums)}


def partition(p: int) -> str:
    """The name a node partition's batch has in a bundle (the partition phases' own `origin` too)."""
    return f"{p:05d}"


def _bundles(folder: str) -> list[str]:
    return fs.glob(fs.join(folder, f"from-*{WORK}"))


class TagIndex:
    """Which batch of a bundle a receiver's tag names: a binary search over the sorted tags (`TAGS`); and, where the
    sender kept them, the batches' digests in the same order (`DIGESTS`)."""

    def __init__(self, tags: np.ndarray, batch: np.ndarray, digests: np.ndarray | None = None):
        self.tags, self.batch, self.digests = tags, batch, digests

    @staticmethod
    def metadata(tags: list[str], digests: list[bytes] | None = None) -> dict[bytes, bytes]:
        encoded = [t.encode() for t in tags]
        width = max(map(len, encoded))
        order = np.argsort(np.array(encoded, f"S{width}"), kind="stable")
        return {TAGS: b"".join(encoded[i].ljust(width, b"\0") for i in order), WIDTH: str(width).encode(),
                BATCH: order.astype("<i4").tobytes(), **({DIGESTS: b"".join(digests[i] for i in order)} if digests else {})}

    @classmethod
    def of(cls, metadata: dict[bytes, bytes]) -> "TagIndex":
        if TAGS not in metadata:   # a bundle an older version wrote (a run resumed across the change)
            listed = json.loads(metadata[SHARDS])
            return cls(*cls._arrays(cls.metadata(listed)))
        return cls(*cls._arrays(metadata))

    @staticmethod
    def _arrays(metadata: dict[bytes, bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        digests = np.frombuffer(metadata[DIGESTS], np.uint8).reshape(-1, DIGEST) if DIGESTS in metadata else None
        return np.frombuffer(metadata[TAGS], f"S{int(metadata[WIDTH])}"), np.frombuffer(metadata[BATCH], "<i4"), digests

    def position(self, tag: str) -> int | None:
        """Where `tag` is among the sorted tags, or None when nothing was sent to it."""
        wanted = tag.encode()
        at = int(np.searchsorted(self.tags, wanted))
        return at if at < len(self.tags) and self.tags[at] == wanted else None

    def find(self, tag: str) -> int | None:
        """The batch sent to `tag`, or None when nothing was."""
        return None if (at := self.position(tag)) is None else int(self.batch[at])

    def __iter__(self) -> Iterator[str]:
        return (t.decode() for t in self.tags)

    def nbytes(self) -> int:
        return self.tags.nbytes + self.batch.nbytes + (0 if self.digests is None else self.digests.nbytes)


def _open(path: str) -> tuple[pa.ipc.RecordBatchFileReader, TagIndex]:
    """(the bundle's reader, its `TagIndex`); local files under `SMALL_FILE` are read whole, larger ones read at offsets
    (a batch is read when asked for: what a kept bundle holds in memory is its footer, not the pages its batches were
    read from), as remote ones are. Every shard task of a phase opens every partition's bundle and a few of the many
    shard bundles: a process keeps the ones it used last (at most `_KEEP` bundles, `_KEEP_FILES` of them open files,
    `_KEEP_BYTES` of them in memory), by name, size and time written."""
    store, stripped = fs.filesystem(path)
    if not fs.is_local(store):
        reader = pa.ipc.open_file(_at_offsets(path))
        return reader, TagIndex.of(reader.schema.metadata)
    st = os.stat(stripped)
    key = (stripped, st.st_size, st.st_mtime_ns)
    global _opened_bytes, _opened_files
    with _lock:   # (inline runs are threads of one process)
        if key in _opened:   # least recently used first: a partition's bundle, read by every shard, stays
            _opened[key] = _opened.pop(key)
            return _opened[key][:2]
        whole = st.st_size < SMALL_FILE
        if whole:
            with open(stripped, "rb") as handle:
                reader = pa.ipc.open_file(pa.py_buffer(handle.read()))
        else:
            reader = pa.ipc.open_file(_at_offsets(path))
        index = TagIndex.of(reader.schema.metadata)
        held = (st.st_size if whole else 0) + index.nbytes() + 32 * reader.num_record_batches   # (its footer's blocks)
        _opened[key] = (reader, index, held, not whole)
        _opened_bytes += held
        _opened_files += not whole
        while len(_opened) > 1 and (len(_opened) > _KEEP or _opened_files > _KEEP_FILES or _opened_bytes > _KEEP_BYTES):
            _, _, dropped, was_file = _opened.pop(next(iter(_opened)))
            _opened_bytes -= dropped
            _opened_files -= was_file
        return reader, index


def _at_offsets(path: str):
    """The bundle as a file read at offsets (a local file, or an object store's): only what is asked of it is read."""
    store, stripped = fs.filesystem(path)
    return pa.OSFile(stripped) if fs.is_local(store) else fs.open_input(path)


_KEEP = 4096
_KEEP_FILES = 512         # open files (a 5M run's accounting reads two folders of 20 partitions' bundles: 40)
_KEEP_BYTES = 64 << 20    # what kept bundles hold in memory: small ones whole, large ones' footers and indexes. (Large
                          # ones were memory-mapped, and every page a batch was read from stayed resident while the
                          # bundle was kept: a 10M-document label round's task peaked at 596 MiB, against 260 with a
                          # file per message, until they counted their whole size, which made a 5M run's accounting
                          # open its 40 bundles (74 MB) again for each docs shard)
_opened: dict = {}
_opened_bytes = 0   # the sizes of the bundles in `_opened` (a running total: summed on every open, it cost 0.5 s a 1M dedup)
_opened_files = 0
_lock = threading.Lock()


def receive(folder: str, tag: str, names: list[str], dtypes: dict) -> dict[str, np.ndarray]:
    """The named columns of every batch sent to shard `tag` under `folder`, concatenated (empty arrays when none): as
    numpy arrays of the `dtypes` given, or Arrow arrays where the dtype given is an Arrow type (strings: a numpy object
    array would make a Python object of each)."""
    return _gather(_bundles(folder), tag, names, dtypes)


def receive_from(folder: str, origins: Iterable[str], tag: str, names: list[str], dtypes: dict) -> dict[str, np.ndarray]:
    """As `receive`, from the bundles of the named senders only: where the senders are docs shards (a thousand bundles
    at 1M documents), a receiver that knows who wrote to it opens those few rather than every one."""
    paths = [fs.join(folder, f"from-{origin}{WORK}") for origin in origins]
    return _gather([p for p in paths if fs.exists(p)], tag, names, dtypes)


def batches(folder: str, tag: str) -> Iterator[pa.RecordBatch]:
    """Each batch sent to `tag` under `folder`, one bundle at a time (each read when its turn comes: a partition's
    signatures are never all read into memory at once). A bundle here is one docs shard's, read once by each
    partition's task: its footer and the one batch are read at offsets, and it is not kept. (Read whole and kept, as a
    partition's bundle is, each of P partitions read every docs shard's whole bundle: 5M documents' dedup read 26 GB.)"""
    for path in _bundles(folder):
        with _at_offsets(path) as source:
            reader = pa.ipc.open_file(source)
            if (at := TagIndex.of(reader.schema.metadata).find(tag)) is not None:
                yield reader.get_batch(at)


def _gather(paths: list[str], tag: str, names: list[str], dtypes: dict) -> dict[str, np.ndarray]:
    parts: dict[str, list] = {n: [] for n in names}
    for path in paths:
        reader, index = _open(path)
        if (at := index.find(tag)) is None:
            continue
        batch = reader.get_batch(at)
        for n in names:
            parts[n].append(batch.column(n) if isinstance(dtypes[n], pa.DataType) else batch.column(n).to_numpy(zero_copy_only=False))
    return {n: _joined(parts[n], dtypes[n]) for n in names}


def _joined(parts: list, dtype):
    if isinstance(dtype, pa.DataType):
        return pa.concat_arrays([p.cast(dtype) for p in parts]) if parts else pa.array([], dtype)
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.empty(0, dtype)


def receivers(folder: str) -> set[str]:
    """The tags of every shard something was sent to under `folder`."""
    return {tag for path in _bundles(folder) for tag in _open(path)[1]}
