"""The mixture and the packed outputs: the plan (available, chosen tokens, epochs) against the tokens
written, packing density, and how full the packed sequences are.

Plan and outputs come from the manifest (else the mix and pack records). Sequence fill is read from the
Megatron `.idx` files alone (never the `.bin`): with the `chunks` layout a Megatron document is one packed
sequence, so its length is the sum of its chunks. A large index is read in a few windows spread over
the file (at most `MAX_SEQUENCES` sequences per source).
"""

from __future__ import annotations

import struct

import numpy as np

from curate.io import fs
from curate.report.context import RunView
from curate.rundir import MixRecord, PackRecord
from curate.tokens.megatron import MAGIC, VERSION

MAX_SEQUENCES = 200_000
WINDOWS = 4
HEADER = len(MAGIC) + 8 + 1 + 8 + 8   # magic, version, dtype code, sequences, document indices


def plan(run: RunView) -> dict | None:
    manifest = run.manifest or {}
    if manifest.get("mixture", {}).get("sources"):
        m = manifest["mixture"]
        return {"mode": m.get("mode"), "total_tokens": m.get("total_tokens"), "sources": m["sources"], "from": "manifest"}
    for stage in run.stages_of("mix"):
        record = run.dir.find_record(stage, MixRecord)
        if record is None:
            continue
        written = {}
        for pstage in run.stages_of("pack"):
            pack = run.dir.find_record(pstage, PackRecord)
            if pack is not None:
                written = pack.outputs
        sources = {s: {**p, **({"tokens": written[s]["tokens"], "documents": written[s]["documents"]} if s in written else {})}
                   for s, p in record.plan.get("sources", {}).items()}
        return {"mode": record.plan.get("mode"), "total_tokens": record.plan.get("total_tokens"), "sources": sources,
                "from": "mix record"}
    return None


def packing(run: RunView) -> dict | None:
    pack = None
    for stage in run.stages_of("pack"):
        pack = run.dir.find_record(stage, PackRecord) or pack
    if pack is None:
        return None
    info = dict((run.manifest or {}).get("packing") or {})
    outputs = pack.outputs
    if not info:
        tokens = sum(o["tokens"] for o in outputs.values())
        sequences = sum(o["sequences"] for o in outputs.values())
        info = {"method": pack.method, "sequences": sequences,
                "density": tokens / (sequences * pack.seq_len) if sequences else 0.0}
    fill = {}
    if "megatron" in pack.formats:
        for source, out in outputs.items():
            prefix = run.path(out["prefix"])
            if out.get("sequences") and fs.exists(prefix + ".idx"):
                fill[source] = sequence_lengths(prefix, pack.method)
    return {**info, "seq_len": pack.seq_len, "method": pack.method, "formats": pack.formats, "outputs": outputs, "fill": fill}


def sequence_lengths(prefix: str, method: str, limit: int = MAX_SEQUENCES) -> dict:
    """Token lengths of packed sequences from `prefix.idx`: all of them, or `WINDOWS` spread windows."""
    filesystem, path = fs.filesystem(prefix + ".idx")
    with filesystem.open(path + "", "rb") as f:
        head = f.read(HEADER)
        if head[: len(MAGIC)] != MAGIC or struct.unpack_from("<Q", head, len(MAGIC))[0] != VERSION:
            raise ValueError(f"{prefix}.idx is not a Megatron index")
        n, d = struct.unpack_from("<QQ", head, len(MAGIC) + 9)
        lengths_at, docs_at = HEADER, HEADER + 12 * n
        if method == "none":  # one Megatron sequence per document: its length is what there is
            ranges = _windows(n, limit)
            out = [np.frombuffer(_read(f, lengths_at + 4 * a, 4 * (b - a)), "<i4") for a, b in ranges]
            return {"lengths": np.concatenate(out).astype(np.int64), "total": int(n)}
        sequences = d - 1
        out = []
        for a, b in _windows(sequences, limit):
            bounds = np.frombuffer(_read(f, docs_at + 8 * a, 8 * (b - a + 1)), "<i8")
            lo, hi = int(bounds[0]), int(bounds[-1])
            chunk = np.frombuffer(_read(f, lengths_at + 4 * lo, 4 * (hi - lo)), "<i4").astype(np.int64)
            starts = bounds[:-1] - lo
            sums = np.add.reduceat(chunk, starts) if len(chunk) else np.zeros(len(starts), np.int64)
            sums[np.diff(bounds) == 0] = 0
            out.append(sums)
        return {"lengths": np.concatenate(out) if out else np.zeros(0, np.int64), "total": int(sequences)}


def _windows(n: int, limit: int) -> list[tuple[int, int]]:
    if n <= limit:
        return [(0, n)] if n else []
    size = limit // WINDOWS
    starts = [int(i * (n - size) / (WINDOWS - 1)) for i in range(WINDOWS)]
    return [(s, s + size) for s in starts]


def _read(f, offset: int, size: int) -> bytes:
    f.seek(offset)
    data = f.read(size)
    if len(data) != size:
        raise ValueError("a Megatron index is shorter than its header says")
    return data
