"""An append keeps minhash's partition count until the corpus doubles past it (each change splits every shard's band
keys again), and a fresh run picks one per DOCS_PER_PARTITION documents."""

from curate.dedup.layout import DOCS_PER_PARTITION, MAX_PARTITIONS, partitions_for, partitions_kept


def test_a_fresh_run_takes_one_partition_per_docs_per_partition():
    assert partitions_kept(None, 1) == 1
    assert partitions_kept(None, 4 * DOCS_PER_PARTITION) == 4
    assert partitions_kept(None, 4 * DOCS_PER_PARTITION + 1) == 5


def test_an_append_keeps_the_count_until_each_partition_would_hold_twice_its_share():
    assert partitions_kept(4, 4 * DOCS_PER_PARTITION + 100_000) == 4    # the 1M sample plus a 10% dump
    assert partitions_kept(4, 8 * DOCS_PER_PARTITION) == 4
    assert partitions_kept(4, 8 * DOCS_PER_PARTITION + 1) == partitions_for(8 * DOCS_PER_PARTITION + 1) == 9
    assert partitions_kept(4, 10) == 4                                   # files removed: more partitions than needed


def test_the_cap_still_holds():
    assert partitions_kept(MAX_PARTITIONS, 3 * MAX_PARTITIONS * DOCS_PER_PARTITION) == MAX_PARTITIONS
