"""Stage 1 of the Deep Ignorance dual-use filter: a case-insensitive blocklist.

A document whose case-folded text contains at least ``escalate_at`` (default 2)
*distinct* terms is escalated to the classifier; 0 or 1 term passes unreviewed.

Semantics (those of ``sum(term in text.casefold() for term in terms)``):

- terms and texts are compared after ``str.casefold`` (full Unicode folding:
  ``"STRASSE"``, ``"Straße"`` and ``"strasse"`` all contain the term ``"strasse"``,
  and the term ``"straße"`` is the term ``"strasse"``);
- plain substring match, no word boundaries (``"bee"`` is in ``"beekeeping"``),
  no whitespace normalisation (``"hive tool"`` is not in ``"hive\\ntool"``);
- a term counts once per document however often it occurs; overlapping terms
  all count (``"bee"``, ``"hive"`` and ``"beehive"`` are three terms in ``"beehive"``);
- a null or empty text has no terms.

One pass over each document's UTF-8 bytes, straight from the Arrow buffers, in a
compiled Aho-Corasick automaton (:mod:`.automaton`, :mod:`.kernel`): no
per-document or per-term Python. The automaton is built on first use and not
pickled: a :class:`Blocklist` travels to Ray workers as its term list and
rebuilds there once.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import pyarrow as pa

from ..errors import CurateError
from ..io.strings import string_buffers
from .automaton import Automaton, build
from .terms import fingerprint, load_terms, normalise_terms

#: distinct terms that escalate a document to the classifier (Deep Ignorance: 2)
DEFAULT_ESCALATE_AT = 2

_NO_STOP = np.iinfo(np.int32).max


class Blocklist:
    """Distinct blocklist terms per document.

    ``terms`` are normalised (stripped, case-folded, de-duplicated, blanks
    dropped); :attr:`terms` holds them sorted (code point order), and a term's
    index there is its id.
    """

    def __init__(self, terms: Iterable[str]):
        norm = normalise_terms(terms)
        if not norm:
            raise CurateError("blocklist: no terms")
        self.terms: tuple[str, ...] = tuple(sorted(norm))
        self._automaton: Automaton | None = None
        self._terms_array: pa.Array | None = None
        self._fingerprint: str | None = None

    @classmethod
    def from_file(cls, path: str) -> Blocklist:
        """A blocklist from a term file (see :func:`load_terms`)."""
        return cls(load_terms(path))

    def __len__(self) -> int:
        return len(self.terms)

    def __repr__(self) -> str:
        return f"Blocklist({len(self.terms)} terms, {self.fingerprint[:12]})"

    @property
    def fingerprint(self) -> str:
        """sha256 of the normalised term set (and the matching semantics): changes iff results can."""
        if self._fingerprint is None:
            self._fingerprint = fingerprint(self.terms)
        return self._fingerprint

    # Ray and multiprocessing: ship the terms, rebuild the automaton lazily on the other side
    def __getstate__(self) -> dict:
        return {"terms": self.terms}

    def __setstate__(self, state: dict) -> None:
        self.terms = tuple(state["terms"])
        self._automaton = None
        self._terms_array = None
        self._fingerprint = None

    @property
    def automaton(self) -> Automaton:
        """The compiled tables, built on first use (10,000 terms: well under a second)."""
        if self._automaton is None:
            self._automaton = build(list(self.terms))
        return self._automaton

    def count(self, texts, stop_at: int | None = None) -> np.ndarray:
        """Distinct terms in each text (int32), capped at ``stop_at``.

        With ``stop_at`` a document stops being read once it has that many
        distinct terms, so the result is ``min(count, stop_at)``: enough to
        decide ``count >= stop_at`` and cheaper on documents that escalate.
        ``texts``: a string Arrow array or chunked array (``string``,
        ``large_string``, ``string_view``), or a list of ``str``/``None``.
        """
        if stop_at is not None and stop_at < 1:
            raise ValueError(f"stop_at must be at least 1, got {stop_at}")
        stop = _NO_STOP if stop_at is None else int(stop_at)
        parts = [self._run(*chunk, stop, False)[0] for chunk in _chunks(texts)]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)

    def escalate(self, texts, escalate_at: int = DEFAULT_ESCALATE_AT) -> np.ndarray:
        """Boolean per text: at least ``escalate_at`` distinct terms (reads each text only that far)."""
        return self.count(texts, stop_at=escalate_at) >= escalate_at

    def scan(self, texts) -> tuple[np.ndarray, pa.ListArray]:
        """Distinct count (int32) and the distinct matched terms of each text.

        Each list is sorted (code point order of the case-folded terms, i.e. the
        order of :attr:`terms`); a null or empty text gets an empty list. No
        early stop: every text is read to its end.
        """
        counts, lists = [], []
        for chunk in _chunks(texts):
            c, docs, ids = self._run(*chunk, _NO_STOP, True)
            order = np.lexsort((ids, docs))  # docs are already grouped; sort terms within each
            offsets = np.zeros(len(c) + 1, dtype=np.int32)
            np.cumsum(c, out=offsets[1:])
            values = self._term_values().take(pa.array(ids[order]))
            counts.append(c)
            lists.append(pa.ListArray.from_arrays(pa.array(offsets), values))
        if not counts:
            return np.zeros(0, dtype=np.int32), pa.array([], type=pa.list_(pa.string()))
        return np.concatenate(counts), (lists[0] if len(lists) == 1 else pa.concat_arrays(lists))

    def _term_values(self) -> pa.Array:
        if self._terms_array is None:
            self._terms_array = pa.array(self.terms, type=pa.string())
        return self._terms_array

    def _run(self, data, offsets, valid, stop: int, record: bool):
        """(counts, pair docs, pair terms) of one chunk; pairs only when ``record``."""
        from .kernel import scan_kernel

        a = self.automaton
        n = len(offsets) - 1
        counts = np.zeros(n, dtype=np.int32)
        seen = np.full(a.n_terms, -1, dtype=np.int64)
        cap = max(1024, 2 * a.max_outputs, n // 4) if record else 0
        docs = np.empty(cap, dtype=np.int64)
        ids = np.empty(cap, dtype=np.int32)
        doc, n_pairs = 0, 0
        while True:
            doc, n_pairs = scan_kernel(data, offsets, valid, a.classes, a.exp_offsets, a.exp_classes,
                                       a.delta, a.n_dense, a.info, a.row_state, a.rare_keys, a.rare_next,
                                       a.first_out, a.out_link, a.term_at, a.max_outputs, stop, doc, counts,
                                       seen, docs, ids, n_pairs, record)
            if doc >= n:
                return counts, docs[:n_pairs], ids[:n_pairs]
            cap = 2 * cap  # the pair buffers were full at document `doc`: grow, go on from there
            docs = np.concatenate([docs[:n_pairs], np.empty(cap - n_pairs, dtype=np.int64)])
            ids = np.concatenate([ids[:n_pairs], np.empty(cap - n_pairs, dtype=np.int32)])


def _chunks(texts) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(utf-8 bytes, int64 offsets, validity) per chunk, zero-copy where Arrow allows."""
    if isinstance(texts, pa.ChunkedArray):
        for chunk in texts.chunks:
            yield from _chunks(chunk)
        return
    if not isinstance(texts, pa.Array):
        texts = pa.array(texts, type=pa.string())
    yield string_buffers(texts, "blocklist")
