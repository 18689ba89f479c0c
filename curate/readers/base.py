"""What every reader shares: the `Reader` interface and its registry by kind (the format description, the unit of
work and the bad-record collector are in `work.py`, which `documents.py` uses too).

A format (`format:` of a source) is a preset of field names over a reader kind; a reader kind is one file
in `curate/readers/` with one `Reader` subclass registered by `register` (import it in `readers/__init__.py`).
The ingest stage asks the registry for `READERS[fmt.kind]` and never branches on the kind.
"""

from __future__ import annotations

from typing import Iterator

import pyarrow as pa

from curate.readers.work import BAD_PREFIX, BadRecords, Format, ReadOptions, ReadTask

__all__ = ["BAD_PREFIX", "BadRecords", "Format", "ReadOptions", "ReadTask", "Reader", "READERS", "register"]


class Reader:
    """One reader kind: how its files become ingest tasks (`plan`), which columns an empty shard gets
    (`schema`), and how one file's records are read (`read_file`).

    A reader implements only `read_file`: Arrow tables of the file's records as they are (the text column named
    by `record_format(fmt)`, the id column if any, the rest, and optionally a `POSITION` column, each record's
    place in the file, when that is not its row: see `where`). What `read_file` cannot make a record of (a line
    that is not JSON, a cut-short stream) it adds to `bad` itself, with `at=` its position. The base's `read`
    makes documents of the rest: the source's id or the positional one, null, blank or non-UTF-8 texts and
    repeated ids to `bad`, the ledger in position order, batches of `batch_rows` documents, and every record
    counted in `stats["records"]` (those `read_file` added to `bad` included), so the accounting identity holds
    whatever the kind. A reader whose checks are its own (Parquet's lost row groups) overrides `read` instead
    and keeps that contract. `formats` are the presets this kind offers by name.
    """

    kind: str = ""
    formats: tuple[Format, ...] = ()

    def plan(self, whole: ReadTask, fmt: Format, storage_options: dict, target: int) -> list[ReadTask]:
        """The tasks of one file, `whole` being all of it (shard `<file>-0000`); `target` is bytes per task."""
        return [whole]

    def schema(self, fmt: Format) -> pa.Schema | None:
        """The columns of a shard that yields no batch; None leaves it to the file's own columns."""
        return None

    def columns(self, fmt: Format, projection: list[str] | None, file_columns: tuple[str, ...] | None) -> list[str] | None:
        """The columns of this kind's documents: those `schema` fixes; a kind that keeps a file's own columns says
        them from the source's `columns:` projection or the file's columns (`ReadTask.columns`), else None
        (unknown until a file is read). Raises ValueError when the file cannot give them (a projected column
        missing), so the rules' columns are checked before any work (config/columns.py)."""
        schema = self.schema(fmt)
        return None if schema is None else schema.names

    def record_format(self, fmt: Format) -> Format:
        """The text and id columns of `read_file`'s tables: the source's own fields unless the reader renames them
        (JSON Lines reads dotted paths into plain `text` and `id` columns)."""
        return fmt

    def where(self, position: int) -> str:
        """Where the record at `position` is, as a ledger detail says it: `row 12` (JSON Lines: `line 13`)."""
        return f"row {position}"

    def read_file(self, task: ReadTask, fmt: Format, handle, options: ReadOptions, bad: BadRecords) -> Iterator[pa.Table]:
        """The records of one task from `handle` (its file, opened by ingest), as Arrow tables in file order."""
        raise NotImplementedError(f"{type(self).__name__} implements neither read_file nor read")

    def read(self, task: ReadTask, fmt: Format, handle, options: ReadOptions, bad: BadRecords,
             stats: dict) -> Iterator[pa.Table]:
        """Document batches of one task: `read_file`'s records with ids, checks and counting (readers/documents.py),
        in batches of `batch_rows` documents."""
        from curate.readers.documents import documents

        records, row, seen = self.record_format(fmt), task.row_offset, set()
        tables, held = iter(self.read_file(task, fmt, handle, options, bad)), []
        while True:
            before = len(bad)
            table = next(tables, None)
            stats["records"] = stats.get("records", 0) + len(bad) - before   # records read_file rejected itself
            if table is None:
                break
            for batch in table.to_batches(max_chunksize=options.batch_rows):
                held.append(documents(task, records, batch, row, set(), seen, bad, stats, self.where))
                row += batch.num_rows
            bad.order_from(before)
            yield from _full_batches(held, options.batch_rows)
        yield from _full_batches(held, options.batch_rows, last=True)


def _full_batches(held: list[pa.Table], size: int, last: bool = False) -> Iterator[pa.Table]:
    """Tables of exactly `size` rows from those `held` (the rest stays held), or of what is left when `last`;
    each one contiguous, so its Parquet row group is the same however `read_file` cut its tables."""
    rows = sum(t.num_rows for t in held)
    if rows < size and not (last and rows):
        return
    whole = pa.concat_tables([t if t.schema == held[0].schema else t.cast(held[0].schema) for t in held])
    held.clear()
    start = 0
    while rows - start >= size or (last and start < rows):
        part = whole.slice(start, size)
        yield part.combine_chunks() if part.column(0).num_chunks > 1 else part
        start += part.num_rows
    if start < rows:
        held.append(whole.slice(start))


class _ByName(dict):
    """A registry by name that, asked for a name it lacks, loads the `curate.readers` entry points (once) and
    looks again: a Ray worker finds an installed plugin's reader without being told about it."""

    def __missing__(self, name: str):
        plugin_readers()
        if dict.__contains__(self, name):
            return dict.__getitem__(self, name)
        raise KeyError(name)


READERS: dict[str, Reader] = _ByName()
FORMATS: dict[str, Format] = _ByName()


def plugin_readers() -> None:
    """Import installed packages' `curate.readers` entry points; one that names a reader its module did not
    register (a `Reader` class or instance) is registered here."""
    from curate.plugins import load_group

    for _, obj in load_group("curate.readers"):
        reader = obj() if isinstance(obj, type) and issubclass(obj, Reader) else obj
        if isinstance(reader, Reader) and reader.kind not in READERS:
            register(reader)


def register(reader: Reader | type[Reader]) -> Reader:
    """Make a reader kind, and the format presets it offers, known by name; usable as a class decorator."""
    instance = reader() if isinstance(reader, type) else reader
    if not instance.kind:
        raise ValueError(f"{type(instance).__name__} names no kind")
    for fmt in instance.formats:
        if fmt.kind != instance.kind:
            raise ValueError(f"format {fmt.name!r} is of kind {fmt.kind!r}, not {instance.kind!r}")
    READERS[instance.kind] = instance
    FORMATS.update({f.name: f for f in instance.formats})
    return reader


def unknown_kind(fmt_name: str) -> str | None:
    """Why the format cannot be read (its kind has no reader), or None when it can."""
    fmt = FORMATS[fmt_name]
    if fmt.kind in READERS:
        return None
    return f"format {fmt_name!r} is of reader kind {fmt.kind!r}, which no reader provides (known kinds: {', '.join(sorted(READERS))})"
