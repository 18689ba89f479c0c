"""A round of label propagation travels in one raw mailbox file per sending partition (`curate.dedup.mailbox`)."""

import os

import numpy as np
import pytest

from curate.dedup import bundles, components, graph, mailbox
from curate.dedup.shuffle import partition_of, split

U64 = np.uint64


def sent(folder, origin, receivers, partitions, **columns):
    mailbox.send(folder, origin, np.array(receivers, np.int64), partitions, {k: np.array(v, U64) for k, v in columns.items()})


@pytest.mark.parametrize("where", ["local", "memory"])
def test_each_partition_receives_its_rows_from_every_sender_and_nothing_else(tmp_path, where):
    """Rows go to their receiver whatever order they were sent in, every column with them; a partition nothing was sent
    to gets empty uint64 columns. On an object store (fsspec's memory one here) the reads are ranged reads."""
    folder = str(tmp_path / "r=000") if where == "local" else f"memory://mailbox-{tmp_path.name}/r=000"
    sent(folder, "00000", [2, 0, 2, 3], 5, target=[20, 1, 21, 30], hi=[7, 8, 9, 10])
    sent(folder, "00001", [2, 4], 5, target=[22, 40], hi=[11, 12])
    got = {p: mailbox.receive(folder, p, 5, ["target", "hi"]) for p in range(5)}
    assert got[2]["target"].tolist() == [20, 21, 22] and got[2]["hi"].tolist() == [7, 9, 11]
    assert got[0]["target"].tolist() == [1] and got[3]["hi"].tolist() == [10] and got[4]["target"].tolist() == [40]
    assert got[1]["target"].tolist() == [] and got[1]["hi"].dtype == U64 and got[2]["target"].dtype == U64
    assert mailbox.receive(folder.replace("r=000", "r=001"), 2, 5, ["target"])["target"].tolist() == []   # no folder


def test_a_task_run_again_replaces_its_mailbox_and_sending_nothing_leaves_none(tmp_path):
    folder = str(tmp_path / "r=000")
    sent(folder, "00000", [0, 1], 2, lo=[1, 2])
    sent(folder, "00000", [1, 1], 2, lo=[5, 6])
    assert mailbox.receive(folder, 0, 2, ["lo"])["lo"].tolist() == []
    assert mailbox.receive(folder, 1, 2, ["lo"])["lo"].tolist() == [5, 6]
    sent(folder, "00000", [], 2, lo=[])
    assert os.listdir(folder) == []


def test_a_mailbox_of_another_shape_or_cut_short_is_refused(tmp_path):
    """A receiver that expects other partitions or columns than the sender wrote, or a file shorter than its offsets
    say, fails loudly rather than take wrong rows."""
    folder = str(tmp_path / "r=000")
    sent(folder, "00000", [0, 1, 1], 3, target=[1, 2, 3], lo=[4, 5, 6])
    with pytest.raises(ValueError, match="not a mailbox of 4 partitions"):
        mailbox.receive(folder, 1, 4, ["target", "lo"])
    with pytest.raises(ValueError, match="3 partitions and 1 columns"):
        mailbox.receive(folder, 1, 3, ["target"])
    path = os.path.join(folder, f"from-00000{mailbox.SUFFIX}")
    with open(path, "r+b") as handle:
        handle.truncate(os.path.getsize(path) - 8)
    with pytest.raises(ValueError, match="cut short"):
        mailbox.receive(folder, 1, 3, ["target", "lo"])


def test_a_round_an_earlier_version_sent_as_bundles_is_still_received(tmp_path):
    """A run resumed mid-round across the change: senders that ran before it left Arrow bundles, the rest mailboxes;
    `graph.receive` reads both, and the labels are those of a round sent wholly by mailboxes."""
    rng = np.random.default_rng(3)
    ids = np.unique(rng.integers(1, 10_000, 400).astype(U64))
    u, v = ids[rng.integers(0, len(ids), 300)], ids[rng.integers(0, len(ids), 300)]
    u, v = u[u != v], v[u != v]
    labels = {}
    for way in ("mailboxes", "mixed"):
        g = graph.GraphDir(str(tmp_path / way), 3)
        graph.write_edges(g, "00000", u, v, np.zeros(len(u), U64), np.zeros(len(v), U64))
        for p in range(3):
            graph.init(g, p)
            graph.send(g, 0, p)
        if way == "mixed":   # partition 1's messages as the earlier version sent them: one Arrow bundle
            folder, lab = g.path("messages", "r=000"), g.labels(0, 1)
            os.remove(os.path.join(folder, f"from-{bundles.partition(1)}{mailbox.SUFFIX}"))
            edges = graph.read_columns(g.adjacency(1), ["u", "v"], {"u": U64, "v": U64})
            target, hi, lo = components.send(edges["u"], edges["v"], lab["node"], lab["label_hi"], lab["label_lo"], lab["moved"])
            bundles.send(folder, bundles.partition(1), split(partition_of(target, 3), 3, target=target, hi=hi, lo=lo),
                         bundles.partition)
        changed = [graph.receive(g, 0, p)["changed"] for p in range(3)]
        labels[way] = ([g.labels(1, p)["label_lo"].tolist() for p in range(3)], changed)
    assert labels["mixed"] == labels["mailboxes"] and sum(labels["mixed"][1]) > 0


def test_labels_an_earlier_version_wrote_send_every_node(tmp_path):
    """Label files from before `moved` (a run resumed across the change) read as if every label moved: each node
    sends its label in the next round, which is what the earlier version's rounds did."""
    from curate.dedup.layout import write_columns

    g = graph.GraphDir(str(tmp_path / "g"), 2)
    node = np.array([3, 5], U64)
    write_columns(g._labels(2, 1), node=node, hi=node, label_hi=node, label_lo=node)
    assert g.labels(2, 1)["moved"].tolist() == [True, True]
    g.write_labels(3, 1, node, node, node, node, np.array([False, True]))
    assert g.labels(3, 1)["moved"].tolist() == [False, True] and g.labels(3, 0)["moved"].dtype == bool


def test_init_keeps_each_edge_once_whatever_band_partitions_sent_it(tmp_path):
    """An edge that two band partitions found (two documents sharing keys in two bands) is one edge of the adjacency
    every round reads; the adjacency is sorted by (u, v)."""
    g = graph.GraphDir(str(tmp_path / "g"), 1)
    u, v = np.array([5, 3, 5], U64), np.array([9, 7, 8], U64)
    graph.write_edges(g, "00000", u, v, np.zeros(3, U64), np.zeros(3, U64))
    graph.write_edges(g, "00001", u[:2], v[:2], np.zeros(2, U64), np.zeros(2, U64))   # (5, 9) and (3, 7) again
    assert graph.init(g, 0) == {"in": 5, "edges": 6}
    adjacency = graph.read_columns(g.adjacency(0), ["u", "v"], {"u": U64, "v": U64})
    assert list(zip(adjacency["u"].tolist(), adjacency["v"].tolist())) == [(3, 7), (5, 8), (5, 9), (7, 3), (8, 5), (9, 5)]


def test_a_receiver_told_its_senders_reads_only_their_mailboxes(tmp_path):
    """In a sparse round `send`'s results say who wrote to whom (`graph.senders`): a receiver reads those mailboxes and
    no other (a mailbox it was not told of is not read, even one holding rows for it); a dense round, or results that
    do not say, leave every receiver to read every mailbox."""
    folder = str(tmp_path / "r=001")
    sent(folder, "00000", [1], 4, lo=[10])
    sent(folder, "00002", [1, 3], 4, lo=[12, 13])
    assert mailbox.receive(folder, 1, 4, ["lo"], ["00002"])["lo"].tolist() == [12]
    assert mailbox.receive(folder, 1, 4, ["lo"], [])["lo"].tolist() == []
    assert sorted(mailbox.receive(folder, 1, 4, ["lo"])["lo"].tolist()) == [10, 12]

    def result(p, to):
        return {"p": p, "to": np.packbits(np.isin(np.arange(4), to)).tobytes().hex()}

    assert graph.senders([result(0, [1]), result(2, [1, 3]), result(1, []), result(3, [])], 4) == [[], [0, 2], [], [2]]
    assert graph.senders([result(p, [0, 1, 2, 3]) for p in range(4)], 4) is None   # dense: every receiver reads all
    assert graph.senders([result(0, [1]), {"p": 1}], 4) is None


def test_rounds_told_their_senders_label_as_rounds_that_read_every_mailbox(tmp_path):
    """The send/receive rounds give each partition the same labels whether receivers are told their senders (sparse
    rounds) or read every mailbox."""
    rng = np.random.default_rng(5)
    ids = np.unique(rng.integers(1, 50_000, 3000).astype(U64))
    pick = rng.integers(0, len(ids), (2, 1500))
    u, v = ids[pick[0]], ids[pick[1]]
    u, v = u[u != v], v[u != v]
    labels, told = {}, 0
    for way in ("told", "all"):
        g = graph.GraphDir(str(tmp_path / way), 6)
        graph.write_edges(g, "00000", u, v, np.zeros(len(u), U64), np.zeros(len(v), U64))
        for p in range(6):
            graph.init(g, p)
        for rnd in range(100):
            sent = [graph.send(g, rnd, p) for p in range(6)]
            by = graph.senders(sent, 6) if way == "told" else None
            told += by is not None
            if sum(graph.receive(g, rnd, (p, by[p] if by else None))["changed"] for p in range(6)) == 0:
                break
        labels[way] = [g.labels(rnd + 1, p)["label_lo"].tolist() for p in range(6)]
    assert labels["told"] == labels["all"] and rnd > 2 and told > 0
