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

from curate.io.fs import exists, open_input, printable
from curate.io.lines import iter_lines
from curate.readers.base import BadRecords, Format, ReadOptions, Reader, ReadTask, register
from curate.readers.jsonl import output_schema, read_jsonl


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


def read_rpv2(task: ReadTask, fmt: Format, handle, batch_rows: int, bad: BadRecords, stats: dict,
              storage_options: dict) -> Iterator[pa.Table]:
    key = document_key(task.path)
    sig_path = signals_path(task.path)
    signals = _signals(sig_path, storage_options) if exists(sig_path) else None
    # RPv2 ids are "<key>/<row>": reuse the JSONL reader with that prefix, then attach the signals.
    keyed = ReadTask(task.source, task.path, printable(key), task.shard, task.size)
    for table in read_jsonl(keyed, fmt, handle, batch_rows, bad, stats):
        ids = [i.removeprefix(f"{task.source}/") for i in table.column("id").to_pylist()]
        table = table.set_column(0, "id", pa.array(ids, pa.string()))
        values = None
        if signals is not None:
            values = []
            for doc_id in ids:
                for sig_id, payload in signals:
                    if sig_id == doc_id:
                        values.append(payload.decode())
                        break
                else:
                    raise ValueError(f"{sig_path}: no quality signals for document {doc_id}")
        table = table.append_column("quality_signals", pa.array(values if values is not None else [None] * len(ids), pa.string()))
        yield table


@register
class Rpv2Reader(Reader):
    """RedPajama-V2: one task per document file (its signals file is streamed beside it)."""

    kind = "rpv2"
    formats = (
        Format("rpv2", "rpv2", text="raw_content", id=None, url="url",
               promote=(("language", pa.string()), ("language_score", pa.float64()), ("perplexity", pa.float64()),
                        ("bucket", pa.string()), ("length", pa.int64()), ("nlines", pa.int64()),
                        ("original_length", pa.int64()), ("original_nlines", pa.int64()), ("source_domain", pa.string()),
                        ("digest", pa.string()), ("date_download", pa.string())),
               doc="RedPajama-V2 documents/<snapshot>/<shard>/<lang>_<bucket>.json.gz joined with quality_signals"),
    )

    def schema(self, fmt: Format) -> pa.Schema:
        return output_schema(fmt)

    def read(self, task: ReadTask, fmt: Format, handle, options: ReadOptions, bad: BadRecords, stats: dict) -> Iterator[pa.Table]:
        return read_rpv2(task, fmt, handle, options.batch_rows, bad, stats, options.storage_options)
