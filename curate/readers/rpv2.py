"""RedPajama-V2 reader: CCNet documents joined, line by line, with their `quality_signals` file by id.

Layout: `documents/<snapshot>/<shard>/<lang>_<bucket>.json.gz` and
`quality_signals/<same key>.signals.json.gz`; the document id is `<snapshot>/<shard>/<lang>_<bucket>.json.gz/<row>`.
Both files are in the same row order, so they are streamed together and each pair is checked by id; the
signals are kept as a `quality_signals` JSON column for the signals stage to use. Tail buckets ship no
signals file: their `quality_signals` is null.
"""

from __future__ import annotations

from typing import Iterator

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from curate.io.fs import exists, open_input, printable
from curate.io.lines import iter_lines
from curate.readers.base import BadRecords, Format, ReadOptions, ReadTask, register
from curate.readers.jsonl import JsonlReader, output_schema


def document_key(path: str) -> str:
    """`.../documents/2023-06/0000/en_head.json.gz` -> `2023-06/0000/en_head.json.gz`."""
    marker = "/documents/"
    if marker in path:
        return path.split(marker, 1)[1]
    return "/".join(path.rsplit("/", 3)[-3:])


def signals_path(path: str) -> str:
    head, key = path.rsplit("/documents/", 1) if "/documents/" in path else (path.rsplit("/", 4)[0], document_key(path))
    return f"{head}/quality_signals/{key.removesuffix('.json.gz')}.signals.json.gz"


def _signals(path: str, storage_options: dict) -> Iterator[tuple[str, bytes]]:
    with open_input(path, storage_options) as handle:
        result: dict = {}
        for _, line in iter_lines(handle, result):
            obj = orjson.loads(line)
            yield str(obj.get("id")), orjson.dumps(obj.get("quality_signals"))
        if result.get("truncation"):
            raise ValueError(f"{path}: {result['truncation'].cause}")


def with_signals(table: pa.Table, source: str, signals: Iterator[tuple[str, bytes]] | None, sig_path: str) -> pa.Table:
    """Documents whose positional ids `<source>/<key>/<line>` become RPv2's own `<key>/<line>`, with their
    `quality_signals` (null without a signals file). The signals file may hold lines for records that are
    not documents (a blank text): they are passed over."""
    ids = pc.utf8_slice_codeunits(table.column("id"), len(source) + 1)
    table = table.set_column(0, "id", ids)
    values = None
    if signals is not None:
        values = []
        for doc_id in ids.to_pylist():
            for sig_id, payload in signals:
                if sig_id == doc_id:
                    values.append(payload.decode())
                    break
            else:
                raise ValueError(f"{sig_path}: no quality signals for document {doc_id}")
    return table.append_column("quality_signals", pa.array(values if values is not None else [None] * len(ids), pa.string()))


@register
class Rpv2Reader(JsonlReader):
    """RedPajama-V2: one task per document file (its signals file is streamed beside it). Its records are
    JSON Lines (`read_file` is JSON Lines'); its documents are the base's with their signals attached."""

    kind = "rpv2"
    formats = (
        Format("rpv2", "rpv2", text="raw_content", id=None, url="url",
               promote=(("language", pa.string()), ("language_score", pa.float64()), ("perplexity", pa.float64()),
                        ("bucket", pa.string()), ("length", pa.int64()), ("nlines", pa.int64()),
                        ("original_length", pa.int64()), ("original_nlines", pa.int64()), ("source_domain", pa.string()),
                        ("digest", pa.string()), ("date_download", pa.string())),
               doc="RedPajama-V2 documents/<snapshot>/<shard>/<lang>_<bucket>.json.gz joined with quality_signals"),
    )

    def plan(self, whole: ReadTask, fmt: Format, storage_options: dict, target: int) -> list[ReadTask]:
        return [whole]

    def schema(self, fmt: Format) -> pa.Schema:
        return output_schema(fmt)

    def read(self, task: ReadTask, fmt: Format, handle, options: ReadOptions, bad: BadRecords, stats: dict) -> Iterator[pa.Table]:
        """The base's documents, their positional ids made from the document key (`<source>/<key>/<line>`, as
        the ledger names a bad line), then renamed and joined with the signals (those of kept documents only)."""
        sig_path = signals_path(task.path)
        signals = _signals(sig_path, options.storage_options) if exists(sig_path) else None
        keyed = ReadTask(task.source, task.path, printable(document_key(task.path)), task.shard, task.size)
        for table in super().read(keyed, fmt, handle, options, bad, stats):
            yield with_signals(table, task.source, signals, sig_path)
