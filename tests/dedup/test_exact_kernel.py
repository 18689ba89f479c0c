"""The compiled exact-Jaccard kernels (`curate.dedup.exact_kernel`) against their definitions: the numpy
`exact.shingle_hashes` bit for bit, and a plain Python set Jaccard of the shingle strings; the work bound
(`overlap`) never drops a common value, so no decision moves at the threshold."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from curate.dedup.exact import shingle_hashes
from curate.dedup.exact_kernel import jaccard_pairs, overlap, shingle_sets
from curate.dedup.shingles import Shingling

THRESHOLD = 0.8
SHINGLINGS = [Shingling(), Shingling(n=3), Shingling(n=1), Shingling(n=5, short_docs="skip"), Shingling(n=4, normalize=("lower", "nfkc")),
              Shingling(unit="word", n=2), Shingling(unit="word", n=1), Shingling(unit="word", n=5, short_docs="skip")]


def _texts() -> list[str | None]:
    rng = random.Random(7)
    words = ["alpha", "beta", "ça", "日本語", "z", "😀", "Grüße"]
    out = ["", None, "a", "ab", " ", "a  b\tc\n", "x" * 300, "ab" * 150, "héllo wörld 😀 x", "\u00a0word\u2003space"]
    out += [" ".join(rng.choice(words) for _ in range(rng.randint(0, 80))) for _ in range(120)]
    out.append(" ".join(rng.choice(words) for _ in range(40_000)))   # a very long document
    return out


def _python_jaccard(a: set, b: set) -> float:
    return 1.0 if not a and not b else len(a & b) / len(a | b)


@pytest.mark.parametrize("shingling", SHINGLINGS, ids=str)
def test_sets_equal_the_numpy_definition(shingling):
    texts = _texts()
    values, offsets = shingle_sets(pa.array(texts, pa.string()), shingling)
    for i, t in enumerate(texts):
        assert np.array_equal(values[offsets[i]:offsets[i + 1]], shingle_hashes(t or "", shingling)), repr(t)[:60]


def test_sets_of_a_slice_and_of_large_strings():
    texts = _texts()[:40]
    for arr in (pa.array(texts, pa.string()).slice(5, 20), pa.array(texts[5:25], pa.large_string())):
        values, offsets = shingle_sets(arr, Shingling(n=3))
        for i, t in enumerate(texts[5:25]):
            assert np.array_equal(values[offsets[i]:offsets[i + 1]], shingle_hashes(t or "", Shingling(n=3)))


@pytest.mark.parametrize("shingling", [Shingling(), Shingling(n=2), Shingling(unit="word", n=2)], ids=str)
def test_jaccard_equals_a_python_set_jaccard_of_the_shingle_strings(shingling):
    texts = _texts()
    values, offsets = shingle_sets(pa.array(texts, pa.string()), shingling)
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, len(texts), 600), rng.integers(0, len(texts), 600)
    a[:len(texts)], b[:len(texts)] = np.arange(len(texts)), np.arange(len(texts))[::-1]   # every document, itself included
    got = jaccard_pairs(values, offsets, a, values, offsets, b)
    sets = [set(shingling.shingle_strings(t or "")) for t in texts]
    assert got.tolist() == [_python_jaccard(sets[i], sets[j]) for i, j in zip(a.tolist(), b.tolist())]


def _pairs(sets: list[tuple[list[int], list[int]]]):
    """Two list arrays (values, offsets) with pair i = (sets[i][0], sets[i][1]); the second read-only, as Arrow sends it."""
    def flat(lists):
        offsets = np.zeros(len(lists) + 1, np.int64)
        offsets[1:] = np.cumsum([len(x) for x in lists])
        return np.array([v for x in lists for v in sorted(set(x))], np.uint64), offsets

    (av, ao), (bv, bo) = flat([s for s, _ in sets]), flat([t for _, t in sets])
    bv.setflags(write=False)
    rows = np.arange(len(sets), dtype=np.int64)
    return jaccard_pairs(av, ao, rows, bv, bo, rows)


TOP = (1 << 64) - 1


def test_adversarial_hash_sets():
    """Hash level: empty sets, one value, equal sets, the extreme values, one inside the other, ranges that meet only
    at one end (the work bound cuts them to that end), interleaved."""
    cases = [([], []), ([], [5]), ([7], [7]), ([7], [8]), ([0, TOP], [0, TOP]), ([0], [TOP]), ([TOP], [0, TOP]),
             (list(range(100)), list(range(40, 60))), (list(range(100)), list(range(99, 300))),
             (list(range(0, 200, 2)), list(range(1, 200, 2))), (list(range(0, 200, 2)), list(range(0, 400, 4))),
             (list(range(10)), list(range(10, 20))), ([1, 2, 3, 1000], [500, 1000, 2000])]
    rng = random.Random(11)
    for _ in range(200):
        pool = [rng.randrange(1 << 64) for _ in range(rng.randint(1, 60))]
        cases.append((rng.sample(pool, rng.randint(0, len(pool))), rng.sample(pool, rng.randint(0, len(pool)))))
    got = _pairs(cases)
    assert got.tolist() == [_python_jaccard(set(a), set(b)) for a, b in cases]


def test_the_work_bound_keeps_every_common_value():
    rng = random.Random(5)
    for _ in range(300):
        a = np.array(sorted({rng.randrange(1000) for _ in range(rng.randint(0, 80))}), np.uint64)
        b = np.array(sorted({rng.randrange(1000) for _ in range(rng.randint(0, 80))}), np.uint64)
        a0, a1, b0, b1 = overlap(a, 0, len(a), b, 0, len(b))
        common = set(a.tolist()) & set(b.tolist())
        assert set(a[a0:a1].tolist()) >= common and set(b[b0:b1].tolist()) >= common
        if len(a) and len(b) and a[a0:a1].size:   # nothing outside the range both span
            low, high = max(a[0], b[0]), min(a[-1], b[-1])
            assert a[a0] >= low and a[a1 - 1] <= high and b[b0] >= low and b[b1 - 1] <= high
    a, b = np.arange(10_000, dtype=np.uint64), np.arange(9_999, 20_000, dtype=np.uint64)
    assert overlap(a, 0, len(a), b, 0, len(b)) == (9_999, 10_000, 0, 1)   # meeting at one end: one value each to merge


@pytest.mark.parametrize("inter,union", [(4, 5), (80, 100), (800, 1000), (799, 1000), (801, 1000), (4001, 5000), (3999, 5000),
                                         (12, 15), (11, 15)])
def test_decisions_at_the_threshold(inter, union):
    """Pairs exactly at, just above and just below the threshold: the same value (and so the same decision against
    `threshold`) as the Python set Jaccard; overlap placed at the ranges' ends, where the work bound cuts."""
    extra = union - inter
    a = list(range(inter)) + list(range(1_000_000, 1_000_000 + extra // 2))
    b = list(range(inter)) + list(range(-(extra - extra // 2), 0))
    b = [v % (1 << 64) for v in b]   # the rest of b sorts above every value of a: the bound cuts there
    got = _pairs([(a, b)])[0]
    want = _python_jaccard(set(a), set(b))
    assert got == want == inter / union
    assert (got >= THRESHOLD) == (inter / union >= THRESHOLD)


def test_sorted_unique_on_adversarial_hashes():
    """The bucket sort: all equal, all in one bucket (past 32 values: np.sort finishes it), descending, random, one value,
    buckets of several values out of order."""
    from curate.dedup.exact_kernel import _sorted_unique

    rng = np.random.default_rng(2)
    top = np.uint64(TOP)
    cases = [np.full(500, 7, np.uint64), top - np.arange(300, dtype=np.uint64), np.arange(300, dtype=np.uint64)[::-1].copy(),
             rng.integers(0, TOP, 5000, dtype=np.uint64, endpoint=True), np.array([TOP], np.uint64),
             np.r_[rng.integers(0, 1 << 20, 200).astype(np.uint64), rng.integers(0, 1 << 20, 200).astype(np.uint64)]]
    # buckets of 8 values each in descending order (the insertion pass moves values within a bucket), and the same
    # beside one bucket of 40 (np.sort for that one, insertion for the rest)
    small = np.concatenate([(np.uint64(b) << np.uint64(58)) + np.arange(8, 0, -1, dtype=np.uint64) for b in range(8)])[::-1].copy()
    cases += [small, np.r_[small, (np.uint64(9) << np.uint64(58)) + np.arange(40, 0, -1, dtype=np.uint64), small[:5]]]
    for h in cases:
        out = np.zeros(len(h) + 3, np.uint64)
        end = _sorted_unique(h, len(h), out, 3, np.empty((1 << 16) + 1, np.int64), np.empty(len(h), np.uint64))
        assert np.array_equal(out[3:end], np.unique(h))


def test_pair_lookup_matches_a_dict_of_the_checks():
    """finalize's lookup of checked pairs: last value where a pair repeats, NaN where absent or unused, huge ids kept."""
    from curate.dedup.sound import pair_lookup

    big = np.uint64(2**64 - 5)
    ka = np.array([3, 1, big, 3, 7], np.uint64)
    kb = np.array([4, 2, 1, 4, 7], np.uint64)
    val = np.array([0.1, 0.2, 0.3, 0.4, 0.5])
    qa = np.array([3, 1, big, 2, 3, 7, 7], np.uint64)
    qb = np.array([4, 2, 1, 1, 4, 8, 7], np.uint64)
    use = np.array([True, True, True, True, True, True, False])
    got = pair_lookup(ka, kb, val, qa, qb, use)
    exact = dict(zip(zip(ka.tolist(), kb.tolist()), val.tolist()))
    want = [exact.get((a, b), np.nan) if u else np.nan for a, b, u in zip(qa.tolist(), qb.tolist(), use)]
    np.testing.assert_array_equal(got, np.array(want))
    assert got[0] == 0.4 and np.isnan(got[3]) and np.isnan(got[6])
    assert len(pair_lookup(ka[:0], kb[:0], val[:0], qa, qb, use)) == len(qa)
