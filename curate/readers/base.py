"""What every reader shares: the format description, the unit of work, and the bad-record collector."""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

BAD_PREFIX = "bad_record:"

LEDGER_SCHEMA = pa.schema([
    ("id", pa.string()),
    ("source", pa.string()),
    ("stage", pa.string()),
    ("reason", pa.string()),
    ("detail", pa.string()),
])


@dataclass(frozen=True)
class Format:
    """How a native dataset format maps onto our document row (`id`, `text`, the source's other columns).

    `id` is the source's own id field (None: make `{source}/{relative file}/{row}`); `url` is a field
    (dotted path allowed for JSON) copied to a `url` column; `promote` lists JSON fields kept as typed
    columns (the rest of a JSON record goes to a `meta` JSON string). Parquet keeps every column natively.
    """

    name: str
    kind: str  # "jsonl" | "parquet" | "rpv2"
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

    @property
    def id_prefix(self) -> str:
        return f"{self.source}/{self.relative}"


@dataclass
class BadRecords:
    """Collects rejected records so they reach the ledger with a reason and where they were found."""

    source: str
    relative: str
    ids: list = field(default_factory=list)
    reasons: list = field(default_factory=list)
    details: list = field(default_factory=list)

    def add(self, record_id: str, kind: str, where: str, message: str) -> None:
        self.ids.append(record_id)
        self.reasons.append(BAD_PREFIX + kind)
        self.details.append(f"{self.relative} {where}: {message}"[:500])

    def __len__(self) -> int:
        return len(self.ids)

    def table(self, stage: str) -> pa.Table:
        n = len(self.ids)
        return pa.table([pa.array(self.ids, pa.string()), pa.array([self.source] * n, pa.string()),
                         pa.array([stage] * n, pa.string()), pa.array(self.reasons, pa.string()),
                         pa.array(self.details, pa.string())], schema=LEDGER_SCHEMA)

    def counts(self) -> dict:
        out: dict = {}
        for r in self.reasons:
            out[r] = out.get(r, 0) + 1
        return out
