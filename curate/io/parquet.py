"""Parquet output with fixed settings (so identical inputs give identical bytes) and atomic commit."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from curate.io.fs import AtomicWriter, filesystem, is_local, open_input

WRITE_OPTIONS = dict(compression="zstd", compression_level=3, write_statistics=True, use_dictionary=True)
SCRATCH_OPTIONS = dict(compression="lz4", write_statistics=False, use_dictionary=False)
"""`compression="lz4"`: a work file, read once, soon and whole, or a table of ids that zstd would shrink by a third at
twice the cost (the tokenize step's token lists). No dictionary (hashes and signatures do not repeat:
trying one made writing a shard's signatures 6x slower) and no statistics (nothing filters on them)."""
DOCS_PLAIN = ("text",)
"""Columns of a docs shard written without dictionary or statistics (`plain`): a page's text does not repeat, so a
dictionary is tried, abandoned and costs every reader a second decoding (reading a shard's text: 4.1 -> 2.5 ms),
and its min/max serve no filter. The run's own docs only: the kept output keeps its format."""


class ParquetSink:
    """Stream tables into one Parquet file; the file appears under its name only when the sink closes cleanly.

    Use as a context manager; on an exception nothing is published. `schema` is used when no batch arrives.
    """

    def __init__(self, path: str, schema: pa.Schema | None = None, compression: str = "zstd", plain: tuple[str, ...] = ()):
        self.path, self.schema, self.rows, self.plain = path, schema, 0, plain
        self.options = dict(SCRATCH_OPTIONS) if compression == "lz4" else {**WRITE_OPTIONS, "compression": compression}
        if compression != "zstd":
            self.options.pop("compression_level", None)
        self._writer = None

    def __enter__(self):
        self._atomic = AtomicWriter(self.path)
        self._handle = self._atomic.__enter__()
        return self

    def _open(self, schema: pa.Schema) -> pq.ParquetWriter:
        options = dict(self.options)
        if plain := [name for name in self.plain if name in schema.names]:
            rest = [name for name in schema.names if name not in plain]
            options["use_dictionary"] = rest if options["use_dictionary"] else False
            options["write_statistics"] = rest if options["write_statistics"] else False
        return pq.ParquetWriter(self._handle, schema, **options)

    def write(self, table: pa.Table) -> None:
        if self._writer is None:
            self.schema = table.schema
            self._writer = self._open(table.schema)
        elif table.schema != self.schema:
            table = table.cast(self.schema)
        if table.num_rows:
            self._writer.write_table(table)
            self.rows += table.num_rows

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is None:
                if self._writer is None:
                    self._writer = self._open(self.schema or pa.schema([("id", pa.string())]))
                self._writer.close()
            elif self._writer is not None:
                self._writer.close()
        finally:
            self._atomic.__exit__(exc_type, exc, tb)
        return False


def write_table(path: str, table: pa.Table, compression: str = "zstd", plain: tuple[str, ...] = ()) -> None:
    with ParquetSink(path, table.schema, compression, plain) as sink:
        sink.write(table)


def read_table(handle, columns: list[str] | None = None) -> pa.Table:
    """One Parquet file (an open handle or a local path), whole or some columns. `ParquetFile.read` rather than
    `pq.read_table`, whose dataset machinery costs ~0.2 ms more per call: dedup's phases read thousands of
    small work files."""
    return pq.ParquetFile(handle).read(columns=columns)


def read_file(path: str, columns: list[str] | None = None) -> pa.Table:
    """One Parquet file by path: a local one read in place (only the columns' bytes; a buffered handle reads 8 MiB
    ahead, ~2x slower for the id column of a docs shard), a remote one through `fs.open_input`."""
    store, stripped = filesystem(path)
    if is_local(store):
        return read_table(stripped, columns)
    with open_input(path) as handle:
        return read_table(handle, columns)
