"""The dedup stage: MinHash band buckets -> candidate edges -> connected components -> keep policy.

Global work is split into hash partitions of nodes (see `curate.dedup.nodes`), each a Ray task:
  buckets   per band partition: group (band, key), emit star edges and node ranks by node partition
  init      per node partition: initial labels (every node its own rank)
  send/receive, repeated: min-label propagation until no label changes
  decide    per node partition: the policy marks removed nodes, by the docs shard of their cluster's label
  resolve   per docs shard: the id of each cluster's kept document
  finalize  per docs shard: ledger entries (reason `minhash_duplicate_of:<source>`, detail `kept <id>`)
            and `RUN/<stage>/clusters/<source>/<shard>.parquet` (id, source, cluster, kept)
No task holds more than one partition's edges or labels; nothing ever holds every signature.
"""

from __future__ import annotations

import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from curate.config.schema import Field
from curate.dedup import components, nodes
from curate.dedup.candidates import bucket_edges
from curate.dedup.layout import read_columns, read_tables, shard_numbers, shard_tag, write_columns
from curate.dedup.policy import POLICIES, removed_mask
from curate.dedup.shuffle import partition_of, split
from curate.errors import CurateError
from curate.io import fs
from curate.io.parquet import write_table
from curate.runner.tasks import Task
from curate.stages.base import ShardStage

U64 = np.uint64


class DedupStage(ShardStage):
    REASON = "minhash_duplicate_of"
    OPTIONS = {
        "minhash": Field((str,), default=None, nullable=True, doc="the minhash stage to read (default: the last one before this)"),
        "policy": Field((str,), default="cross_source", choices=list(POLICIES)),
        "max_rounds": Field((int,), default=100, min=1, doc="label propagation rounds before giving up"),
        "verify": Field((float,), default=None, nullable=True, min=0.0, max=1.0,
                        doc="keep a candidate pair only if the exact Jaccard of its shingle sets reaches this"),
    }

    # ---- planning -------------------------------------------------------------------------------
    def _minhash(self):
        from curate.stages.minhash import MinhashStage

        names = [s for s in self.previous if self.pipeline.stage(s).kind == "minhash"]
        name = self.options["minhash"] or (names[-1] if names else None)
        if name is None or name not in names:
            raise CurateError(f"stage '{self.name}' needs a minhash stage before it (options.minhash names it)")
        cfg = self.pipeline.stage(name)
        return MinhashStage(name, cfg.options, self.pipeline, self.run, self.previous[: self.previous.index(name)])

    def owned_paths(self) -> list[str]:
        return [self.run.path(self.name), *super().owned_paths()]

    def _work(self, *parts: str) -> str:
        return self.run.path(self.name, "work", *parts)

    def _phase(self, phase: str, key: str, payload) -> Task:
        return Task(self.name, "_phase", f"{phase}-{key}", f"{phase} partition {key}", payload=(phase, payload))

    def _phase_marker(self, task: Task) -> str:
        return self.run.path("_state", self.name, "_phases", task.payload[0], task.shard + ".json")

    # ---- execution ------------------------------------------------------------------------------
    def _bands(self, tasks: list[Task], runner) -> tuple[str, int]:
        """Where the band keys are and in how many partitions: the minhash stage's."""
        minhash = self._minhash()
        return minhash.bands_root(), minhash.partition_count()

    def _live_count(self, task: Task) -> int:
        """Documents of this shard that reached the band keys (the stage's `in`)."""
        return self.run.read_json(self.run.marker(self._minhash().name, task.source, task.shard))["kept"]

    def execute(self, tasks: list[Task], runner) -> None:
        self.numbers = shard_numbers(tasks, self.pipeline.priority)
        self.bands_root, self.partitions = self._bands(tasks, runner)
        self.by_tag = {shard_tag(*v): k for k, v in self.numbers.items()}
        parts = range(self.partitions)
        run = lambda label, ts: runner.run(self, f"{self.name}: {label}", ts, self._phase_marker)
        run("buckets", [self._phase("buckets", f"{p:05d}", p) for p in parts])
        if self.options.get("verify") is not None:
            shards = [(t.source, t.shard) for t in tasks]
            run("verify a", [self._phase("verify_a", shard_tag(*self.numbers[s]), s) for s in shards])
            run("verify b", [self._phase("verify_b", shard_tag(*self.numbers[s]), s) for s in shards])
        run("init", [self._phase("init", f"{p:05d}", p) for p in parts])
        for rnd in range(self.options["max_rounds"]):
            run(f"send {rnd}", [self._phase("send", f"{rnd:03d}-{p:05d}", (rnd, p)) for p in parts])
            receive = [self._phase("receive", f"{rnd:03d}-{p:05d}", (rnd, p)) for p in parts]
            run(f"receive {rnd}", receive)
            changed = sum(self.run.read_json(self._phase_marker(t))["changed"] for t in receive)
            if changed == 0:
                self.final_round = rnd + 1
                break
        else:
            raise CurateError(f"stage '{self.name}': components did not converge in {self.options['max_rounds']} rounds")
        run("decide", [self._phase("decide", f"{p:05d}", (self.final_round, p)) for p in parts])
        if self._by_id():
            run("idrank", [self._phase("idrank", shard_tag(*self.numbers[(t.source, t.shard)]), (t.source, t.shard)) for t in tasks])
            run("choose", [self._phase("choose", f"{p:05d}", p) for p in parts])
        shards = [self._phase("resolve", shard_tag(*self.numbers[(t.source, t.shard)]), (t.source, t.shard)) for t in tasks]
        run("resolve", shards)
        runner.run(self, self.name, tasks, lambda t: self.run.marker(self.name, t.source, t.shard))

    def run_task(self, task: Task) -> dict:
        if task.payload is None:
            return self._finalize(task)
        phase, arg = task.payload
        started = time.monotonic()
        result = getattr(self, f"_{phase}")(arg)
        result["seconds"] = round(time.monotonic() - started, 4)
        self.run.write_json(self._phase_marker(task), result)
        return result

    # ---- phases ---------------------------------------------------------------------------------
    def _buckets(self, p: int) -> dict:
        cols = read_columns(fs.join(self.bands_root, f"p={p:05d}", "*.parquet"), ["band", "key", "node", "hi"],
                            {"band": np.uint16, "key": U64, "node": U64, "hi": U64})
        u, v = bucket_edges(cols["band"], cols["key"], cols["node"])
        hi_u, hi_v = _lookup(cols["node"], cols["hi"], u), _lookup(cols["node"], cols["hi"], v)
        if self.options.get("verify") is not None:  # candidates go to the docs shard of u first
            for key, part in _by_shard(u, u=u, v=v, hi_u=hi_u, hi_v=hi_v):
                write_columns(self._work("candidates", f"s={_tag(key)}", f"from-{p:05d}.parquet"), **part)
        else:
            self._write_edges(f"{p:05d}", u, v, hi_u, hi_v)
        return {"in": len(cols["node"]), "edges": len(u)}

    def _write_edges(self, origin: str, u, v, hi_u, hi_v) -> None:
        """Edges in both directions by node partition, and each linked node's rank."""
        both_u, both_v = np.concatenate([u, v]), np.concatenate([v, u])
        for q, part in split(partition_of(both_u, self.partitions), self.partitions, u=both_u, v=both_v):
            write_columns(self._work("edges", f"p={q:05d}", f"from-{origin}.parquet"), **part)
        linked, first = np.unique(both_u, return_index=True)
        hi = np.concatenate([hi_u, hi_v])[first]
        for q, part in split(partition_of(linked, self.partitions), self.partitions, node=linked, hi=hi):
            write_columns(self._work("nodes", f"p={q:05d}", f"from-{origin}.parquet"), **part)

    def _shingle_sets(self, source: str, shard: str, rows: np.ndarray) -> dict:
        """Stable 64-bit hashes of each requested row's shingles (the minhash stage's shingling)."""
        import xxhash

        from curate.stages.minhash import MinhashStage

        shingling = MinhashStage.spec_of(self._minhash().options).shingling
        wanted = np.unique(rows)
        with fs.open_input(self.run.docs(source, shard)) as handle:
            texts = pq.read_table(handle, columns=["text"]).column("text").take(pa.array(wanted)).to_pylist()
        h = xxhash.xxh3_64_intdigest
        return {int(r): np.unique(np.fromiter((h(x.encode()) for x in shingling.shingle_strings(t)), U64))
                for r, t in zip(wanted, texts)}

    def _verify_a(self, arg) -> dict:
        """Attach u's shingle hashes to each candidate and send it to the docs shard of v."""
        source, shard = arg
        tag = shard_tag(*self.numbers[(source, shard)])
        c = read_columns(self._work("candidates", f"s={tag}", "*.parquet"), ["u", "v", "hi_u", "hi_v"],
                         {"u": U64, "v": U64, "hi_u": U64, "hi_v": U64})
        sets = self._shingle_sets(source, shard, nodes.row_of(c["u"]))
        for key, part in _by_shard(c["v"], **c):
            shingles = [sets[int(r)] for r in nodes.row_of(part["u"])]
            table = pa.table({**{k: pa.array(v) for k, v in part.items()},
                              "shingles_u": pa.array(shingles, pa.list_(pa.uint64()))})
            write_table(self._work("verify", f"s={_tag(key)}", f"from-{tag}.parquet"), table, compression="lz4")
        return {"in": len(c["u"])}

    def _verify_b(self, arg) -> dict:
        """Exact Jaccard of each candidate pair; pairs at or above `verify` become edges."""
        source, shard = arg
        tag = shard_tag(*self.numbers[(source, shard)])
        table = read_tables(self._work("verify", f"s={tag}", "*.parquet"))
        if table is None:
            return {"in": 0, "kept_pairs": 0}
        v = table.column("v").to_numpy()
        sets = self._shingle_sets(source, shard, nodes.row_of(v))
        keep = np.array([_jaccard(np.asarray(a, U64), sets[int(r)]) >= self.options["verify"]
                         for a, r in zip(table.column("shingles_u").to_pylist(), nodes.row_of(v))], dtype=bool)
        cols = {k: table.column(k).to_numpy()[keep] for k in ("u", "v", "hi_u", "hi_v")}
        self._write_edges(f"v{tag}", cols["u"], cols["v"], cols["hi_u"], cols["hi_v"])
        return {"in": len(v), "kept_pairs": int(keep.sum())}

    def _init(self, p: int) -> dict:
        cols = read_columns(self._work("nodes", f"p={p:05d}", "*.parquet"), ["node", "hi"], {"node": U64, "hi": U64})
        node, first = np.unique(cols["node"], return_index=True)
        hi = cols["hi"][first]
        write_columns(self._work("labels", "r=000", f"p={p:05d}.parquet"), node=node, hi=hi, label_hi=hi, label_lo=node)
        return {"in": len(node)}

    def _labels(self, rnd: int, p: int) -> dict[str, np.ndarray]:
        return read_columns(self._work("labels", f"r={rnd:03d}", f"p={p:05d}.parquet"), ["node", "hi", "label_hi", "label_lo"],
                            {"node": U64, "hi": U64, "label_hi": U64, "label_lo": U64})

    def _send(self, arg) -> dict:
        rnd, p = arg
        lab = self._labels(rnd, p)
        edges = read_columns(self._work("edges", f"p={p:05d}", "*.parquet"), ["u", "v"], {"u": U64, "v": U64})
        target, hi, lo = components.send(edges["u"], edges["v"], lab["node"], lab["label_hi"], lab["label_lo"])
        for q, part in split(partition_of(target, self.partitions), self.partitions, target=target, hi=hi, lo=lo):
            write_columns(self._work("messages", f"r={rnd:03d}", f"p={q:05d}", f"from-{p:05d}.parquet"), **part)
        return {"in": len(lab["node"]), "messages": len(target)}

    def _receive(self, arg) -> dict:
        rnd, p = arg
        lab = self._labels(rnd, p)
        msg = read_columns(self._work("messages", f"r={rnd:03d}", f"p={p:05d}", "*.parquet"), ["target", "hi", "lo"],
                           {"target": U64, "hi": U64, "lo": U64})
        hi, lo, changed = components.receive(lab["node"], lab["label_hi"], lab["label_lo"], msg["target"], msg["hi"], msg["lo"])
        write_columns(self._work("labels", f"r={rnd + 1:03d}", f"p={p:05d}.parquet"), node=lab["node"], hi=lab["hi"],
                      label_hi=hi, label_lo=lo)
        return {"in": len(lab["node"]), "changed": changed}

    def _decide(self, arg) -> dict:
        rnd, p = arg
        lab = self._labels(rnd, p)
        node, label = lab["node"], lab["label_lo"]
        if self._by_id():  # the kept document is chosen by id once ids are attached (phases idrank, choose)
            for key, part in _by_shard(node, node=node, label=label):
                write_columns(self._work("idrank", f"s={_tag(key)}", f"from-{p:05d}.parquet"), **part)
            return {"in": len(node)}
        gone = removed_mask(self.options["policy"], node, label)
        self._write_decisions(f"{p:05d}", node, label, gone, label)
        return {"in": len(node), "removed": int(gone.sum())}

    def _by_id(self) -> bool:
        """Policy `all` with `tie_break: id`: the smallest id of the best source's documents is kept."""
        return (self.options["policy"] == "all" and "minhash" in self.OPTIONS
                and self._minhash().options["tie_break"] == "id")

    def _write_decisions(self, origin: str, node, label, gone, kept) -> None:
        """Removed nodes (with the node kept in their place) by the kept node's shard; members by their own."""
        for key, part in _by_shard(kept[gone], node=node[gone], label=kept[gone]):
            write_columns(self._work("removed", f"s={_tag(key)}", f"from-{origin}.parquet"), **part)
        for key, part in _by_shard(node, node=node, label=label, removed=gone):
            write_columns(self._work("members", f"s={_tag(key)}", f"from-{origin}.parquet"), **part)

    def _idrank(self, arg) -> dict:
        """Attach each member's id, then send members to the partition of their cluster."""
        source, shard = arg
        tag = shard_tag(*self.numbers[(source, shard)])
        m = read_columns(self._work("idrank", f"s={tag}", "*.parquet"), ["node", "label"], {"node": U64, "label": U64})
        ids = self._shard_ids(source, shard).take(pa.array(nodes.row_of(m["node"]))).to_pylist()
        part_of = partition_of(m["label"], self.partitions)
        for q in np.unique(part_of):
            rows = np.flatnonzero(part_of == q)
            table = pa.table({"node": pa.array(m["node"][rows]), "label": pa.array(m["label"][rows]),
                              "id": pa.array([ids[i] for i in rows], pa.string())})
            write_table(self._work("choose", f"p={int(q):05d}", f"from-{tag}.parquet"), table, compression="lz4")
        return {"in": len(m["node"])}

    def _choose(self, p: int) -> dict:
        """Per cluster: keep the best source's smallest id; everything else is removed in its favour."""
        t = read_tables(self._work("choose", f"p={p:05d}", "*.parquet"))
        if t is None:
            return {"in": 0, "removed": 0}
        node, label, ids = t.column("node").to_numpy(), t.column("label").to_numpy(), t.column("id").to_pylist()
        prio = nodes.priority_of(node)
        kept_of: dict = {}
        for i in sorted(range(len(node)), key=lambda i: (int(label[i]), int(prio[i]), ids[i])):
            kept_of.setdefault(int(label[i]), node[i])
        kept = np.array([kept_of[int(x)] for x in label], dtype=U64)
        gone = node != kept
        self._write_decisions(f"{p:05d}", node, label, gone, kept)
        return {"in": len(node), "removed": int(gone.sum())}

    def _shard_ids(self, source: str, shard: str) -> pa.Array:
        with fs.open_input(self.run.docs(source, shard)) as handle:
            return pq.read_table(handle, columns=["id"]).column("id").combine_chunks()

    def _resolve(self, arg) -> dict:
        source, shard = arg
        tag = shard_tag(*self.numbers[(source, shard)])
        removed = read_columns(self._work("removed", f"s={tag}", "*.parquet"), ["node", "label"], {"node": U64, "label": U64})
        ids = self._shard_ids(source, shard)
        kept_id = ids.take(pa.array(nodes.row_of(removed["label"]))).to_numpy(zero_copy_only=False)
        for key, part in _by_shard(removed["node"], node=removed["node"], kept=kept_id.astype(object)):
            write_table(self._work("resolved", f"s={_tag(key)}", f"from-{tag}.parquet"),
                        pa.table({"node": pa.array(part["node"]), "kept_id": pa.array(list(part["kept"]), pa.string()),
                                  "kept_source": pa.array([source] * len(part["node"]), pa.string())}))
        return {"in": len(removed["node"])}

    def _finalize(self, task: Task) -> dict:
        started = time.monotonic()
        tag = shard_tag(*self.numbers[(task.source, task.shard)])
        ids = self._shard_ids(task.source, task.shard)
        members = read_columns(self._work("members", f"s={tag}", "*.parquet"), ["node", "label", "removed"],
                               {"node": U64, "label": U64, "removed": bool})
        order = np.argsort(members["node"])
        rows = nodes.row_of(members["node"][order])
        write_table(self.run.path(self.name, "clusters", task.source, f"{task.shard}.parquet"),
                    pa.table({"id": ids.take(pa.array(rows)), "source": pa.array([task.source] * len(rows), pa.string()),
                              "cluster": pa.array(members["label"][order]), "kept": pa.array(~members["removed"][order])}))
        table = read_tables(self._work("resolved", f"s={tag}", "*.parquet"))
        resolved = {} if table is None else dict(zip(table.column("node").to_pylist(), zip(
            table.column("kept_id").to_pylist(), table.column("kept_source").to_pylist())))
        gone = sorted(resolved)
        gone_rows = nodes.row_of(np.array(gone, dtype=U64))
        reasons = [f"{self.REASON}:{resolved[n][1]}" for n in gone]
        details = [f"kept {resolved[n][0]} ({resolved[n][1]}); cluster {n_label}" for n, n_label in
                   zip(gone, _labels_of(members, gone))]
        counts = self.write_ledger(task, [ids.take(pa.array(gone_rows, pa.int64()))] if gone else [],
                                   [pa.array(reasons, pa.string())] if gone else [],
                                   [pa.array(details, pa.string())] if gone else None)
        n_in = self._live_count(task)
        return self.finish_task(task, started, n_in, counts)


def _tag(key: int) -> str:
    return shard_tag(int(key) >> 28, int(key) & ((1 << 28) - 1))


def _by_shard(keys_from: np.ndarray, **columns: np.ndarray):
    """Group columns by the docs shard of `keys_from` nodes: yields (shard key, {name: rows})."""
    keys = nodes.shard_key(keys_from)
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]) if len(keys) else np.empty(0, np.int64)
    ends = np.r_[starts[1:], len(keys)]
    for s, e in zip(starts, ends):
        rows = order[s:e]
        yield int(keys[s]), {name: col[rows] for name, col in columns.items()}


def _jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """|a & b| / |a | b| of two sorted unique hash arrays."""
    if not len(a) and not len(b):
        return 1.0
    inter = len(np.intersect1d(a, b, assume_unique=True))
    return inter / (len(a) + len(b) - inter)


def _lookup(keys: np.ndarray, values: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    order = np.argsort(keys, kind="stable")
    at = np.searchsorted(keys[order], wanted)
    return values[order][at]


def _labels_of(members: dict, wanted: list) -> list:
    order = np.argsort(members["node"])
    at = np.searchsorted(members["node"][order], np.array(wanted, dtype=U64))
    return members["label"][order][at].tolist()
