"""What a reader works with: the format description, the unit of work (one task of one file), the options every
read gets, and the collector of bad records, shared by the `Reader` base (base.py) and the documents it makes
(documents.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

BAD_PREFIX = "bad_record:"


@dataclass(frozen=True)
class Format:
    """How a native dataset format maps onto our document row (`id`, `text`, the source's other columns).

    `id` is the source's own id field, a name or a dotted path (`metadata.WARC-Record-ID` in JSON, a field
    of a struct column in Parquet); a record whose id is absent, null or empty, and every record when `id`
    is None, gets the positional id `{source}/{relative file}/{line or row}`. `url` is a field (dotted path
    allowed for JSON) copied to a `url` column; `promote` lists JSON fields kept as typed columns (the rest
    of a JSON record goes to a `meta` JSON string). Parquet keeps every column natively.
    """

    name: str
    kind: str  # the reader that reads it: a key of READERS
    text: str = "text"
    id: str | None = None
    url: str | None = None
    promote: tuple[tuple[str, pa.DataType], ...] = ()
    doc: str = ""

    def with_fields(self, fields: dict) -> "Format":
        """Apply a source's `fields:` mapping (text/id/url) on top of the preset."""
        given = {k: v for k, v in fields.items() if v is not None}
        return Format(self.name, self.kind, given.get("text", self.text), given.get("id", self.id),
                      given.get("url", self.url), self.promote, self.doc)


@dataclass(frozen=True)
class ReadTask:
    """One ingest task: a whole file, or a range of row groups of a large Parquet file."""

    source: str
    path: str
    relative: str
    shard: str
    size: int
    row_groups: tuple[int, ...] | None = None
    row_offset: int = 0
    unreadable: str | None = None  # set at planning time when the file cannot even be opened
    version: str = ""              # the file's modification time, ETag or content hash (see fs.version_of)
    byte_range: tuple[int, int] | None = None        # a plain JSONL file's share: lines starting in these bytes
    line_range: tuple[int, int | None] | None = None  # a compressed JSONL file's share: these line numbers
    columns: tuple[str, ...] | None = None            # the file's own columns, where planning read them (a Parquet footer)

    @property
    def id_prefix(self) -> str:
        return f"{self.source}/{self.relative}"


@dataclass
class BadRecords:
    """Collects rejected records so they reach the ledger with a reason and where they were found; `at`, a
    record's position in its file, lets the base `Reader.read` keep the ledger in file order."""

    source: str
    relative: str
    ids: list = field(default_factory=list)
    reasons: list = field(default_factory=list)
    details: list = field(default_factory=list)
    positions: list = field(default_factory=list)

    def add(self, record_id: str, kind: str, where: str, message: str, at: int | None = None) -> None:
        self.ids.append(record_id)
        self.reasons.append(BAD_PREFIX + kind)
        self.details.append(f"{self.relative} {where}: {message}"[:500])
        self.positions.append(at)

    def __len__(self) -> int:
        return len(self.ids)

    def counts(self) -> dict:
        out: dict = {}
        for r in self.reasons:
            out[r] = out.get(r, 0) + 1
        return out

    def order_from(self, start: int) -> None:
        """Put the records added since `start` in position order (stable; those with no position last)."""
        order = sorted(range(start, len(self.ids)), key=lambda i: (self.positions[i] is None, self.positions[i] or 0))
        if order != list(range(start, len(self.ids))):
            for column in (self.ids, self.reasons, self.details, self.positions):
                column[start:] = [column[i] for i in order]


@dataclass(frozen=True)
class ReadOptions:
    """What a source and the run give every read: rows per batch, the Parquet projection, fsspec options."""

    batch_rows: int
    columns: list[str] | None = None
    storage_options: dict = field(default_factory=dict)
