"""One schema for the tables a user loads: every file of `kept/` (and `quarantine/`) has the same columns.

Readers of a folder of Parquet files take one schema for all of them: HF `datasets` fails with a CastError
when files differ, pandas, pyarrow.dataset and polars keep the first file's columns and drop the rest. So
every file of these tables carries `source` (the run's source name) first, then `id`, `text`, then the
union of every source's own columns in the order they first appear (null where a source has none). A
source's own `source` column (Zyda and Dolma have one) is kept as `source_column`. A column two sources
type differently (and that no common type holds) is kept once per source as `<source>_<column>`.
Side tables keyed by id (signals, scores, dual_use) have one schema by construction; they get `source` too.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.parquet as pq

from curate.errors import CurateError
from curate.io import fs
from curate.io.parquet import ParquetSink
from curate.rundir.digests import file_digest

SOURCE = "source"
NATIVE_SOURCE = "source_column"
LEADING = (SOURCE, "id", "text")


def with_source(table: pa.Table, source: str) -> pa.Table:
    """`table` with our `source` column first; its own `source` column (if any) renamed `source_column`."""
    if SOURCE in table.column_names:
        table = table.rename_columns([NATIVE_SOURCE if n == SOURCE else n for n in table.column_names])
    return table.add_column(0, SOURCE, pa.array([source] * table.num_rows, pa.string()))


def source_schema(schema: pa.Schema) -> pa.Schema:
    """The schema `with_source` gives a table of `schema`."""
    fields = [pa.field(NATIVE_SOURCE, f.type, f.nullable, f.metadata) if f.name == SOURCE else f for f in schema]
    return pa.schema([pa.field(SOURCE, pa.string()), *fields])


class SourceSink(ParquetSink):
    """A ParquetSink for a side table of one source: every row gets `source` (see `with_source`)."""

    def __init__(self, path: str, source: str, schema: pa.Schema | None = None, compression: str = "zstd"):
        super().__init__(path, source_schema(schema) if schema is not None else None, compression)
        self.source, self.fixed = source, self.schema

    def write(self, table: pa.Table) -> None:
        table = with_source(table, self.source)
        super().write(table.cast(self.fixed) if self.fixed is not None and table.schema != self.fixed else table)


_KNOWN: dict = {}   # a DocumentSchema by its docs files' digests (`DocumentSchema.of_docs`)


class DocumentSchema:
    """The shared schema of a documents table, and how each source's columns are named in it."""

    def __init__(self, by_source: dict[str, list[pa.Schema]]):
        fields: dict[str, list[tuple[str, pa.Field]]] = {}
        for source, schemas in by_source.items():
            for schema in schemas:
                for f in source_schema(schema):
                    fields.setdefault(f.name, []).append((source, f))
        self.rename: dict[str, dict[str, str]] = {s: {} for s in by_source}
        out: list[pa.Field] = []
        for name, found in fields.items():
            merged = _common_type([f for _, f in found])
            if merged is not None:
                out.append(pa.field(name, merged))
                continue
            for source in dict.fromkeys(s for s, _ in found):
                own = _common_type([f for s, f in found if s == source])
                if own is None:
                    raise CurateError(f"source '{source}': column '{name}' has types that do not agree across its files "
                                      f"({', '.join(sorted({str(f.type) for s, f in found if s == source}))})")
                self.rename[source][name] = f"{source}_{name}"
                out.append(pa.field(f"{source}_{name}", own))
        lead = [f for n in LEADING for f in out if f.name == n]
        self.schema = pa.schema(lead + [f for f in out if f.name not in LEADING])

    @classmethod
    def of_docs(cls, run, shards: list[tuple[str, str]]) -> "DocumentSchema":
        """From the footers of the docs shards `(source, shard)` (read in parallel: object stores are slow); once a
        process for the same files by content (`file_digest`, which every step's shard keys compute anyway): the kept
        step asks once per source and once for the whole run, 5 x 1,167 footers a 1M run's no-op re-run."""
        key = tuple((source, file_digest(run.docs(source, shard))) for source, shard in shards)
        if (known := _KNOWN.get(key)) is None:
            _KNOWN.clear()   # (one run's docs at a time)
            known = _KNOWN[key] = cls._read_docs(run, shards)
        return known

    @classmethod
    def _read_docs(cls, run, shards: list[tuple[str, str]]) -> "DocumentSchema":
        def read(item):
            with fs.open_input(run.docs(*item)) as handle:
                return item[0], pq.read_schema(handle)

        by_source: dict[str, list[pa.Schema]] = {}
        with ThreadPoolExecutor(16) as pool:
            for source, schema in pool.map(read, shards):
                known = by_source.setdefault(source, [])
                if not any(schema.equals(s) for s in known):
                    known.append(schema)
        return cls(by_source)

    def conform(self, table: pa.Table, source: str) -> pa.Table:
        """`table` (a batch of `source`'s documents) in the shared schema: renamed, null-filled, cast."""
        table = with_source(table, source)
        rename = self.rename.get(source, {})
        if rename:
            table = table.rename_columns([rename.get(n, n) for n in table.column_names])
        n = table.num_rows
        columns = [table.column(f.name).cast(f.type) if f.name in table.column_names else pa.nulls(n, f.type) for f in self.schema]
        return pa.Table.from_arrays(columns, schema=self.schema)


def _common_type(fields: list[pa.Field]) -> pa.DataType | None:
    """The type every field fits into (ints widen, null takes any), or None when none does."""
    try:
        return pa.unify_schemas([pa.schema([pa.field("x", f.type)]) for f in fields], promote_options="permissive").field("x").type
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return None
