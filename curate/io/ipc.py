"""Arrow IPC work files: what a later task reads back whole and soon, never a tool outside curate.

Parquet encodes a list column value by value (repetition and definition levels): writing a shard's ~1M token ids
took ~8 ms uncompressed and reading them ~5 ms, where IPC writes and reads the same buffers as they are (0.1 ms; with
lz4, 7 and 1 ms). Outputs that other tools load stay Parquet. A file appears under its name only when complete.
"""

from __future__ import annotations

import os

import pyarrow as pa

from curate.io import fs

LZ4 = pa.ipc.IpcWriteOptions(compression="lz4")
SMALL_FILE = 1 << 20   # bytes under which a local file is read into memory whole, not through a file object


class IpcSink:
    """Stream tables into one IPC file of `schema` (its metadata kept); published on a clean exit only."""

    def __init__(self, path: str, schema: pa.Schema, options: pa.ipc.IpcWriteOptions = LZ4):
        self.path, self.schema, self.options = path, schema, options

    def __enter__(self):
        self._atomic = fs.AtomicWriter(self.path)
        self._writer = pa.ipc.new_file(self._atomic.__enter__(), self.schema, options=self.options)
        return self

    def write(self, table: pa.Table) -> None:
        self._writer.write_table(table.replace_schema_metadata(self.schema.metadata))

    def __exit__(self, exc_type, exc, tb):
        try:
            self._writer.close()
        finally:
            self._atomic.__exit__(exc_type, exc, tb)
        return False


def write_ipc(path: str, table: pa.Table, options: pa.ipc.IpcWriteOptions = LZ4) -> None:
    with IpcSink(path, table.schema, options) as sink:
        sink.write(table)


def read_ipc(path: str, columns: list[str] | None = None) -> pa.Table:
    """One IPC file, whole or some columns: a small local one in one read (uncompressed, its arrays are views of
    those bytes), a larger one through Arrow's own file, a remote one through fsspec."""
    store, stripped = fs.filesystem(path)
    if fs.is_local(store) and os.path.getsize(stripped) < SMALL_FILE:
        with open(stripped, "rb") as handle:
            table = pa.ipc.open_file(pa.py_buffer(handle.read())).read_all()
    elif fs.is_local(store):
        with pa.OSFile(stripped, "rb") as handle:
            table = pa.ipc.open_file(handle).read_all()
    else:
        with fs.open_input(path) as handle:
            table = pa.ipc.open_file(handle).read_all()
    return table.select(columns) if columns is not None else table
