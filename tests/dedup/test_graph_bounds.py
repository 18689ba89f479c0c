"""The graph's memory bounds: a giant cluster settles in chunks (same result, bounded temporaries), and the
file-based component phases over many partitions agree with a plain union-find."""

import tracemalloc
from dataclasses import fields

import numpy as np
import pyarrow as pa

from curate.dedup import bundles, graph, nodes, sound
from curate.dedup.graph import GraphDir
from curate.dedup.layout import PLAIN, WORK, PartitionedSink, read_frame
from curate.dedup.signature_store import fixed_lists
from curate.dedup.settle import Settled, settle_members

from dedup.test_components import _union_find  # the plain union-find the components are checked against

MEMBERS = 50_000


def _giant(members=MEMBERS, seed=3):
    """One cluster: 4 sources, signatures of a template with 0-35% of their 128 slots changed (estimates around 0.8)."""
    rng = np.random.default_rng(seed)
    template = rng.integers(0, 2**32, 128, dtype=np.uint32)
    sig = np.broadcast_to(template, (members, 128)).copy()
    change = rng.random((members, 128)) < rng.uniform(0.0, 0.35, members)[:, None]
    sig[change] = rng.integers(0, 2**32, int(change.sum()), dtype=np.uint32)
    return np.zeros(members, np.int64), np.sort(rng.integers(0, 4, members)), sig


def test_a_giant_cluster_settles_in_chunks_to_the_same_result():
    comp, priority, sig = _giant()
    for policy in ("cross_source", "all"):
        whole = settle_members(comp, priority, sig, policy, 0.8, 0.1, 8, chunk_pairs=1 << 40)
        chunked = settle_members(comp, priority, sig, policy, 0.8, 0.1, 8, chunk_pairs=1000)
        assert (whole.fate == 1).sum() > 1000 and (whole.fate == 2).sum() > 1000   # removals and checks both happen
        for name in (f.name for f in fields(Settled)):
            assert np.array_equal(getattr(whole, name), getattr(chunked, name)), (policy, name)


def test_a_giant_clusters_settling_stays_within_a_memory_cap():
    """The (member, kept) pairs of a round are 37,500 x 32 here: a 63 MiB peak when they were made all at once
    (before `chunk_pairs`); in chunks of 16k pairs, a few MiB of state and one chunk's temporaries."""
    comp, priority, sig = _giant()
    tracemalloc.start()
    try:
        settle_members(comp, priority, sig, "cross_source", 0.8, 0.1, 8, chunk_pairs=1 << 14)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 32 * 2**20, peak


def _gathered(g, members, seed=4):
    """A partition's gathered rows: one giant cluster (label 0) and 200 pairs, in 3 bundles as 3 docs shards send them."""
    comp, _, sig = _giant(members, seed)
    node = np.concatenate([nodes.pack(q, 0, np.arange(q, members, 4) // 4) for q in range(4)])
    label = np.where(np.arange(members) < members - 400, 0, node[(np.arange(members) // 2) * 2])
    hi = (nodes.priority_of(node).astype(np.uint64) << np.uint64(32)) | nodes.row_of(node).astype(np.uint64)
    for i, rows in enumerate(np.array_split(np.random.default_rng(seed).permutation(members), 3)):
        bundles.send(g.path("sound", "gathered"), f"{i:02d}-{0:07d}", [(0, {
            "node": node[rows], "label": label[rows].astype(np.uint64), "hi": hi[rows], "length": np.full(len(rows), 100, np.int64),
            "sig": fixed_lists(sig[rows])})], bundles.partition, PLAIN)


def test_a_giant_clusters_signatures_settle_from_disk_to_the_same_state(tmp_path):
    """Over `spill_bytes` the signatures wait on local disk: the settle phase's numpy memory stays below the size of
    the signatures (it holds more than them when they are in memory), and its state file is the same."""
    members = 60_000
    peaks, states = {}, {}
    for spill in (1 << 40, 0):
        g = GraphDir(str(tmp_path / str(spill)), 1)
        _gathered(g, members)
        tracemalloc.start()
        try:
            out = sound.settle(g, sound.Sound(0.8, 0.1, 8, "", {}), "all", False, 0, spill_bytes=spill)
            peaks[spill] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert out["in"] == members and out["largest"][0] == members - 400
        states[spill] = read_frame(g.path("sound", "state", f"p=00000{WORK}"))
    assert states[0].equals(states[1 << 40])
    assert peaks[0] < members * 128 * 4 < peaks[1 << 40], peaks


def test_components_over_many_partitions_equal_a_plain_union_find(tmp_path):
    """Band rows in the minhash layout -> buckets, init, send/receive over 16 partitions: every linked node is
    labelled with its component's smallest node, as a union-find over the same buckets says."""
    rng = np.random.default_rng(5)
    docs, bands, partitions = 3000, 4, 16
    keys = rng.integers(0, 2**63, (docs, bands), dtype=np.uint64)
    cluster = rng.integers(0, 400, docs)          # ~7 members per cluster, each sharing some bands' keys
    shared = rng.random((docs, bands)) < 0.3
    keys[shared] = (cluster[:, None] * bands + np.arange(bands)[None, :])[shared].astype(np.uint64)
    row = np.arange(docs, dtype=np.uint64)
    root = tmp_path / "bands"
    with PartitionedSink(lambda p: str(root / f"p={p:05d}" / "src" / f"s0{WORK}"), partitions, "key") as sink:
        sink.write(pa.table({"band": np.tile(np.arange(bands, dtype=np.uint16), docs), "key": keys.reshape(-1),
                             "row": np.repeat(row, bands), "tie": np.repeat(row, bands)}))
    g = GraphDir(str(tmp_path / "graph"), partitions)
    for p in range(partitions):
        graph.buckets(g, str(root), False, {("src", "s0"): (0, 0)}, str(tmp_path / "kept"), p)
    for p in range(partitions):
        graph.init(g, p)
    for rnd in range(100):
        for p in range(partitions):
            graph.send(g, rnd, p)
        if sum(graph.receive(g, rnd, p)["changed"] for p in range(partitions)) == 0:
            break
    labels = {int(n): int(lab) for p in range(partitions) for n, lab in zip(*(lambda c: (c["node"], c["label_lo"]))(g.labels(rnd + 1, p)))}
    flat_keys, doc_of = keys.reshape(-1), np.repeat(np.arange(docs), bands)
    order = np.argsort(flat_keys, kind="stable")
    same = flat_keys[order][1:] == flat_keys[order][:-1]
    want = np.array(_union_find(docs, zip(doc_of[order][:-1][same].tolist(), doc_of[order][1:][same].tolist())))
    linked = np.flatnonzero(np.bincount(want, minlength=docs)[want] > 1)
    assert len(linked) > docs // 2 and rnd > 1
    assert labels == {int(nodes.pack(0, 0, np.array([d]))[0]): int(nodes.pack(0, 0, np.array([want[d]]))[0]) for d in linked}


def test_the_columns_settle_keeps_beside_the_signatures_do_not_hold_their_batch(tmp_path):
    """A batch read from its bundle is one buffer, signatures and all: the columns settle keeps from each are copies,
    so a batch's signatures go once it is read (views of them kept a 1M-member cluster's 512 MiB of signatures alive
    beside the sorted copy: 814 MiB at the settle task's peak, 626 once copied)."""
    members = 30_000
    g = GraphDir(str(tmp_path / "g"), 1)
    _gathered(g, members)
    before = pa.total_allocated_bytes()
    kept = sound._without_signatures(bundles.batches(g.path("sound", "gathered"), bundles.partition(0)))
    assert kept.num_rows == members and "sig" not in kept.column_names
    assert pa.total_allocated_bytes() - before < members * 128 * 4 / 4   # the signatures: 15 MB; the rest: ~1 MB
