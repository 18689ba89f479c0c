"""Writing to a run or a publish destination without ever leaving a half-written file under the final name.

Local files are written under a temporary name and renamed. Object stores (s3, gs) make an object visible
only when its upload completes, so there the final name is written directly and a failed upload is
aborted, never completed. Unlike `curate.io.fs.AtomicWriter` these take an explicit filesystem, so a
destination can carry its own `storage_options` (endpoint, credentials).
"""

from __future__ import annotations

import hashlib
import os
import uuid
from contextlib import contextmanager

from curate.io import fs

from .digest import BLOCK, open_read
from .progress import Ticker


def _abort(handle) -> None:
    """Drop an unfinished remote upload; closing it (even from __del__) would publish a truncated object."""
    try:
        handle.discard()  # s3fs: abort the multipart upload
    except Exception:  # noqa: BLE001 - best effort, the object is not committed below either way
        pass
    handle.closed = True  # so close()/__del__ never flushes what was buffered


@contextmanager
def atomic_open(filesystem, path: str):
    """Open `path` on `filesystem` for writing; it appears under its name only if the block exits cleanly."""
    if fs.is_local(filesystem):
        parent = os.path.dirname(path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        tmp = f"{path}.tmp-{uuid.uuid4().hex}"
        try:
            with open(tmp, "wb", buffering=BLOCK) as handle:
                yield handle
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
        return
    handle = filesystem.open(path, "wb")
    try:
        yield handle
    except BaseException:
        _abort(handle)
        raise
    handle.close()


def write_atomic(filesystem, path: str, data: bytes) -> None:
    with atomic_open(filesystem, path) as handle:
        handle.write(data)


def copy_file(src_fs, src_path: str, dst_fs, dst_path: str, ticker: Ticker | None = None) -> tuple[int, str]:
    """Stream `src_path` on `src_fs` to `dst_path` on `dst_fs` in 8 MiB blocks; returns (bytes, sha256) of
    what was sent, so the caller can check that the file did not change after it was verified."""
    h, size = hashlib.sha256(), 0
    with open_read(src_fs, src_path) as reader, atomic_open(dst_fs, dst_path) as writer:
        while block := reader.read(BLOCK):
            writer.write(block)
            h.update(block)
            size += len(block)
            if ticker is not None:
                ticker.add(len(block))
    return size, h.hexdigest()
