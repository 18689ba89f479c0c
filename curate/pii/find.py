"""Find the spans to replace in a batch of texts: RE2 prefilters over the whole Arrow column first (pyarrow,
no Python per document), then the precise patterns and exceptions only on the candidate documents.

Offsets are in code points (Python `text[start:end]`, DuckDB `substring(text, start + 1, end - start)`), into
the text as the step saw it. Spans never overlap: the one that starts first wins, at the same start the kind
listed first. Each span's placeholder is chosen by the sha256 of the original, so a run is reproducible and the
same address gets the same placeholder everywhere.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.pii.kind import Kind
from curate.pii.user import PatternTimeout, within_budget

SPANS = pa.schema([("row", pa.int64()), ("kind", pa.string()), ("start", pa.int64()), ("end", pa.int64()),
                   ("placeholder", pa.string()), ("original_sha256", pa.string()), ("original", pa.string())])


class Hit:
    """A match found in a text with its invisible characters skipped: offsets and `group(0)` are the original
    text's (the span covers the skipped characters), the other groups those of the visible text."""

    def __init__(self, text: str, start: int, end: int, m: re.Match):
        self._span, self._text, self._m = (start, end), text, m

    def start(self) -> int:
        return self._span[0]

    def end(self) -> int:
        return self._span[1]

    def span(self) -> tuple[int, int]:
        return self._span

    def group(self, i: int = 0) -> str:
        return self._text[self._span[0]:self._span[1]] if i == 0 else self._m.group(i)


def matches(kind: Kind, text: str):
    """The kind's matches in `text`, as `kind.pattern.finditer` gives them. With an anchor, the pattern only runs
    in a window around each anchor hit, `kind.before` characters before it to `kind.after` after it (lookbehinds
    still see the text before the window): the work per hit is bounded, so a scan is linear in the text."""
    if kind.timeout is not None:
        yield from within_budget(kind, text)
        return
    if kind.anchor is None:
        yield from kind.pattern.finditer(text)   # a bounded width (patterns.width): each try reads a bounded stretch
        return
    at, n = 0, len(text)
    for hit in kind.anchor.finditer(text):
        p = hit.start()
        if p < at:
            continue
        if kind.invisible is not None and kind.invisible.search(text, max(at, p - 2 * kind.before), min(n, p + 2 * kind.after)):
            m = _search_visible(kind, text, p, at)
        else:
            m = _search(kind, text, max(at, p - kind.before), p, min(n, p + kind.after))
        if m is not None and m.start() <= p < m.end():
            yield m
            at = m.end()


def _search(kind: Kind, text: str, lo: int, p: int, hi: int):
    """The first match in text[lo:hi] (lookbehinds see before `lo`); with `kind.lead`, the one match that can hold
    the anchor hit at `p`: it starts where the leftmost lead reaching `p` starts (tried there alone, not at every
    place in the window)."""
    if kind.lead is None:
        return kind.pattern.search(text, lo, hi)
    lead = kind.lead.search(text, lo, p)
    return None if lead is None else kind.pattern.match(text, lead.start(), hi)


@functools.cache
def _ending(run: re.Pattern) -> re.Pattern:
    return re.compile(rf"(?:{run.pattern})\Z")


def _search_visible(kind: Kind, text: str, p: int, at: int):
    """`kind.pattern` in the window around `p` with the invisible characters taken out, as a Hit on the original
    text: the window is the run of characters a match can hold around `p`, within twice the usual window (so
    that invisible characters do not shorten it)."""
    lo = _ending(kind.run).search(text, max(at, p - 2 * kind.before), p).start()   # where the run up to p starts
    window = text[lo:kind.run.match(text, p + 1, min(len(text), p + 2 * kind.after)).end()]
    gone = [g.start() for g in kind.invisible.finditer(window)]   # window offsets of the invisible characters
    sits = [g - j for j, g in enumerate(gone)]                     # the visible index each one sits before
    visible, q = kind.invisible.sub("", window), p - lo - bisect.bisect_left(gone, p - lo)
    m = _search(kind, visible, max(0, q - kind.before), q, min(len(visible), q + kind.after))
    if m is None:
        return None
    start, last = (lo + v + bisect.bisect_right(sits, v) for v in (m.start(), m.end() - 1))
    return Hit(text, start, last + 1, m)


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


def find_spans(texts: pa.Array, kinds: list[Kind], timed_out: list | None = None) -> pa.Table:
    """Every span to replace in `texts`, as rows of SPANS (sorted by row, then start). A document on which a
    pattern of yours runs past its budget gets no span: it is added to `timed_out` as (row, kind, seconds) for the
    caller to remove, and without `timed_out` PatternTimeout is raised (never a document silently left as it is)."""
    texts = texts.combine_chunks() if isinstance(texts, pa.ChunkedArray) else texts
    rows, masks = candidates(texts, kinds)
    out: dict[str, list] = {f.name: [] for f in SPANS}
    for i, (row, text) in enumerate(zip(rows.tolist(), texts.take(pa.array(rows, pa.int64())).to_pylist())):
        found = []
        try:
            for rank, (kind, mask) in enumerate(zip(kinds, masks)):
                if mask[i]:
                    found += [(m.start(), rank, m.end(), m.group(0)) for m in matches(kind, text)
                              if m.end() > m.start() and m.group(0) not in kind.placeholders and (kind.accept is None or kind.accept(text, m))]
        except PatternTimeout as exc:
            if timed_out is None:
                raise
            timed_out.append((row, exc.kind, exc.seconds))
            continue
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
