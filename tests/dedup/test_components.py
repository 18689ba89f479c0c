"""Candidate edges, distributed connected components and keep policies, checked against a plain union-find."""

import numpy as np

from curate.dedup import components, nodes
from curate.dedup.candidates import bucket_edges
from curate.dedup.policy import removed_mask
from curate.dedup.shuffle import partition_of, split

U64 = np.uint64


def _union_find(n_nodes, edges):
    parent = list(range(n_nodes))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for u, v in edges:
        a, b = find(u), find(v)
        if a != b:
            parent[max(a, b)] = min(a, b)
    return [find(x) for x in range(n_nodes)]


def _propagate(u, v, hi_of, partitions):
    """The stage's send/receive rounds, run over in-memory partitions."""
    both_u, both_v = np.concatenate([u, v]), np.concatenate([v, u])
    linked = np.unique(both_u)
    labels = {}
    for p, part in split(partition_of(linked, partitions), partitions, node=linked):
        node = np.sort(part["node"])
        labels[p] = (node, hi_of(node), node.copy(), np.ones(len(node), bool))
    edges = dict(split(partition_of(both_u, partitions), partitions, u=both_u, v=both_v))
    for rounds in range(1, 100):  # noqa: B007 - the count is returned after the loop
        inbox = {p: [] for p in labels}
        for p, (node, lhi, llo, moved) in labels.items():
            e = edges.get(p, {"u": np.empty(0, U64), "v": np.empty(0, U64)})
            t, h, l = components.send(e["u"], e["v"], node, lhi, llo, moved)
            for q, part in split(partition_of(t, partitions), partitions, t=t, h=h, l=l):
                inbox[q].append(part)
        changed = 0
        for p, (node, lhi, llo, _) in list(labels.items()):
            t, h, l = (np.concatenate([m[k] for m in inbox[p]] or [np.empty(0, U64)]) for k in ("t", "h", "l"))
            nh, nl, moved = components.receive(node, lhi, llo, t, h, l)
            labels[p] = (node, nh, nl, moved)
            changed += int(moved.sum())
        if changed == 0:
            break
    out = {}
    for node, _lhi, llo, _ in labels.values():
        out.update(zip(node.tolist(), llo.tolist()))
    return out, rounds


def test_bucket_edges_are_stars_per_bucket():
    band = np.array([0, 0, 0, 1, 1, 2], np.uint16)
    key = np.array([7, 7, 7, 9, 9, 5], U64)
    node = np.array([5, 3, 8, 8, 1, 4], U64)
    u, v = bucket_edges(band, key, node)
    assert sorted(zip(u.tolist(), v.tolist())) == [(1, 8), (3, 5), (3, 8)]


def test_components_match_union_find_on_random_graphs():
    rng = np.random.default_rng(0)
    for partitions in (1, 3, 8):
        n = 400
        u = rng.integers(0, n, 300).astype(U64)
        v = rng.integers(0, n, 300).astype(U64)
        keep = u != v
        u, v = u[keep], v[keep]
        labels, _ = _propagate(u, v, lambda x: np.zeros(len(x), U64), partitions)
        truth = _union_find(n, zip(u.tolist(), v.tolist()))
        for node, label in labels.items():
            assert label == truth[node]


def test_long_chain_converges():
    u = np.arange(0, 60, dtype=U64)
    labels, rounds = _propagate(u, u + U64(1), lambda x: np.zeros(len(x), U64), 4)
    assert set(labels.values()) == {0}
    assert rounds <= 62


def test_rank_hi_decides_the_label_before_the_node_number():
    # node 10 has the best rank (smallest hi) although 1 is the smallest node
    u, v = np.array([1, 1], U64), np.array([10, 20], U64)
    hi = {1: 5, 10: 2, 20: 9}
    labels, _ = _propagate(u, v, lambda x: np.array([hi[int(i)] for i in x], U64), 2)
    assert labels == {1: 10, 10: 10, 20: 10}


def test_policies():
    fwe = nodes.pack(0, 0, np.array([1, 2]))
    dclm = nodes.pack(1, 3, np.array([5]))
    zyda = nodes.pack(2, 0, np.array([0, 9]))
    node = np.concatenate([fwe, dclm, zyda])
    # cluster A: both fwe docs + the dclm doc; cluster B: the two zyda docs only
    label = np.array([fwe[0], fwe[0], fwe[0], zyda[0], zyda[0]], U64)
    assert removed_mask("cross_source", node, label).tolist() == [False, False, True, False, False]
    assert removed_mask("all", node, label).tolist() == [False, True, True, False, True]


def test_node_packing_round_trips():
    rows = np.array([0, 1, 2**32 - 1])
    packed = nodes.pack(3, 12345, rows)
    assert nodes.priority_of(packed).tolist() == [3, 3, 3]
    assert nodes.shard_of(packed).tolist() == [12345] * 3
    assert nodes.row_of(packed).tolist() == rows.tolist()
    assert (nodes.pack(0, 5, rows) < nodes.pack(1, 0, rows)).all()


def test_smallest_matches_union_find_on_random_graphs_and_chains():
    rng = np.random.default_rng(1)
    for n, m in ((1, 0), (50, 10), (400, 300), (2000, 3000)):
        u, v = rng.integers(0, n, m), rng.integers(0, n, m)
        assert components.smallest(n, u, v).tolist() == _union_find(n, zip(u.tolist(), v.tolist()))
    order = rng.permutation(500)   # a chain whose nodes are numbered at random: hooks go every way
    u, v = order[:-1], order[1:]
    assert components.smallest(500, u, v).tolist() == [0] * 500


def test_one_task_labels_the_graph_as_the_rounds_do(tmp_path):
    """`graph.label` (the whole graph at once) leaves every partition the labels the send/receive rounds converge to,
    ranks `hi` first."""
    from curate.dedup import graph

    rng = np.random.default_rng(2)
    n = 3000
    ids = np.unique(np.concatenate([nodes.pack(p, s, rng.integers(0, 1000, n // 30)) for p in range(3) for s in range(10)]))
    n = len(ids)
    pick = rng.integers(0, n, (2, 2500))
    u, v = ids[pick[0]], ids[pick[1]]
    keep = u != v
    u, v = u[keep], v[keep]
    rank = {int(i): int(h) for i, h in zip(ids, rng.integers(0, 5, n).astype(U64))}

    def hi(x):
        return np.array([rank[int(i)] for i in x], U64)

    labels = {}
    for way in ("label", "rounds"):
        g = graph.GraphDir(str(tmp_path / way), 4)
        graph.write_edges(g, "00000", u, v, hi(u), hi(v))
        for p in range(4):
            graph.init(g, p)
        if way == "label":
            graph.label(g, "all")
            final = 1
        else:
            for rnd in range(100):
                for p in range(4):
                    graph.send(g, rnd, p)
                if sum(graph.receive(g, rnd, p)["changed"] for p in range(4)) == 0:
                    final = rnd + 1
                    break
            assert final > 2, "the rounds had nothing to propagate: the test shows nothing"
        labels[way] = [{k: g.labels(final, p)[k].tolist() for k in ("node", "hi", "label_hi", "label_lo")} for p in range(4)]
    assert labels["label"] == labels["rounds"]
