"""`curate trace RUN PREFIX --sequence K | --token N`: the documents behind packed tokens, from the document maps a
pack step writes beside its outputs (curate/tokens/docmap.py).

`DocumentMap` is the small Python side for a trainer's logging hook: open it once on a map file (or a prefix and a
format), then `sequence(k)` or `token(n)` returns the documents (source, id, token range) without reading the rest.
"""

from __future__ import annotations

import json
import os

from curate.errors import UsageError
from curate.io import fs

KEYS = ("sequence", "chunk", "token")


class DocumentMap:
    """A packed output's document map: which documents a sequence (or a flat token position) holds.

    `DocumentMap("RUN/pack/web")` opens the Megatron map of that prefix (`format="datatrove"`: the `.ds` one), or
    pass the map file itself. Lookups read only the row groups whose statistics can hold the key.
    """

    def __init__(self, path: str, format: str = "megatron"):
        import pyarrow.dataset as ds

        from curate.tokens.docmap import SCHEMA
        from curate.tokens.formats import get, names

        if not path.endswith(".parquet"):
            if format not in names():
                raise UsageError(f"--format {format}: expected one of {', '.join(names())}")
            path += get(format).map_suffix
        if not fs.exists(path):
            raise UsageError(f"{path}: no document map (a pack step of this curate version writes one beside each output)")
        self.path = path
        filesystem, stripped = fs.filesystem(path)
        self._dataset = ds.dataset(stripped, filesystem=filesystem, format="parquet", schema=SCHEMA)

    def _where(self, expression) -> list[dict]:
        """Rows matching `expression`, by token, with the ends of their ranges."""
        rows = self._dataset.to_table(filter=expression).sort_by("token").to_pylist()
        return [{**r, "end": r["offset"] + r["length"], "doc_end": r["doc_offset"] + r["length"]} for r in rows]

    def sequence(self, k: int) -> list[dict]:
        """The chunks of packed sequence `k` (Megatron: `.idx` document k; datatrove: `.ds.index` entry k), in order."""
        return self._where(_field("sequence") == int(k))

    def chunk(self, k: int) -> list[dict]:
        """The chunk that is `.idx` sequence `k`."""
        return self._where(_field("chunk") == int(k))

    def token(self, n: int) -> list[dict]:
        """The chunk holding flat token position `n` of the `.bin` / `.ds` stream ([] past the end)."""
        n = int(n)
        near = self._where((_field("token") <= n) & (_field("token") > n - self._longest()))
        return [r for r in near if r["token"] <= n < r["token"] + r["length"]]

    def _longest(self) -> int:
        """The longest chunk (a bound on how far before `n` its chunk can start), from the file's statistics."""
        import pyarrow.parquet as pq

        from curate.tokens.docmap import SCHEMA

        meta = pq.ParquetFile(self._dataset.files[0], filesystem=self._dataset.filesystem).metadata
        column = SCHEMA.get_field_index("length")
        found = [meta.row_group(g).column(column).statistics for g in range(meta.num_row_groups)]
        return max([int(s.max) for s in found if s is not None and s.has_min_max] or [2**62]) + 1

    def rows(self) -> int:
        return self._dataset.count_rows()


def _field(name: str):
    import pyarrow.dataset as ds

    return ds.field(name)


def resolve(run: str, prefix: str) -> str:
    """A prefix as given (`pack/web`, relative to the run, or a path) as a path to the packed files."""
    inside = fs.join(run, prefix) if "://" not in prefix and not os.path.isabs(prefix) else prefix
    return inside if fs.glob(inside + ".*") else prefix


def trace(run: str, prefix: str, *, sequence: int | None = None, token: int | None = None, chunk: int | None = None,
          format: str = "megatron", snippet: int = 80) -> list[dict]:
    """The documents behind one sequence, chunk or flat token of a packed output, each with the text of its tokens
    (decoded with the run's tokenizer, at most `snippet` characters)."""
    if sum(x is not None for x in (sequence, token, chunk)) != 1:
        raise UsageError("curate trace: give exactly one of --sequence K, --token N, --chunk K")
    path = resolve(run, prefix)
    dmap = DocumentMap(path, format)
    rows = dmap.sequence(sequence) if sequence is not None else dmap.chunk(chunk) if chunk is not None else dmap.token(token)
    if not rows:
        what = f"sequence {sequence}" if sequence is not None else f"chunk {chunk}" if chunk is not None else f"token {token}"
        raise UsageError(f"{prefix}: no {what} (the map holds {dmap.rows():,} chunks)")
    ids = read_tokens(path, format, rows)
    decode = _decoder(run, path)
    for row, got in zip(rows, ids):
        row["tokens"] = got.tolist()
        if decode is not None:
            text = decode(got)
            row["text"] = text if len(text) <= snippet else text[:snippet] + "..."
    return rows


def read_tokens(path: str, format: str, rows: list[dict]) -> list:
    """The ids of each row's token range, read from the `.bin` (Megatron) or `.ds` (datatrove) stream."""
    import numpy as np

    if format == "megatron":
        from curate.tokens.megatron import CODE_DTYPES

        head = _head(path + ".idx", 18)
        dtype, data = np.dtype(CODE_DTYPES[head[17]]).newbyteorder("<"), path + ".bin"
    else:
        size = int(_head(path + ".ds.metadata", 4096).decode().splitlines()[0].rsplit("|", 1)[1])
        dtype, data = np.dtype("<u2" if size == 2 else "<u4"), path + ".ds"
    out = []
    filesystem, stripped = fs.filesystem(data)
    with filesystem.open(stripped, "rb") as f:
        for r in rows:
            f.seek(r["token"] * dtype.itemsize)
            out.append(np.frombuffer(f.read(r["length"] * dtype.itemsize), dtype))
    return out


def _head(path: str, n: int) -> bytes:
    filesystem, stripped = fs.filesystem(path)
    with filesystem.open(stripped, "rb") as f:
        return f.read(n)


def _decoder(run: str, path: str):
    """The decode of the tokenizer that made `path`'s tokens: the tokenize step its pack step read (the run's last
    tokenize step for a pack recorded before packs named theirs), or None when it cannot be loaded here."""
    from curate.rundir import PackRecord, RunDir, TokenizerRecord
    from curate.rundir.views import tokenize_steps

    rundir, steps = RunDir(run), tokenize_steps(RunDir(run))
    root = run.rstrip("/") + "/"
    pack = rundir.find_record(path[len(root):].split("/", 1)[0], PackRecord) if path.startswith(root) else None
    step = pack.tokens if pack is not None and pack.tokens else (steps[-1] if steps else None)
    if step is None:
        return None
    try:
        from curate.tokens.tokenizer import load_tokenizer

        return load_tokenizer(rundir.record(step, TokenizerRecord).spec).decode
    except Exception:  # noqa: BLE001 - a tokenizer that is not here (a Hub name offline): ids and ranges still print
        return None


def render(rows: list[dict], as_json: bool = False) -> str:
    if as_json:
        return json.dumps([{k: v for k, v in r.items() if k != "tokens"} for r in rows], indent=1)
    lines = []
    for r in rows:
        lines.append(f"sequence {r['sequence']} tokens {r['offset']}-{r['end']} (flat {r['token']}, chunk {r['chunk']}): "
                     f"{r['source']} {r['id']} tokens {r['doc_offset']}-{r['doc_end']} of the document"
                     + (f", copy {r['copy']}" if r["copy"] else ""))
        if "text" in r:
            lines.append("    " + json.dumps(r["text"], ensure_ascii=False))
    return "\n".join(lines)


def add_parser(sub):
    """`curate trace`: its arguments and its function (cli.py adds it to the command)."""
    import argparse

    t = sub.add_parser("trace", help="the documents behind a packed sequence or token (the pack step's document maps)",
                       description="List the documents in one packed sequence (or holding one flat token position) of a\n"
                                   "pack step's output, with each one's token range and the text of those tokens.",
                       epilog="examples:\n  curate trace runs/zyda2 pack/dclm --sequence 1234\n"
                              "  curate trace runs/zyda2 pack/dclm --token 5000000 --format datatrove --json\n"
                              "in Python (a trainer's hook): curate.trace.DocumentMap('runs/zyda2/pack/dclm').sequence(1234)",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    t.add_argument("run", help="run directory")
    t.add_argument("prefix", help="a packed output, relative to the run (pack/dclm: the pack step, then the source)")
    t.add_argument("--sequence", type=int, metavar="K", help="packed sequence K (Megatron: .idx document K; "
                   "datatrove: .ds.index entry K)")
    t.add_argument("--token", type=int, metavar="N", help="flat token position N of the .bin (or .ds) stream")
    t.add_argument("--chunk", type=int, metavar="K", help="Megatron: .idx sequence K")
    t.add_argument("--format", default="megatron", help="whose map: megatron (default) or datatrove")
    t.add_argument("--snippet", type=int, default=80, metavar="CHARS", help="text shown per document (default 80)")
    t.add_argument("--json", action="store_true", help="JSON for tools")
    t.set_defaults(answer=answer)
    return t


def answer(args) -> str:
    """What `curate trace` prints (cli.py checks the run directory and prints it)."""
    run = args.run if "://" in args.run else os.path.abspath(args.run)
    return render(trace(run, args.prefix, sequence=args.sequence, token=args.token, chunk=args.chunk, format=args.format,
                        snippet=args.snippet), args.json)
