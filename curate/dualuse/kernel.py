"""The compiled blocklist scan: UTF-8 Arrow buffers in, distinct terms per document out.

Self-contained on purpose (numba's cache does not track edits in other modules).

One pass per document over its UTF-8 bytes: decode a code point, fold it to one
class (or an expansion of two or three, ``"ß"`` -> ``"ss"``), step the
automaton of :mod:`.automaton` (one load from a row on the hot path; chain
states and rare classes inline below, since a call per character costs more
than the step). A document stops early once ``stop_at``
distinct terms have been seen. Distinct terms are tracked with one stamp per
term (the last document that saw it), so nothing is cleared between documents.

Bytes that are not valid UTF-8 (Arrow validates strings, so only unchecked
buffers have them) decode as U+FFFD, one byte at a time.
"""

from __future__ import annotations

import numba as nb
import numpy as np

# Automaton.info: four int32 per state (copied from .automaton, whose docstring explains them)
_ROW, _LABEL, _FAIL, _NEXT = 0, 1, 2, 3

_MISSING = -(2**31)


@nb.njit(cache=True, nogil=True)
def _rare_edge(s, c, n_states, rare_keys, rare_next):
    """The trie edge of state ``s`` (one with a row) on rare class ``c``, or _MISSING."""
    key = np.int64(c) * n_states + s
    k = np.searchsorted(rare_keys, key)
    if k < len(rare_keys) and rare_keys[k] == key:
        return rare_next[k]
    return _MISSING


@nb.njit(cache=True, nogil=True)
def scan_kernel(data, offsets, valid, classes, exp_offsets, exp_classes, delta, n_dense, info, row_state,
                rare_keys, rare_next, first_out, out_link, term_at, max_outputs, stop_at,
                first_doc, counts, seen, pair_docs, pair_terms, n_pairs, record):
    """Distinct terms per document, from document ``first_doc`` on.

    data: uint8 UTF-8 bytes; offsets: int64 (n + 1); valid: bool (n).
    stop_at: a document stops once it has this many distinct terms.
    counts (int32, n): written per document, ``min(distinct terms, stop_at)``.
    seen (int64, one per term, initially -1): the last document that saw the term.
    record: also append (document, term) to pair_docs/pair_terms from ``n_pairs``
    on, first-seen order within a document. When they are full the document
    being read is rolled back and ``(that document, pairs before it)`` is
    returned: grow the buffers and call again from there. Otherwise returns
    ``(n, pairs)``.

    (The buffers are never reallocated in here: an array rebound inside the loop
    makes numba refcount it on every iteration, several times slower.)
    """
    n = len(offsets) - 1
    cap = len(pair_terms)
    n_states = len(first_out)
    for d in range(first_doc, n):
        counts[d] = 0
        if not valid[d]:
            continue
        i = offsets[d]
        end = offsets[d + 1]
        h = 0  # the root's handle
        cnt = 0
        doc_pairs = n_pairs
        pend = 0  # pending classes of an expansion: exp_classes[pend:pend_end]
        pend_end = 0
        while True:
            if pend < pend_end:
                c = exp_classes[pend]
                pend += 1
            elif i < end:
                b = np.int32(data[i])
                if b < 0x80:
                    cp = b
                    i += 1
                elif b < 0xC2:
                    cp = 0xFFFD
                    i += 1
                elif b < 0xE0:
                    if i + 1 < end and (data[i + 1] & 0xC0) == 0x80:
                        cp = ((b & 0x1F) << 6) | (np.int32(data[i + 1]) & 0x3F)
                        i += 2
                    else:
                        cp = 0xFFFD
                        i += 1
                elif b < 0xF0:
                    if i + 2 < end and (data[i + 1] & 0xC0) == 0x80 and (data[i + 2] & 0xC0) == 0x80:
                        cp = (((b & 0x0F) << 12) | ((np.int32(data[i + 1]) & 0x3F) << 6)
                              | (np.int32(data[i + 2]) & 0x3F))
                        i += 3
                    else:
                        cp = 0xFFFD
                        i += 1
                elif b < 0xF5:
                    if (i + 3 < end and (data[i + 1] & 0xC0) == 0x80 and (data[i + 2] & 0xC0) == 0x80
                            and (data[i + 3] & 0xC0) == 0x80):
                        cp = (((b & 0x07) << 18) | ((np.int32(data[i + 1]) & 0x3F) << 12)
                              | ((np.int32(data[i + 2]) & 0x3F) << 6) | (np.int32(data[i + 3]) & 0x3F))
                        i += 4
                        if cp > 0x10FFFF:
                            cp = 0xFFFD
                    else:
                        cp = 0xFFFD
                        i += 1
                else:
                    cp = 0xFFFD
                    i += 1
                c = classes[cp]
                if c < 0:
                    pend = exp_offsets[-c - 1]
                    pend_end = exp_offsets[-c]
                    c = exp_classes[pend]
                    pend += 1
            else:
                break
            if h >= 0 and c < n_dense:  # the hot path: a row
                h = delta[h + c]
            else:  # a chain state, a state that ends terms, or a rare class

                if h < 0:
                    s = -h - 1
                else:
                    s = row_state[h // n_dense]
                while True:
                    base = 4 * s
                    row = info[base + _ROW]
                    if row >= 0:
                        if c < n_dense:
                            h = delta[row * n_dense + c]
                            break
                        h = _rare_edge(s, c, n_states, rare_keys, rare_next)
                        if h != _MISSING:
                            break
                        if s == 0:
                            h = 0
                            break
                    elif info[base + _LABEL] == c:
                        h = info[base + _NEXT]
                        break
                    s = info[base + _FAIL]
            if h < 0:
                o = first_out[-h - 1]
                if o >= 0:  # the state ends at least one term
                    if record and n_pairs + max_outputs > cap:
                        for j in range(doc_pairs, n_pairs):  # roll the document back
                            seen[pair_terms[j]] = -1
                        return d, doc_pairs
                    while o >= 0:
                        t = term_at[o]
                        if seen[t] != d:
                            seen[t] = d
                            cnt += 1
                            if record:
                                pair_docs[n_pairs] = d
                                pair_terms[n_pairs] = t
                                n_pairs += 1
                        o = out_link[o]
                    if cnt >= stop_at:
                        break
        counts[d] = min(cnt, stop_at)
    return n, n_pairs
