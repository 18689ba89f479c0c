"""A partition's band rows kept across runs, sorted by key (`curate.dedup.band_cache`): the same candidate rows as the
band files, only new, replaced or unsettled band files read again, and an append that only adds shards writes only
their rows."""

import os

import numpy as np
import pytest

from curate.dedup import band_cache
from curate.dedup.band_cache import candidates
from curate.dedup.candidates import bucket_edges, stars
from curate.dedup.layout import PLAIN, WORK, write_columns

SHARDS = [("a", "s0"), ("a", "s1"), ("b", "s0")]


def _write(root, source, shard, seed, rows=50):
    """Keys from a small range: rows of different shards share keys (the candidates) and most do not."""
    rng = np.random.default_rng(seed)
    key = rng.integers(0, 20 * rows, rows).astype(np.uint64)
    write_columns(str(root / "p=00000" / source / f"{shard}{WORK}"), PLAIN, band=(key % 3).astype(np.uint16) + (key % 2),
                  key=key, row=np.arange(rows, dtype=np.uint64), tie=rng.integers(0, 1000, rows).astype(np.uint64))


@pytest.fixture
def reads(monkeypatch):
    """The band files read, by (source, shard)."""
    seen = []
    real = band_cache.read_frame

    def counted(path, columns=None):
        seen.append(tuple(path.rsplit("/", 2)[-2:]))
        return real(path, columns)

    monkeypatch.setattr(band_cache, "read_frame", counted)
    return seen


def _same(a, b):
    """The same candidate rows (in any order) and the same count of live rows."""
    (a, n), (b, m) = a, b
    assert n == m and set(a) == set(b)
    order_a, order_b = np.lexsort((a["key"], a["band"], a["node"])), np.lexsort((b["key"], b["band"], b["node"]))
    for name in a:
        assert np.array_equal(a[name][order_a], b[name][order_b]), name


def _edges_of_all_rows(bands, numbers):
    """The star edges of every row of the band files, numbered as `candidates` numbers them (the reference)."""
    rows = []
    for (source, shard), (priority, index) in numbers.items():
        path = bands / "p=00000" / source / f"{shard}{WORK}"
        if path.exists():
            cols = band_cache._read_file(str(path), 0)
            rows.append(band_cache._numbered(cols, cols["shard"], [(priority, index)]))
    cols = {n: np.concatenate([r[n] for r in rows]) for n in rows[0]}
    return bucket_edges(cols["band"], cols["key"], cols["node"])


def _edges(got):
    rows = got[0]
    return stars(rows["band"], rows["key"], rows["node"])


def _same_edges(a, b) -> bool:
    return np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])


def test_kept_rows_give_the_band_files_candidates_and_only_changed_files_are_read(tmp_path, monkeypatch, reads):
    monkeypatch.setattr(band_cache, "SETTLED_NS", -1)   # every file counts as settled (their times are this second's)
    bands, keep = tmp_path / "bands", str(tmp_path / "kept")
    for i, (source, shard) in enumerate(SHARDS):
        _write(bands, source, shard, i)
    numbers = {s: (0 if s[0] == "a" else 1, i) for i, s in enumerate(SHARDS)}
    first = candidates(str(bands), 0, numbers, keep)
    assert len(reads) == 3 and os.path.exists(band_cache.kept_path(keep, 0)) and first[1] == 150
    assert len(first[0]["key"]) > 0
    assert len(_edges(first)[0]) > 0 and _same_edges(_edges(first), _edges_of_all_rows(bands, numbers))
    reads.clear()
    _same(candidates(str(bands), 0, numbers, keep), first)
    assert reads == []   # every row from the kept file

    _write(bands, "a", "s1", 10)                  # replaced (a new file renamed over it)
    _write(bands, "b", "s1", 11)                  # added
    os.remove(bands / "p=00000" / "a" / f"s0{WORK}")   # gone
    numbers = {("a", "s1"): (0, 0), ("b", "s0"): (1, 0), ("b", "s1"): (1, 1), ("a", "s0"): (0, 1)}
    reads.clear()
    got = candidates(str(bands), 0, numbers, keep)
    assert sorted(reads) == [("a", f"s1{WORK}"), ("b", f"s1{WORK}")]
    reads.clear()
    _same(got, candidates(str(bands), 0, numbers, None))
    numbers.pop(("b", "s1"))                      # a shard the run no longer has: its rows are left out
    _same(candidates(str(bands), 0, numbers, keep), candidates(str(bands), 0, numbers, None))


def test_an_append_writes_only_the_new_shards_rows_until_they_are_folded_in(tmp_path, monkeypatch, reads):
    monkeypatch.setattr(band_cache, "SETTLED_NS", -1)
    bands, keep = tmp_path / "bands", str(tmp_path / "kept")
    numbers = {}

    def add(i, rows=50):
        _write(bands, "a", f"s{i:02d}", i, rows)
        numbers[("a", f"s{i:02d}")] = (0, i)

    def check(read):
        reads.clear()
        got = candidates(str(bands), 0, numbers, keep)
        assert sorted(reads) == [("a", f"{s}{WORK}") for s in read]
        _same(got, candidates(str(bands), 0, numbers, None))
        assert _same_edges(_edges(got), _edges_of_all_rows(bands, numbers))

    for i in range(16):   # 800 kept rows: the new rows go beside them up to 200 (FOLD: a quarter)
        add(i)
    check([f"s{i:02d}" for i in range(16)])
    kept = os.stat(band_cache.kept_path(keep, 0)).st_ino
    for i in (16, 17):   # two appends of a shard: only its band file read (the one before from the new rows' file)
        add(i)
        check([f"s{i:02d}"])
        assert os.stat(band_cache.kept_path(keep, 0)).st_ino == kept and os.path.exists(band_cache.new_path(keep, 0))
    _write(bands, "a", "s00", 99)   # a kept shard replaced: its kept rows left out, its new ones beside the rest
    check(["s00"])
    assert os.stat(band_cache.kept_path(keep, 0)).st_ino == kept
    check([])
    add(18, 200)   # past a quarter: folded into one file
    check(["s18"])
    assert os.stat(band_cache.kept_path(keep, 0)).st_ino != kept and not os.path.exists(band_cache.new_path(keep, 0))
    check([])


def test_a_file_read_just_after_it_was_written_is_read_again_until_it_is_confirmed(tmp_path, monkeypatch, reads):
    """A band file that had not settled when it was read (it could be written again within the clock's tick and keep
    its stat) is never trusted from the kept rows: it is read again, and once it has settled with the same `stat`
    and holds the kept rows, that is kept (beside the kept rows, which are not written again)."""
    bands, keep = tmp_path / "bands", str(tmp_path / "kept")
    for i in range(8):
        _write(bands, "a", f"s{i}", i)
    numbers = {("a", f"s{i}"): (0, i) for i in range(8)}
    first = candidates(str(bands), 0, numbers, keep)
    reads.clear()
    _same(candidates(str(bands), 0, numbers, keep), first)
    assert len(reads) == 8   # not settled yet: read again
    kept = os.stat(band_cache.kept_path(keep, 0)).st_ino
    monkeypatch.setattr(band_cache, "SETTLED_NS", -1)   # as when the next run comes seconds later
    _write(bands, "a", "s7", 70)   # this one was replaced meanwhile: not confirmed, its new rows beside the rest
    for expected in (8, 0):   # 7 read to confirm them and 1 as new; then none
        reads.clear()
        got = candidates(str(bands), 0, numbers, keep)
        assert len(reads) == expected and os.stat(band_cache.kept_path(keep, 0)).st_ino == kept
        _same(got, candidates(str(bands), 0, numbers, None))


def test_a_kept_file_of_other_band_files_or_an_earlier_layout_is_not_used(tmp_path, monkeypatch, reads):
    monkeypatch.setattr(band_cache, "SETTLED_NS", -1)
    keep = str(tmp_path / "kept")
    for name in ("one", "two"):
        _write(tmp_path / name, "a", "s0", 0 if name == "one" else 1)
    numbers = {("a", "s0"): (0, 0)}
    candidates(str(tmp_path / "one"), 0, numbers, keep)
    reads.clear()
    _same(candidates(str(tmp_path / "two"), 0, numbers, keep), candidates(str(tmp_path / "two"), 0, numbers, None))
    assert len(reads) == 2
    write_columns(band_cache.kept_path(keep, 0), PLAIN, key=np.zeros(1, np.uint64))   # an earlier version's file
    reads.clear()
    _same(candidates(str(tmp_path / "two"), 0, numbers, keep), candidates(str(tmp_path / "two"), 0, numbers, None))
    assert len(reads) == 2


def test_prune_removes_partitions_beyond_the_count(tmp_path):
    keep = tmp_path / "kept"
    for p in range(3):
        write_columns(band_cache.kept_path(str(keep), p), PLAIN, key=np.zeros(1, np.uint64))
        write_columns(band_cache.new_path(str(keep), p), PLAIN, key=np.zeros(1, np.uint64))
    band_cache.prune(str(keep), 2)
    assert sorted(os.listdir(keep)) == [f"p=00000-new{WORK}", f"p=00000{WORK}", f"p=00001-new{WORK}", f"p=00001{WORK}"]
