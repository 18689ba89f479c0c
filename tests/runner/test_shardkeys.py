"""A later step's per-shard key holds an earlier step's ledger by the ids it removed, not by its bytes: dedup's detail
(cluster number, kept twin) moves when an append renumbers nodes, and no later step reads it."""

from __future__ import annotations

from curate.common.ledger import ledger_table, write_ledger
from curate.runner.shardkeys import file_digest, removed_digest


def _ledger(path, ids, details):
    write_ledger(str(path), ledger_table("fwe", "dedup", ids, ["minhash_duplicate_of:fwe"] * len(ids), details))


def test_a_ledger_counts_by_the_ids_it_removed_not_its_detail_or_order(tmp_path):
    _ledger(tmp_path / "a.parquet", ["d1", "d2"], ["kept k1 (fwe); cluster 17", "kept k2 (fwe); cluster 40"])
    _ledger(tmp_path / "b.parquet", ["d2", "d1"], ["kept k2 (fwe); cluster 41", "kept k1 (fwe); cluster 4294967313"])
    _ledger(tmp_path / "c.parquet", ["d1", "d3"], ["kept k1 (fwe); cluster 17", "kept k2 (fwe); cluster 40"])
    assert file_digest(str(tmp_path / "a.parquet")) != file_digest(str(tmp_path / "b.parquet"))
    assert removed_digest(str(tmp_path / "a.parquet")) == removed_digest(str(tmp_path / "b.parquet"))
    assert removed_digest(str(tmp_path / "a.parquet")) != removed_digest(str(tmp_path / "c.parquet"))
    _ledger(tmp_path / "d.parquet", ["d1d", "2"], ["", ""])   # the same bytes joined: the offsets keep them apart
    _ledger(tmp_path / "e.parquet", ["d1", "d2"], ["", ""])
    assert removed_digest(str(tmp_path / "d.parquet")) != removed_digest(str(tmp_path / "e.parquet"))
    assert removed_digest(str(tmp_path / "missing.parquet")) is None
