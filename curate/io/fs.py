"""fsspec in one place: local paths and s3://, gs://, hf:// URIs are handled the same way."""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass

import fsspec
from fsspec.implementations.local import LocalFileSystem

_GLOB_CHARS = "*?["


@dataclass(frozen=True)
class InputFile:
    """One matched input file: its full path, the path relative to the glob's base (used in ids), its size."""

    path: str
    relative: str
    size: int


def filesystem(uri: str, storage_options: dict | None = None):
    """Return (fs, path-without-protocol) for a local path or a URI."""
    return fsspec.core.url_to_fs(uri, **(storage_options or {}))


def is_local(fs) -> bool:
    return isinstance(fs, LocalFileSystem)


def expand(pattern: str, storage_options: dict | None = None) -> list[InputFile]:
    """Expand a path or glob (with `**`) to files, sorted so that planning is deterministic."""
    fs, stripped = filesystem(pattern, storage_options)
    if any(c in stripped for c in _GLOB_CHARS):
        base = stripped[: min(stripped.find(c) for c in _GLOB_CHARS if c in stripped)]
        base = base[: base.rfind("/") + 1]
        found = fs.glob(stripped, detail=True)
    else:
        base = stripped[: stripped.rfind("/") + 1]
        found = {stripped: fs.info(stripped)} if fs.exists(stripped) else {}
        if found and found[stripped].get("type") == "directory":
            base = stripped.rstrip("/") + "/"
            found = {p: i for p, i in fs.find(stripped, detail=True).items()}
    files = []
    for path, info in sorted(found.items()):
        if info.get("type") == "directory":
            continue
        full = path if is_local(fs) else fs.unstrip_protocol(path)
        files.append(InputFile(full, path[len(base):] if path.startswith(base) else os.path.basename(path), int(info.get("size") or 0)))
    return files


def open_input(path: str, storage_options: dict | None = None, block_size: int = 8 << 20):
    """Open a file for streaming reads with large blocks (remote stores punish small reads)."""
    fs, stripped = filesystem(path, storage_options)
    if is_local(fs):
        return open(stripped, "rb", buffering=block_size)
    return fs.open(stripped, "rb", block_size=block_size)


def join(root: str, *parts: str) -> str:
    return "/".join([root.rstrip("/"), *[p.strip("/") for p in parts]])


class AtomicWriter:
    """Write to a temporary name and rename on success, so a killed task never leaves a half file.

    Object stores (s3, gs) publish an object only when its upload completes, so there the final name is
    written directly.
    """

    def __init__(self, path: str):
        self.path = path
        self.fs, self.stripped = filesystem(path)
        self.local = is_local(self.fs)
        self.tmp = f"{self.stripped}.tmp-{uuid.uuid4().hex}" if self.local else self.stripped

    def __enter__(self):
        self.fs.makedirs(self.stripped.rsplit("/", 1)[0], exist_ok=True)
        self.handle = self.fs.open(self.tmp, "wb")
        return self.handle

    def __exit__(self, exc_type, exc, tb):
        self.handle.close()
        if exc_type is not None:
            if self.local and os.path.exists(self.tmp):
                os.remove(self.tmp)
            return False
        if self.local:
            os.replace(self.tmp, self.stripped)
        return False


def write_bytes(path: str, data: bytes) -> None:
    with AtomicWriter(path) as f:
        f.write(data)


def read_bytes(path: str) -> bytes:
    fs, stripped = filesystem(path)
    with fs.open(stripped, "rb") as f:
        return f.read()


def exists(path: str) -> bool:
    fs, stripped = filesystem(path)
    return fs.exists(stripped)


def glob(pattern: str) -> list[str]:
    fs, stripped = filesystem(pattern)
    return sorted(p if is_local(fs) else fs.unstrip_protocol(p) for p in fs.glob(stripped))


def remove(path: str) -> None:
    fs, stripped = filesystem(path)
    if fs.exists(stripped):
        fs.rm(stripped, recursive=True)
