"""MinHash signatures of a batch of documents: Arrow strings in, a ``(n_docs, num_perm)`` uint32 array out.

Why this shape: a map stage gets an Arrow table and writes a side table keyed by ``id``; the signature
matrix (or its Arrow FixedSizeList form) plus the per-document shingle count is all the LSH step needs.

A ``MinHashSpec`` fixes everything a signature depends on: shingling, ``num_perm``, ``seed`` (the
permutations), the 32-bit shingle hash and the permutation scheme (see ``permutations.py``), plus the
LSH bands x rows used for band keys. Signatures are exactly those of::

    m = datasketch.MinHash(num_perm, seed=seed, scheme=scheme, hashfunc=python_hashfunc(hash, hash_seed))
    m.update_batch(s.encode("utf-8") for s in spec.shingling.shingle_strings(text))

and with ``hash="sha1"`` the hashfunc is datasketch's own default ``sha1_hash32`` (so with
``scheme="affine32"`` plain ``datasketch.MinHash(num_perm, seed)`` of datasketch 2.x, and with
``scheme="legacy"`` the MinHash of datasketch < 2.0, Zyda-1 and RedPajama-V2). ``reference_minhash``
builds that object; the tests compare the two over hundreds of documents.

Threads: the kernel releases the GIL, so ``threads > 1`` splits a batch into contiguous document ranges
of about equal bytes and runs them on a thread pool; results do not depend on the split. The default
is 1 thread, because under Ray each task already holds one CPU.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable

import numpy as np
import pyarrow as pa

from .hashes import python_hashfunc
from .kernel import HASH_KINDS, signatures_range
from .permutations import permutation_params
from .presets import get_preset
from .spec import MinHashSpec


@dataclass
class Signatures:
    """``values``: (n_docs, num_perm) uint32. ``n_shingles``: (n_docs,) int64; 0 means the document
    has no signature (empty or, with ``short_docs="skip"``, short) and its row is all 2^32-1."""

    values: np.ndarray
    n_shingles: np.ndarray

    def __len__(self) -> int:
        return self.values.shape[0]

    @property
    def valid(self) -> np.ndarray:
        """Documents with at least one shingle: the ones to bucket."""
        return self.n_shingles > 0

    def to_arrow(self) -> pa.FixedSizeListArray:
        """The signatures as a ``fixed_size_list<uint32>[num_perm]`` array (zero-copy)."""
        n, p = self.values.shape
        flat = pa.array(np.ascontiguousarray(self.values).reshape(-1), type=pa.uint32())
        return pa.FixedSizeListArray.from_arrays(flat, p)


# -------------------------------------------------------------------------------------------------
# Arrow plumbing
# -------------------------------------------------------------------------------------------------

def _as_string_chunks(texts) -> list[pa.Array]:
    if isinstance(texts, pa.ChunkedArray):
        chunks = list(texts.chunks)
    elif isinstance(texts, pa.Array):
        chunks = [texts]
    else:
        chunks = [pa.array(list(texts), type=pa.large_string())]
    out = []
    for c in chunks:
        t = c.type
        if pa.types.is_dictionary(t):
            c = c.dictionary_decode()
            t = c.type
        if pa.types.is_null(t):
            c = pa.nulls(len(c), pa.large_string())
        elif pa.types.is_string_view(t):
            c = c.cast(pa.large_string())
        elif not (pa.types.is_string(t) or pa.types.is_large_string(t)):
            raise TypeError(f"MinHash needs a string array of document texts, got Arrow type {t}")
        out.append(c)
    return out


def _buffers(arr: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(data uint8, offsets int64 of this array's rows, nulls bool or empty) without copying the text."""
    n = len(arr)
    _, off_buf, data_buf = arr.buffers()
    odt = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    if off_buf is None or n == 0:
        offsets = np.zeros(n + 1, dtype=np.int64)
    else:
        offsets = np.frombuffer(off_buf, dtype=odt, count=arr.offset + n + 1)[arr.offset:].astype(np.int64)
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None and data_buf.size else np.zeros(1, np.uint8)
    nulls = arr.is_null().to_numpy(zero_copy_only=False) if arr.null_count else np.zeros(0, dtype=np.bool_)
    for a in (data, offsets, nulls):  # always read-only: numba compiles one kernel per array flag set
        a.setflags(write=False)
    return data, offsets, nulls


def _pool(threads: int) -> ThreadPoolExecutor:
    return _pool_for(threads, os.getpid())  # a forked child must not reuse its parent's threads


@lru_cache(maxsize=4)
def _pool_for(threads: int, pid: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=threads, thread_name_prefix="curate-minhash")


def _ranges(offsets: np.ndarray, parts: int) -> list[tuple[int, int]]:
    """Split documents into up to ``parts`` contiguous ranges of about equal bytes (+1 per doc)."""
    n = len(offsets) - 1
    cost = (offsets[1:] - offsets[0]) + np.arange(1, n + 1)
    cuts = np.searchsorted(cost, cost[-1] * np.arange(1, parts) / parts)
    bounds = sorted({0, *cuts.tolist(), n})
    return [(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]


# -------------------------------------------------------------------------------------------------
# The public entry points
# -------------------------------------------------------------------------------------------------

class MinHasher:
    """Computes signatures (and band keys) for batches under one ``MinHashSpec``.

    ``threads``: how many threads to split a batch over (1 = the calling thread only).
    """

    # below this many bytes a batch is not worth splitting over threads
    MIN_BYTES_PER_THREAD = 1 << 16

    def __init__(self, spec: MinHashSpec, threads: int = 1):
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        self.spec = spec
        self.threads = int(threads)
        self._a, self._b = permutation_params(spec.num_perm, spec.seed, spec.scheme)

    def __call__(self, texts: pa.Array | pa.ChunkedArray | Iterable[str | None]) -> Signatures:
        chunks = _as_string_chunks(texts)
        n = sum(len(c) for c in chunks)
        values = np.empty((n, self.spec.num_perm), dtype=np.uint32)
        counts = np.empty(n, dtype=np.int64)
        at = 0
        for chunk in chunks:
            m = len(chunk)
            if m:
                self._run(self.spec.shingling.prepare(chunk), values[at:at + m], counts[at:at + m])
            at += m
        return Signatures(values, counts)

    def _run(self, arr: pa.Array, values: np.ndarray, counts: np.ndarray) -> None:
        spec, sh = self.spec, self.spec.shingling
        data, offsets, nulls = _buffers(arr)
        args = (data, offsets, nulls)
        rest = (sh.unit == "word", sh.n, sh.short_docs == "whole", HASH_KINDS[spec.hash], spec.hash_seed,
                spec.scheme == "legacy", self._a, self._b, values, counts)
        nbytes = int(offsets[-1] - offsets[0])
        threads = min(self.threads, max(1, nbytes // self.MIN_BYTES_PER_THREAD), len(arr))
        if threads <= 1:
            signatures_range(*args, 0, len(arr), *rest)
            return
        futures = [_pool(self.threads).submit(signatures_range, *args, lo, hi, *rest)
                   for lo, hi in _ranges(offsets, threads * 4)]
        for f in futures:
            f.result()

    def band_keys(self, signatures: Signatures | np.ndarray) -> np.ndarray:
        """(n_docs, bands) uint64 band keys under this spec's bands x rows."""
        from .bands import band_keys

        return band_keys(signatures, self.spec.bands, self.spec.rows)


def compute_signatures(texts, spec: MinHashSpec | str = "zyda2", threads: int = 1) -> Signatures:
    """Signatures of ``texts`` (Arrow string array, chunked array, or an iterable of str/None) under a
    spec or a preset name."""
    if isinstance(spec, str):
        spec = get_preset(spec)
    return MinHasher(spec, threads=threads)(texts)


def reference_minhash(text: str | None, spec: MinHashSpec):
    """The datasketch ``MinHash`` our signature of ``text`` must equal (the definition, not a fast path)."""
    from datasketch import MinHash

    m = MinHash(num_perm=spec.num_perm, seed=spec.seed, scheme=spec.scheme,
                hashfunc=python_hashfunc(spec.hash, spec.hash_seed))
    shingles = [] if text is None else spec.shingling.shingle_strings(text)
    m.update_batch([s.encode("utf-8") for s in shingles])
    return m
