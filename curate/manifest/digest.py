"""Size and sha256 of run files, streamed in 8 MiB blocks (token files can be far larger than memory) and
hashed a few files at a time (hashlib releases the GIL, and remote reads mostly wait on the network)."""

from __future__ import annotations

import hashlib
import os
from concurrent.futures import ThreadPoolExecutor

from curate.io import fs

from .progress import Ticker

BLOCK = 8 << 20


def default_workers() -> int:
    return max(2, min(8, os.cpu_count() or 1))


def open_read(filesystem, path: str):
    """Open for streaming reads with large blocks, like `curate.io.fs.open_input`, but on a filesystem that
    is already made: one per run, not one per file (a new S3 client per file costs a second)."""
    if fs.is_local(filesystem):
        return open(path, "rb", buffering=BLOCK)
    return filesystem.open(path, "rb", block_size=BLOCK)


def sha256_file(filesystem, path: str, ticker: Ticker | None = None) -> tuple[int, str]:
    """(bytes, sha256 hex) of one file; the size is counted from what was hashed, so the two always agree."""
    h, size = hashlib.sha256(), 0
    with open_read(filesystem, path) as f:
        while block := f.read(BLOCK):
            h.update(block)
            size += len(block)
            if ticker is not None:
                ticker.add(len(block))
    return size, h.hexdigest()


def hash_files(run: str, paths: list[str], storage_options: dict | None = None, workers: int | None = None,
               what: str = "hash") -> dict[str, tuple[int, str] | Exception]:
    """{relative path: (bytes, sha256)} for files under `run`; a file that cannot be read maps to its exception
    (FileNotFoundError for a missing one) so callers can report every problem at once."""
    ticker = Ticker(what, len(paths))
    filesystem, root = fs.filesystem(run, storage_options)

    def one(rel: str):
        try:
            return sha256_file(filesystem, fs.join(root, rel), ticker)
        except (OSError, ValueError) as exc:  # fsspec raises FileNotFoundError (an OSError) for missing objects
            return exc
        finally:
            ticker.add(file_done=True)

    with ThreadPoolExecutor(max_workers=max(1, min(workers or default_workers(), len(paths) or 1))) as pool:
        results = dict(zip(paths, pool.map(one, paths)))
    ticker.finish()
    return results
