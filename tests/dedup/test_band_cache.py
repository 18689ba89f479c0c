"""A partition's band rows kept in one file across runs (`curate.dedup.band_cache`): the same rows as the band files,
and only new, replaced or unsettled band files read again."""

import os

import numpy as np
import pytest

from curate.dedup import band_cache
from curate.dedup.band_cache import read_bands
from curate.dedup.layout import PLAIN, WORK, write_columns

SHARDS = [("a", "s0"), ("a", "s1"), ("b", "s0")]


def _write(root, source, shard, seed, rows=50):
    rng = np.random.default_rng(seed)
    write_columns(str(root / "p=00000" / source / f"{shard}{WORK}"), PLAIN, band=rng.integers(0, 8, rows).astype(np.uint16),
                  key=rng.integers(0, 2**63, rows, dtype=np.uint64), row=np.arange(rows, dtype=np.uint64),
                  tie=rng.integers(0, 1000, rows).astype(np.uint64))


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
    assert set(a) == set(b)
    order_a, order_b = np.lexsort((a["key"], a["node"])), np.lexsort((b["key"], b["node"]))
    for name in a:
        assert np.array_equal(a[name][order_a], b[name][order_b]), name


def test_kept_rows_equal_the_band_files_and_only_changed_files_are_read(tmp_path, monkeypatch, reads):
    monkeypatch.setattr(band_cache, "SETTLED_NS", -1)   # every file counts as settled (their times are this second's)
    bands, keep = tmp_path / "bands", str(tmp_path / "kept")
    for i, (source, shard) in enumerate(SHARDS):
        _write(bands, source, shard, i)
    numbers = {s: (0 if s[0] == "a" else 1, i) for i, s in enumerate(SHARDS)}
    first = read_bands(str(bands), 0, numbers, keep)
    assert len(reads) == 3 and os.path.exists(band_cache.kept_path(keep, 0))
    reads.clear()
    _same(read_bands(str(bands), 0, numbers, keep), first)
    assert reads == []   # every row from the kept file

    _write(bands, "a", "s1", 10)                  # replaced (a new file renamed over it)
    _write(bands, "b", "s1", 11)                  # added
    os.remove(bands / "p=00000" / "a" / f"s0{WORK}")   # gone
    numbers = {("a", "s1"): (0, 0), ("b", "s0"): (1, 0), ("b", "s1"): (1, 1), ("a", "s0"): (0, 1)}
    reads.clear()
    got = read_bands(str(bands), 0, numbers, keep)
    assert sorted(reads) == [("a", f"s1{WORK}"), ("b", f"s1{WORK}")]
    reads.clear()
    _same(got, read_bands(str(bands), 0, numbers, None))
    numbers.pop(("b", "s1"))                      # a shard the run no longer has: its rows are left out
    _same(read_bands(str(bands), 0, numbers, keep), read_bands(str(bands), 0, numbers, None))


def test_a_file_read_just_after_it_was_written_is_read_again(tmp_path, reads):
    """A band file that had not settled when it was read (it could be written again within the clock's tick and keep
    its stat) is never trusted from the kept file."""
    bands, keep = tmp_path / "bands", str(tmp_path / "kept")
    _write(bands, "a", "s0", 0)
    numbers = {("a", "s0"): (0, 0)}
    read_bands(str(bands), 0, numbers, keep)
    reads.clear()
    read_bands(str(bands), 0, numbers, keep)
    assert reads == [("a", f"s0{WORK}")]


def test_a_kept_file_of_other_band_files_is_not_used(tmp_path, monkeypatch, reads):
    monkeypatch.setattr(band_cache, "SETTLED_NS", -1)
    keep = str(tmp_path / "kept")
    for name in ("one", "two"):
        _write(tmp_path / name, "a", "s0", 0 if name == "one" else 1)
    numbers = {("a", "s0"): (0, 0)}
    read_bands(str(tmp_path / "one"), 0, numbers, keep)
    reads.clear()
    _same(read_bands(str(tmp_path / "two"), 0, numbers, keep), read_bands(str(tmp_path / "two"), 0, numbers, None))
    assert len(reads) == 2


def test_prune_removes_partitions_beyond_the_count(tmp_path):
    keep = tmp_path / "kept"
    for p in range(3):
        write_columns(band_cache.kept_path(str(keep), p), PLAIN, key=np.zeros(1, np.uint64))
    band_cache.prune(str(keep), 2)
    assert sorted(os.listdir(keep)) == [f"p=00000{WORK}", f"p=00001{WORK}"]
