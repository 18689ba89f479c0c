"""Sound dedup: a document is removed only if it is a near-duplicate of a document that is kept.

Connected components of LSH candidates are transitive: in a chain A~B~C, C may share little with A, and a
policy that keeps A (or A's source) would remove C for resembling nothing kept. Here the components only
propose: `curate.dedup.settle` decides, member by member, from the MinHash signatures the minhash stage
kept (the fraction of equal slots estimates the Jaccard) and, within `margin` of the threshold, from the
exact shingle Jaccard, so that every removed document has a kept one at or above `threshold`.

Phases (after the components converge):
  decide    per node partition: each member's component label, sent to its docs shard (with settled components kept,
            `curate.dedup.settled`: to its component's partition, where `recall` decides the components an earlier
            run settled and sends the rest to their docs shards)
  gather    per group of docs shards: attach each member's signature and length, send it to its component's partition
  settle    per partition of components: representatives and estimates, round by round (`settle_members`);
            pairs near the threshold wait in buckets (`queue_checks`), their documents' shards are told what to hash
  exact-a   per group of docs shards: the queued documents' texts, in one bundle, a batch for each bucket that needs them
  exact-b   per bucket of pairs: the exact Jaccard of each pair (its texts hashed there), for its component's partition
  finalize  per partition of components: the decisions (`finish`), written with their evidence
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.dedup import bundles, exact_cache, nodes, settled
from curate.dedup.exact_cache import pair_lookup
from curate.dedup.exact_kernel import jaccard_pairs, shingle_sets
from curate.dedup.graph import GraphDir, by_shard, write_decisions
from curate.dedup.layout import PLAIN, WORK, group_of, read_columns, write_columns
from curate.dedup.settle import CHECK, REMOVED, Settled, finish, settle_members
from curate.dedup.shingles import Shingling
from curate.dedup.shuffle import partition_of
from curate.dedup.signature_store import fixed_lists, read_signatures, signature_matrix
from curate.dedup.spill import DiskRows

U64 = np.uint64
REPRESENTATIVE, ESTIMATE, EXACT = 1, 2, 3   # indexes into graph.METHODS
SPILL_BYTES = 256 << 20                     # a partition's signatures over this settle from local disk
FILL_ROWS = 8192                            # signature rows read and placed at once (scattered: a page each)
LARGEST = 5                                  # largest component sizes each partition reports
BUCKET_HASHES = 1 << 24                      # shingles one exact-b task holds, about (8 bytes each: 128 MiB)
SPREAD = 8                                   # the pairs of all partitions are cut into about this many buckets at least
                                             # (a small graph is one partition: its exact check still uses 8 cores) ...
SPREAD_HASHES = 1 << 20                      # ... of at least this many shingles each (a task's fixed cost)


@dataclass(frozen=True)
class Sound:
    threshold: float     # the least similarity to a kept document that allows a removal
    margin: float        # estimates within this of the threshold are decided by the exact Jaccard
    rounds: int          # sub-cluster rounds per component; members still unsettled after them are kept
    signatures: str      # the minhash stage's signature files: <source>/<shard>.parquet
    shingling: dict      # how that stage shingled (the exact Jaccard uses the same shingles)
    frozen: str | None = None   # an earlier run or manifest whose kept documents are never removed (`curate.dedup.frozen`)
    cache: str | None = None    # exact checks' results kept across runs (`curate.dedup.exact_cache`; None: none kept)
    settled: str | None = None  # settled components kept across runs (`curate.dedup.settled`; None: none kept)
    context: int = 0            # the options those depend on (`settled.context`)

    def ids(self, g: GraphDir) -> str:
        """Where the run's docs shard ids for the cache are (`exact_cache.write_ids`)."""
        return g.path("sound", "shard-ids.parquet")


def route(g: GraphDir, rnd: int, p: int) -> dict:
    """Send each member's component label (and rank) to its docs shard."""
    lab = g.labels(rnd, p)
    bundles.send(g.path("sound", "route"), f"{p:05d}", by_shard(lab["node"], node=lab["node"], label=lab["label_lo"], hi=lab["hi"]))
    return {"in": len(lab["node"])}


@dataclass(frozen=True)
class Members:
    """What `gather` needs of a docs shard: its signature file, its tag, and, where asked, its ids (the policy ranks
    by id) and which of its rows are frozen (a mask over them)."""

    signatures: str
    tag: str
    ids: pa.Array | None = None
    frozen: np.ndarray | None = None


def gather(g: GraphDir, s: Sound, origin: str, shards: Iterable[Members]) -> dict:
    """Attach the members' signatures (and lengths, and ids and frozen flags where given) of a group of docs shards
    (`layout.group_of`); send them by component, in one bundle (`from-<origin>`)."""
    tables = [t for t in map(partial(_members, g), shards) if t is not None]
    if not tables:
        return {"in": 0}
    table = pa.concat_tables(tables)
    part = partition_of(table.column("label").to_numpy(), g.partitions)
    order = np.argsort(part, kind="stable")
    bounds = np.flatnonzero(np.r_[True, part[order][1:] != part[order][:-1], True])
    parts = ((int(part[order[a]]), table.take(pa.array(order[a:b]))) for a, b in zip(bounds[:-1], bounds[1:]))
    # one bundle a group of shards (signatures: uncompressed), not a file a (shard, partition): 3,900 files of a 1M
    # append were 975, and a group's 8 shards send one
    bundles.send(g.path("sound", "gathered"), origin, ((q, {n: t.column(n).combine_chunks() for n in t.column_names}) for q, t in parts),
                 bundles.partition, PLAIN)
    return {"in": table.num_rows, "shards": len(tables)}


def _members(g: GraphDir, shard: Members) -> pa.Table | None:
    """One docs shard's members (as `route` sent them) with their signatures and lengths; None when it has none."""
    m = bundles.receive(g.path("sound", "route"), shard.tag, ["node", "label", "hi"], {"node": U64, "label": U64, "hi": U64})
    if not len(m["node"]):
        return None
    sig_row, length, sig = read_signatures(shard.signatures)
    rows = nodes.row_of(m["node"]).astype(sig_row.dtype)
    at = np.searchsorted(sig_row, rows)
    if len(sig_row) == 0 or not np.array_equal(sig_row[np.minimum(at, len(sig_row) - 1)], rows):
        raise ValueError(f"shard {shard.tag}: a cluster member has no stored signature (re-run the minhash step)")
    table = pa.table({"node": m["node"], "label": m["label"], "hi": m["hi"], "length": length[at], "sig": fixed_lists(sig[at])})
    if shard.ids is not None:
        table = table.append_column("id", shard.ids.take(pa.array(nodes.row_of(m["node"]))).cast(pa.string()))
    if shard.frozen is not None:
        table = table.append_column("frozen", pa.array(shard.frozen[nodes.row_of(m["node"])]))
    return table


STATE = ("rep", "sim", "fate", "solid", "solid_sim", "wait", "wait_sim", "wait_sure")


def settle(g: GraphDir, s: Sound, policy: str, by_id: bool, p: int, spill_bytes: int = SPILL_BYTES) -> dict:
    """Estimate one partition of components (`settle_members`); the result waits in `sound/state` for `finalize`,
    and the pairs that need the exact Jaccard go to their kept member's shard. Signatures over `spill_bytes` wait on
    local disk (`curate.dedup.spill`): the same result in bounded memory."""
    gathered = partial(bundles.batches, g.path("sound", "gathered"), bundles.partition(p))
    t = _without_signatures(gathered())
    if t is None:
        return {"in": 0, "checks": 0, "largest": []}
    frozen = "frozen" in t.column_names
    # frozen documents first in their component (a tier above every source), then rank
    tier = (~t.column("frozen").to_numpy(zero_copy_only=False)).astype(np.int8) if frozen else np.zeros(t.num_rows, np.int8)
    if by_id:
        keyed = t.append_column("prio", pa.array(nodes.priority_of(t.column("node").to_numpy()))).append_column("tier", pa.array(tier))
        order = pc.sort_indices(keyed, sort_keys=[("label", "ascending"), ("tier", "ascending"), ("prio", "ascending"),
                                                  ("id", "ascending"), ("node", "ascending")]).to_numpy()
    else:
        order = np.lexsort((t.column("node").to_numpy(), t.column("hi").to_numpy(), tier, t.column("label").to_numpy()))
    t = t.take(pa.array(order))
    node, label, length = (t.column(k).to_numpy() for k in ("node", "label", "length"))
    comp = np.cumsum(np.r_[True, label[1:] != label[:-1]]) - 1
    fixed = t.column("frozen").to_numpy(zero_copy_only=False).astype(bool) if frozen else None
    priority = nodes.priority_of(node) if fixed is None else np.where(fixed, -1, nodes.priority_of(node))
    sig = _sorted_signatures(gathered(), order, spill_bytes)
    try:
        st = settle_members(comp, priority, sig, policy, s.threshold, s.margin, s.rounds, fixed=fixed)
    finally:
        if isinstance(sig, DiskRows):
            sig.close()
    write_columns(g.path("sound", "state", f"p={p:05d}{WORK}"), node=node, label=label, length=length,
                  **{k: getattr(st, k) for k in STATE}, **({"frozen": fixed} if frozen else {}))
    check = st.fate == CHECK
    solid = check & (st.solid >= 0)
    wait = check & (st.wait >= 0) & ~st.wait_sure
    members = np.r_[np.flatnonzero(solid), np.flatnonzero(wait)]
    partner = np.r_[st.solid[solid], st.wait[wait]]
    ask = _reuse(g, s, p, node[members], node[partner])
    members, partner = members[ask], partner[ask]
    queue_checks(g, p, node[members], node[partner], np.maximum(length[members], 1) + np.maximum(length[partner], 1))
    return {"in": len(node), "checks": len(ask), "reused": int((~ask).sum()),
            "largest": sorted(np.bincount(comp).tolist(), reverse=True)[:LARGEST]}


def _reuse(g: GraphDir, s: Sound, p: int, member: np.ndarray, rep: np.ndarray) -> np.ndarray:
    """The pairs an earlier run checked (`exact_cache`) go straight to `finalize` (`exact-done/p=<p>/b=reused`);
    which of the pairs must still be checked (a mask)."""
    if s.cache is None or not len(member):
        return np.ones(len(member), bool)
    jaccard = exact_cache.lookup(s.cache, exact_cache.read_ids(s.ids(g)), member, rep)
    hit = ~np.isnan(jaccard)
    if hit.any():
        write_columns(g.path("sound", "exact-done", f"p={p:05d}", f"b=reused{WORK}"), node=member[hit], rep=rep[hit], jaccard=jaccard[hit])
    return ~hit


def _without_signatures(gathered: Iterator[pa.RecordBatch]) -> pa.Table | None:
    """The gathered rows' other columns (the signatures, 512 bytes a member, are read once, in place:
    `_sorted_signatures`); None when nothing was gathered. Copied out of each batch: a batch read from its bundle is
    one buffer, which a view of its other columns would keep alive, signatures and all (a 1M-member cluster's
    settling held its 512 MiB of signatures twice: 814 MiB at its peak)."""
    parts = [pa.Table.from_batches([batch.drop_columns(["sig"])]).take(np.arange(batch.num_rows)) for batch in gathered]
    return pa.concat_tables(parts) if parts else None


def _sorted_signatures(gathered: Iterator[pa.RecordBatch], order: np.ndarray, spill_bytes: int):
    """The signature matrix in `order` (of the gathered rows, batch after batch), filled batch by batch: one copy of a
    partition's signatures, never two; on local disk (`DiskRows`) when larger than `spill_bytes`, so that a giant
    cluster's settling holds a chunk of rows at a time (1M members: 512 MiB of signatures)."""
    at = np.empty(len(order), np.int64)
    at[order] = np.arange(len(order))
    out, done = None, 0
    for batch in gathered:
        column = batch.column("sig")
        if out is None:
            width = column.type.list_size
            out = np.empty((len(order), width), np.uint32) if len(order) * width * 4 <= spill_bytes else DiskRows(len(order), width)
        for start in range(0, len(column), FILL_ROWS):
            m = signature_matrix(column.slice(start, FILL_ROWS))
            if isinstance(out, DiskRows):
                out.fill(at[done:done + len(m)], m)
            else:
                out[at[done:done + len(m)]] = m
            done += len(m)
    return out


def finalize(g: GraphDir, s: Sound, p: int) -> dict:
    """Decide one partition of components with the exact checks' results; write the decisions and their evidence."""
    names = ["node", "label", "length", *STATE] + (["frozen"] if s.frozen else [])
    cols = read_columns(g.path("sound", "state", f"p={p:05d}{WORK}"), names,
                        {"node": U64, "label": U64, "length": np.int64, "rep": np.int64, "sim": np.float32, "fate": np.int8,
                         "solid": np.int64, "solid_sim": np.float32, "wait": np.int64, "wait_sim": np.float32, "wait_sure": bool,
                         "frozen": bool})
    node = cols["node"]
    done = read_columns(g.path("sound", "exact-done", f"p={p:05d}", f"*{WORK}"), ["node", "rep", "jaccard"],
                        {"node": U64, "rep": U64, "jaccard": np.float64})
    if s.cache is not None:   # every pair this partition used, found or checked now, for the next run
        exact_cache.store(s.cache, p, exact_cache.read_ids(s.ids(g)), done["node"], done["rep"], done["jaccard"])
    if not len(node):
        if s.settled is not None:
            settled.store(s.settled, ([], []), s.context, p, *(np.empty(0, t) for t in (U64, U64, bool, np.int64, np.float32,
                                                                                         np.uint8, np.int64)))
        return {"in": 0, "removed": 0}
    st = Settled(*(cols[k] for k in STATE))

    def measured(partner: np.ndarray) -> np.ndarray:  # exact Jaccard of (member, partner), NaN where not checked
        return pair_lookup(done["node"], done["rep"], done["jaccard"], node, np.where(partner >= 0, node[partner], 0), partner >= 0)

    solid_j, wait_j = measured(st.solid), measured(st.wait)
    gone, rep = finish(st, solid_j >= s.threshold, wait_j >= s.threshold)
    sim = st.sim.astype(np.float64)
    check = st.fate == CHECK
    kept_check = check & ~gone  # evidence of a member kept after its checks: the settled candidate, else the waiting one
    rep[kept_check] = np.where(st.solid[kept_check] >= 0, st.solid[kept_check], st.wait[kept_check])
    method = np.where(rep == np.arange(len(node)), REPRESENTATIVE, ESTIMATE)
    for use, j, est in ((check & (rep == st.solid), solid_j, st.solid_sim), (check & (rep == st.wait), wait_j, st.wait_sim)):
        has = use & ~np.isnan(j)
        sim[has], method[has] = j[has], EXACT
        sim[use & np.isnan(j)] = est[use & np.isnan(j)]
    frozen_rep = gone & cols["frozen"][rep] if s.frozen else None
    write_decisions(g, f"{p:05d}", node, cols["label"], gone, node[rep], sim, method.astype(np.uint8), cols["length"], frozen_rep)
    if s.settled is not None:   # this partition's components, for the next run (`curate.dedup.settled`)
        settled.store(s.settled, exact_cache.read_ids(s.ids(g)), s.context, p, node, cols["label"], gone, rep, sim,
                      method.astype(np.uint8), cols["length"])
    return {"in": len(node), "removed": int(gone.sum()), "exact_removed": int((gone & check).sum()), "sure": int((st.fate == REMOVED).sum())}


def shingling_of(s: Sound) -> Shingling:
    return Shingling(**{**s.shingling, "normalize": tuple(s.shingling["normalize"])})


def queue_checks(g: GraphDir, p: int, member: np.ndarray, rep: np.ndarray, size: np.ndarray,
                 bucket_hashes: int = BUCKET_HASHES) -> None:
    """Queue partition `p`'s pairs (member, rep) for the exact Jaccard: the pairs in buckets of at most about
    `bucket_hashes` shingles (`size`: a pair's characters, about its shingles), and in `SPREAD / partitions` of them
    where each still holds `SPREAD_HASHES`, one exact-b task each (`sound/checks/<p>-<bucket>`); and each docs shard the
    documents it must send, with their buckets (`sound/exact/from-<p>`, a batch a shard). The pairs come in component order,
    so a cut splits few components: a document is hashed once in each bucket that holds one of its pairs."""
    if not len(member):
        return
    total = np.cumsum(size)
    spread = -(-SPREAD // g.partitions)   # this partition's share of the SPREAD buckets
    per = min(bucket_hashes, max(SPREAD_HASHES, -(-int(total[-1]) // spread)))
    bucket = (total - 1) // per
    for k in np.unique(bucket):
        at = bucket == k
        write_columns(g.path("sound", "checks", f"{p:05d}-{int(k):05d}{WORK}"), node=member[at], rep=rep[at])
    want, in_bucket = np.concatenate([member, rep]), np.concatenate([bucket, bucket]).astype(U64)
    order = np.lexsort((in_bucket, want))
    first = np.r_[True, (want[order][1:] != want[order][:-1]) | (in_bucket[order][1:] != in_bucket[order][:-1])]
    want, in_bucket = want[order][first], in_bucket[order][first]
    bundles.send(g.path("sound", "exact"), f"{p:05d}", ((key, {"part": np.full(len(part["node"]), p, U64), **part})
                                                        for key, part in by_shard(want, node=want, bucket=in_bucket)))


def exact_a(g: GraphDir, origin: str, shards: Iterable[tuple[str, pa.Array]]) -> dict:
    """Per group of docs shards (`layout.group_of`; each: its tag, its texts): the texts of the documents queued for
    them, in one bundle (`sound/texts/from-<origin>`) with a batch for each bucket of pairs that needs some (a file per
    bucket cost ~1.2 ms: about what reading a shard's text column costs, once the pairs were spread over more buckets). A
    text is a seventh of its shingle hashes' bytes (3,000 characters: 24 kB of hashes), so the texts travel and each
    is hashed where its pairs are checked."""
    sent: dict[str, list[tuple[np.ndarray, pa.Array]]] = {}
    for tag, texts in shards:   # (a shard's whole text column at a time, its queued texts kept)
        c = bundles.receive(g.path("sound", "exact"), tag, ["node", "part", "bucket"], {"node": U64, "part": U64, "bucket": U64})
        order = np.lexsort((c["bucket"], c["part"]))
        part, bucket = c["part"][order], c["bucket"][order]
        bounds = np.flatnonzero(np.r_[True, (part[1:] != part[:-1]) | (bucket[1:] != bucket[:-1]), True])
        for a, b in zip(bounds[:-1], bounds[1:]):
            node = c["node"][order[a:b]]
            sent.setdefault(bucket_name(part[a], bucket[a]), []).append(
                (node, texts.take(pa.array(nodes.row_of(node))).cast(pa.large_string())))
    bundles.send(g.path("sound", "texts"), origin, ((name, {"node": np.concatenate([n for n, _ in got]),
                                                            "text": pa.concat_arrays([t for _, t in got])})
                                                    for name, got in sorted(sent.items())), name=str)
    return {"in": sum(len(n) for got in sent.values() for n, _ in got)}


def bucket_name(p: int, bucket: int) -> str:
    """An exact-b task's name: its partition and its bucket (`queue_checks`)."""
    return f"{int(p):05d}-{int(bucket):05d}"


def exact_b(g: GraphDir, s: Sound, bucket: str) -> dict:
    """Per bucket of pairs (`<partition>-<bucket>`): the exact Jaccard of each (member, kept member), for `finalize`;
    each document's shingles hashed once (`exact_kernel`), however many of the bucket's pairs it is in. Its texts come
    from the bundles of its documents' groups of shards only (`bundles.receive_from`)."""
    pairs = read_columns(g.path("sound", "checks", f"{bucket}{WORK}"), ["node", "rep"], {"node": U64, "rep": U64})
    senders = sorted({group_of(key) for key in np.unique(nodes.shard_key(np.concatenate([pairs["node"], pairs["rep"]])))})
    t = bundles.receive_from(g.path("sound", "texts"), senders, bucket, ["node", "text"], {"node": U64, "text": pa.large_string()})
    held = t["node"]
    values, offsets = shingle_sets(t["text"], shingling_of(s))
    by_node = np.argsort(held, kind="stable")
    sim = jaccard_pairs(values, offsets, _held(held, by_node, pairs["node"], bucket), values, offsets,
                        _held(held, by_node, pairs["rep"], bucket))
    write_columns(g.path("sound", "exact-done", f"p={bucket.split('-')[0]}", f"b={bucket}{WORK}"),
                  node=pairs["node"], rep=pairs["rep"], jaccard=sim)
    return {"in": len(sim), "passed": int((sim >= s.threshold).sum())}


def _held(held: np.ndarray, by_node: np.ndarray, wanted: np.ndarray, bucket: str) -> np.ndarray:
    """The row of each wanted node among the hash sets a bucket gathered."""
    at = by_node[np.minimum(np.searchsorted(held[by_node], wanted), len(held) - 1)]
    if not np.array_equal(held[at], wanted):
        raise ValueError(f"exact check {bucket}: a document's shingle hashes are missing (re-run the dedup step)")
    return at
