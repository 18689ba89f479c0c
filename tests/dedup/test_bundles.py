"""What a graph task sends to many docs shards travels in one bundle file per task (`curate.dedup.bundles`)."""

import os

import numpy as np

from curate.dedup import bundles, nodes
from curate.dedup.layout import WORK, tag_of

U64 = np.uint64


def key(shard: int) -> int:
    return int(nodes.shard_key(nodes.pack(0, shard, np.zeros(1, np.int64)))[0])


def test_each_shard_receives_what_every_task_sent_it_from_one_file_per_task(tmp_path):
    folder = str(tmp_path / "members")
    bundles.send(folder, "00000", [(key(1), {"node": np.array([1, 2], U64)}), (key(3), {"node": np.array([5], U64)})])
    bundles.send(folder, "00001", [(key(3), {"node": np.array([7, 8], U64)})])
    assert sorted(os.listdir(folder)) == [f"from-00000{WORK}", f"from-00001{WORK}"]
    assert bundles.receivers(folder) == {tag_of(key(1)), tag_of(key(3))}
    got = bundles.receive(folder, tag_of(key(3)), ["node"], {"node": U64})["node"]
    assert sorted(got.tolist()) == [5, 7, 8] and got.dtype == U64
    assert bundles.receive(folder, tag_of(key(2)), ["node"], {"node": U64})["node"].tolist() == []
    assert bundles.receive(str(tmp_path / "nothing"), tag_of(key(1)), ["node"], {"node": U64})["node"].dtype == U64


def test_a_task_run_again_replaces_what_it_sent_before(tmp_path):
    """A retried task's bundle replaces the first try's (read fresh, not from a process's open bundles); sending nothing
    leaves nothing behind for any shard."""
    folder = str(tmp_path / "reps")
    bundles.send(folder, "00000", [(key(1), {"node": np.array([1], U64)}), (key(2), {"node": np.array([2], U64)})])
    assert bundles.receive(folder, tag_of(key(1)), ["node"], {"node": U64})["node"].tolist() == [1]
    bundles.send(folder, "00000", [(key(2), {"node": np.array([9, 10, 11], U64)})])
    assert bundles.receivers(folder) == {tag_of(key(2))}
    assert bundles.receive(folder, tag_of(key(1)), ["node"], {"node": U64})["node"].tolist() == []
    assert bundles.receive(folder, tag_of(key(2)), ["node"], {"node": U64})["node"].tolist() == [9, 10, 11]
    bundles.send(folder, "00000", [])
    assert bundles.receivers(folder) == set() and os.listdir(folder) == []


def test_a_receiver_reads_only_the_senders_it_names_and_partitions_have_names_of_their_own(tmp_path):
    """`receive_from` opens the bundles of the named senders only (a docs shard's resolve bundles: one per shard, read by
    the shards of its members); partition bundles name their batches `partition(p)`."""
    folder = str(tmp_path / "resolved")
    bundles.send(folder, tag_of(key(1)), [(key(2), {"node": np.array([1], U64)})])
    bundles.send(folder, tag_of(key(3)), [(key(2), {"node": np.array([9], U64)})])
    got = bundles.receive_from(folder, [tag_of(key(1)), tag_of(key(4))], tag_of(key(2)), ["node"], {"node": U64})["node"]
    assert got.tolist() == [1]   # key(3)'s bundle holds a batch for the shard too, but it was not named; key(4) sent nothing
    messages = str(tmp_path / "messages")
    bundles.send(messages, bundles.partition(0), [(1, {"lo": np.array([4, 5], U64)}), (3, {"lo": np.array([6], U64)})], bundles.partition)
    assert bundles.receivers(messages) == {"00001", "00003"}
    assert bundles.receive(messages, bundles.partition(3), ["lo"], {"lo": U64})["lo"].tolist() == [6]


def test_a_receiver_finds_its_batch_by_the_sorted_tags_whatever_order_they_were_sent_in(tmp_path):
    """The tags are kept sorted beside each batch's number (`TagIndex`): a receiver's batch is found by a binary search,
    with no list of every receiver parsed; tags sent out of order, or of unequal lengths, find their own rows."""
    folder = str(tmp_path / "out-of-order")
    parts = [(k, {"lo": np.array([k, k + 100], U64)}) for k in (7, 2, 11, 5)]
    bundles.send(folder, "00000", parts, lambda k: f"t{k}")   # t11 sorts before t2: unequal lengths, padded
    for k in (7, 2, 11, 5):
        assert bundles.receive(folder, f"t{k}", ["lo"], {"lo": U64})["lo"].tolist() == [k, k + 100]
    for missing in ("t1", "t3", "t", "t110", "u"):
        assert bundles.receive(folder, missing, ["lo"], {"lo": U64})["lo"].tolist() == []
    assert bundles.receivers(folder) == {"t7", "t2", "t11", "t5"}


def test_a_bundle_an_older_version_wrote_is_still_read(tmp_path):
    """A run resumed across the change reads bundles that list their tags as JSON, in batch order."""
    import json

    import pyarrow as pa

    folder = tmp_path / "legacy"
    folder.mkdir()
    schema = pa.schema([("node", pa.uint64())], metadata={bundles.SHARDS: json.dumps(["00003", "00001"]).encode()})
    with pa.ipc.new_file(str(folder / f"from-00000{WORK}"), schema) as writer:
        writer.write_batch(pa.record_batch([pa.array([30], pa.uint64())], schema=schema))
        writer.write_batch(pa.record_batch([pa.array([10, 11], pa.uint64())], schema=schema))
    assert bundles.receive(str(folder), "00001", ["node"], {"node": U64})["node"].tolist() == [10, 11]
    assert bundles.receive(str(folder), "00003", ["node"], {"node": U64})["node"].tolist() == [30]
    assert bundles.receivers(str(folder)) == {"00001", "00003"}


def test_large_bundles_are_kept_as_open_files_within_the_cap(tmp_path, monkeypatch):
    """Bundles over `SMALL_FILE` are read at offsets and kept open, at most `_KEEP_FILES` of them (the oldest dropped):
    what is kept in memory is their footers, so a docs shard's task does not open every partition's bundle again."""
    monkeypatch.setattr(bundles, "SMALL_FILE", 0)
    monkeypatch.setattr(bundles, "_KEEP_FILES", 2)
    monkeypatch.setattr(bundles, "_opened", {})
    monkeypatch.setattr(bundles, "_opened_files", 0)
    monkeypatch.setattr(bundles, "_opened_bytes", 0)
    folder = str(tmp_path / "members")
    for p in range(4):
        bundles.send(folder, f"{p:05d}", [(key(1), {"node": np.array([p], U64)}), (key(2), {"node": np.array([p + 10], U64)})])
    assert sorted(bundles.receive(folder, tag_of(key(2)), ["node"], {"node": U64})["node"].tolist()) == [10, 11, 12, 13]
    assert bundles._opened_files == 2 and len(bundles._opened) == 2 and all(kept[3] for kept in bundles._opened.values())
    assert sorted(bundles.receive(folder, tag_of(key(1)), ["node"], {"node": U64})["node"].tolist()) == [0, 1, 2, 3]
    assert bundles._opened_bytes < 4096


def test_a_partition_reads_its_batch_of_each_shard_bundle_once_and_keeps_none(tmp_path, monkeypatch):
    """`batches` (settle reading what every docs shard gathered for it) yields its own batch of each bundle, reads it at
    offsets and keeps no bundle: P partitions read S bundles once each, not each whole and kept."""
    monkeypatch.setattr(bundles, "_opened", {})
    folder = str(tmp_path / "gathered")
    for shard in (1, 2, 3):
        bundles.send(folder, tag_of(key(shard)), [(p, {"node": np.array([shard * 10 + p], U64)}) for p in (0, 1)], bundles.partition)
    got = [b.column("node").to_pylist() for b in bundles.batches(folder, bundles.partition(1))]
    assert sorted(got) == [[11], [21], [31]]
    assert list(bundles.batches(folder, bundles.partition(7))) == []
    assert bundles._opened == {}


def test_what_a_shard_was_sent_is_known_by_digest_without_reading_it(tmp_path):
    """`send(digests=True)` keeps each batch's digest beside its tag: a receiver's digest of all it was sent is the same
    whoever sent which rows (a component recalled from an earlier run comes from another bundle), and the driver reads
    every tag's at once (`digests`). A bundle that kept none gives none."""
    folder, moved = str(tmp_path / "members"), str(tmp_path / "moved")
    sent = bundles.send(folder, "00000", [(key(1), {"node": np.array([1, 2], U64)}), (key(3), {"node": np.array([5], U64)})],
                        digests=True)
    bundles.send(folder, "00001", [(key(3), {"node": np.array([7, 8], U64)})], digests=True)
    assert set(sent) == {tag_of(key(1)), tag_of(key(3))}
    bundles.send(moved, "00000", [(key(1), {"node": np.array([2, 1], U64)}), (key(3), {"node": np.array([8, 5], U64)})],
                 digests=True)
    bundles.send(moved, "00000-reused", [(key(3), {"node": np.array([7], np.int64)})], digests=True)
    for tag in (tag_of(key(1)), tag_of(key(3))):
        assert bundles.digest(folder, tag) == bundles.digest(moved, tag) == bundles.digests(folder)[tag]
    assert bundles.digest(folder, tag_of(key(1))) == sent[tag_of(key(1))] != bundles.digest(folder, tag_of(key(3)))
    assert bundles.digest(folder, tag_of(key(2))) == bundles.NOTHING and tag_of(key(2)) not in bundles.digests(folder)
    bundles.send(moved, "00001", [(key(3), {"node": np.array([9], U64)})], digests=True)
    assert bundles.digest(moved, tag_of(key(3))) != bundles.digest(folder, tag_of(key(3)))
    bundles.send(moved, "00002", [(key(1), {"node": np.array([4], U64)})])   # written without digests
    assert bundles.digest(moved, tag_of(key(1))) is None and bundles.digests(moved) is None
    assert bundles.digest(moved, tag_of(key(3))) is not None   # (that bundle sent it nothing)
