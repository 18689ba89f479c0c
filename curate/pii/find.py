"""Find the spans to replace in a batch of texts: RE2 prefilters over the whole Arrow column first (pyarrow,
no Python per document), then the precise patterns and exceptions only on the candidate documents.

Offsets are in code points (Python `text[start:end]`, DuckDB `substring(text, start + 1, end - start)`), into
the text as the step saw it. Spans never overlap: the one that starts first wins, at the same start the kind
listed first. Each span's placeholder is chosen by the sha256 of the original, so a run is reproducible and the
same address gets the same placeholder everywhere.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.pii.patterns import Kind

SPANS = pa.schema([("row", pa.int64()), ("kind", pa.string()), ("start", pa.int64()), ("end", pa.int64()),
                   ("placeholder", pa.string()), ("original_sha256", pa.string()), ("original", pa.string())])


_NON_SPACE = re.compile(r"\S*")


def matches(kind: Kind, text: str):
    """The kind's matches in `text`, as `kind.pattern.finditer` gives them; with an anchor, the pattern only runs
    on a window around each anchor hit (lookbehinds still see the text before the window)."""
    if kind.anchor is None:
        yield from kind.pattern.finditer(text)
        return
    at = 0
    for hit in kind.anchor.finditer(text):
        p = hit.start()
        if p < at:
            continue
        lo, hi = max(at, p - kind.before), _NON_SPACE.match(text, p).end() if kind.after is None else min(len(text), p + kind.after)
        m = kind.pattern.search(text, lo, hi)
        if m is not None and m.end() == hi < len(text) and kind.after is not None:
            m = kind.pattern.search(text, lo)   # the fixed window cut it: look at the rest of the text
        if m is not None and m.start() <= p < m.end():
            yield m
            at = m.end()


def candidates(texts: pa.Array, kinds: list[Kind]) -> tuple[np.ndarray, list[np.ndarray]]:
    """The rows any kind's precise pattern may match (one RE2 pass over the batch for all kinds), and for each
    kind which of those rows it may match (RE2 again, on the candidates only). A kind without a prefilter
    makes every row a candidate."""
    if not kinds:
        return np.array([], np.int64), []
    if any(k.prefilter is None for k in kinds):
        rows = np.arange(len(texts))
    else:
        rows = np.flatnonzero(_matches(texts, "|".join(f"(?:{k.prefilter})" for k in kinds)))
    subset = texts.take(pa.array(rows, pa.int64()))
    if len(kinds) == 1 and kinds[0].prefilter is not None:
        return rows, [np.ones(len(rows), bool)]
    return rows, [np.ones(len(rows), bool) if k.prefilter is None or not k.own_pass else _matches(subset, k.prefilter) for k in kinds]


def _matches(texts: pa.Array, regex: str) -> np.ndarray:
    return pc.fill_null(pc.match_substring_regex(texts, regex), False).to_numpy(zero_copy_only=False)


def find_spans(texts: pa.Array, kinds: list[Kind]) -> pa.Table:
    """Every span to replace in `texts`, as rows of SPANS (sorted by row, then start)."""
    texts = texts.combine_chunks() if isinstance(texts, pa.ChunkedArray) else texts
    rows, masks = candidates(texts, kinds)
    out: dict[str, list] = {f.name: [] for f in SPANS}
    for i, (row, text) in enumerate(zip(rows.tolist(), texts.take(pa.array(rows, pa.int64())).to_pylist())):
        found = []
        for rank, (kind, mask) in enumerate(zip(kinds, masks)):
            if mask[i]:
                found += [(m.start(), rank, m.end(), m.group(0)) for m in matches(kind, text)
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
