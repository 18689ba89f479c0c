"""Find the spans to replace in a batch of texts: RE2 prefilters over the whole Arrow column first (pyarrow,
no Python per document), then the precise patterns and exceptions only on the candidate documents.

Offsets are in code points (Python `text[start:end]`, DuckDB `substring(text, start + 1, end - start)`), into
the text as the step saw it. Spans never overlap: the one that starts first wins, at the same start the kind
listed first. Each span's placeholder is chosen by the sha256 of the original, so a run is reproducible and the
same address gets the same placeholder everywhere.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.pii.patterns import Kind

SPANS = pa.schema([("row", pa.int64()), ("kind", pa.string()), ("start", pa.int64()), ("end", pa.int64()),
                   ("placeholder", pa.string()), ("original_sha256", pa.string()), ("original", pa.string())])


def candidates(texts: pa.Array, kind: Kind) -> np.ndarray:
    """Which texts the kind's precise pattern may match (all of them when it has no prefilter)."""
    if kind.prefilter is None:
        return np.ones(len(texts), bool)
    return pc.fill_null(pc.match_substring_regex(texts, kind.prefilter), False).to_numpy(zero_copy_only=False)


def find_spans(texts: pa.Array, kinds: list[Kind]) -> pa.Table:
    """Every span to replace in `texts`, as rows of SPANS (sorted by row, then start)."""
    texts = texts.combine_chunks() if isinstance(texts, pa.ChunkedArray) else texts
    masks = [candidates(texts, k) for k in kinds]
    rows = np.flatnonzero(np.logical_or.reduce(masks)) if masks else np.array([], np.int64)
    out: dict[str, list] = {f.name: [] for f in SPANS}
    for row, text in zip(rows.tolist(), texts.take(pa.array(rows, pa.int64())).to_pylist()):
        found = []
        for rank, (kind, mask) in enumerate(zip(kinds, masks)):
            if mask[row]:
                found += [(m.start(), rank, m.end(), m.group(0)) for m in kind.pattern.finditer(text)
                          if m.end() > m.start() and m.group(0) not in kind.placeholders and (kind.accept is None or kind.accept(text, m))]
        at = 0
        for start, rank, end, original in sorted(found):
            if start < at:
                continue   # overlaps a span already taken
            at = end
            digest = hashlib.sha256(original.encode("utf-8", "surrogatepass")).digest()
            choices = kinds[rank].placeholders
            for name, value in (("row", row), ("kind", kinds[rank].name), ("start", start), ("end", end),
                                ("placeholder", choices[int.from_bytes(digest[:8], "big") % len(choices)]),
                                ("original_sha256", digest.hex()), ("original", original)):
                out[name].append(value)
    return pa.table(out, schema=SPANS)
