"""The minhash stage: signatures and LSH band keys per docs shard, written by hash partition of key.

Output: `RUN/_work/<stage>/bands/n=<partitions>/p=<partition>/<source>/<shard>.arrow` rows (band, key, row,
tie) for a dedup step, where `row` says which document of the docs shard and `tie` ranks it within its source
(`tie_break`), and `signatures/<source>/<shard>.arrow` (Arrow IPC work files, `curate.dedup.layout.WORK`). Nothing
in them depends on another shard or on the priority (the dedup step numbers the nodes,
`curate.dedup.band_cache.candidates`), so an append computes only new or changed shards
(`[minhash] 11 of 12 shards reused, 1 new`); when the partition count changes (one per 250,000 documents by
default) the kept shards' band rows are split again (`bands/n=<partitions>/`), never recomputed. It publishes
where the band keys are, how many partitions and how documents were shingled. Before running it prints the
S-curve of its bands x rows.
"""

from __future__ import annotations

import logging
from dataclasses import asdict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.common.schema import SEED_MAX, Field
from curate.dedup import nodes
from curate.dedup.bands import choose_bands, format_s_curve
from curate.dedup.layout import WORK, partitions_kept, repartition
from curate.dedup.presets import PRESETS, get_preset
from curate.dedup.signature_store import MinhashSink, fixed_lists, signatures_path
from curate.dedup.signatures import MinHasher
from curate.dedup.spec import MinHashSpec
from curate.errors import ConfigError
from curate.io import fs
from curate.rundir import MinhashRecord
from curate.rundir.layout import ACCOUNTING
from curate.stages.facets import WARM_TEXT, Facets, Kernel
from curate.stages.registry import stage
from curate.stages.resources import task_cores
from curate.stages.phase import Phase, Task
from curate.stages.shard import Output, ShardRef, ShardStage

log = logging.getLogger("curate")
U64 = np.uint64
NUM_PERM_MAX = 8192   # a signature of 32 KB per document; choosing bands for a threshold takes seconds at this size


def rank_key(values: pa.Array) -> np.ndarray:
    """uint32 where smaller means a higher value (nulls last): order-preserving float bits, inverted."""
    x = pc.fill_null(values.cast(pa.float32()), float("-inf")).to_numpy(zero_copy_only=False).astype(np.float32)
    bits = x.view(np.uint32)
    ascending = np.where(bits & np.uint32(0x80000000), ~bits, bits | np.uint32(0x80000000))
    return (np.uint32(0xFFFFFFFF) - ascending).astype(np.uint64)


def _repartition(payload: tuple) -> dict:
    return repartition(*payload)


def warm_signatures() -> None:
    from curate.dedup.signatures import compute_signatures

    compute_signatures(pa.array([WARM_TEXT, "x"]), "zyda2")  # one compiled function serves every preset


SIGNATURES = Kernel("the MinHash signature kernel", "curate.stages.minhash:warm_signatures", ("curate.dedup.kernel:signatures_range",))


class MinhashFacets(Facets):
    KERNELS = (SIGNATURES,)


@stage("minhash")
class MinhashStage(ShardStage):
    PRODUCES = ("minhash",)
    VERSION = 3                     # 2: files per docs shard, without node numbers (reusable by an append)
                                    # 3: band keys and signatures in Arrow IPC (`layout.WORK`), not Parquet
    ROW_NUMBERS = True
    CONCURRENT = True
    FACETS = MinhashFacets
    HOW_ONLY = ("threads",)
    OPTIONS = {
        "preset": Field((str,), default="zyda2", choices=sorted(PRESETS)),
        "unit": Field((str,), default=None, nullable=True, choices=["char", "word"]),
        "n": Field((int,), default=None, nullable=True, min=1, max=1000, doc="shingle size"),
        "normalize": Field((list,), default=None, nullable=True, item=Field((str,))),
        "num_perm": Field((int,), default=None, nullable=True, min=1, max=NUM_PERM_MAX),
        "seed": Field((int,), default=None, nullable=True, min=0, max=SEED_MAX),
        "hash": Field((str,), default=None, nullable=True, choices=["poly64", "murmur3", "sha1"],
                      doc="shingle hash; sha1 gives datasketch-identical signatures"),
        "bands": Field((int,), default=None, nullable=True, min=1, max=NUM_PERM_MAX),
        "rows": Field((int,), default=None, nullable=True, min=1, max=NUM_PERM_MAX),
        "threshold": Field((float,), default=None, nullable=True, min=0.0, max=1.0,
                           doc="choose bands x rows for this Jaccard threshold (datasketch's optimiser)"),
        "partitions": Field((int,), default=None, nullable=True, min=1, max=100_000,
                            doc="hash partitions of band keys for the dedup stage (default: one per 250,000 documents)"),
        "tie_break": Field((str,), default="first",
                           doc="which document of a source a dedup `all` policy keeps: first (input order), id (smallest), "
                               "longer, or a numeric column (higher wins)"),
        "threads": Field((int,), default=None, nullable=True, min=1, max=4096,
                         doc="threads per task for the signature kernel (default: every core inline, 1 per Ray task)"),
    }

    @classmethod
    def validate_options(cls, options, sources, file, key):
        try:
            cls.spec_of(options)
        except ValueError as exc:
            raise ConfigError(file, key, str(exc)) from None
        if len(sources) > nodes.MAX_SOURCES:
            raise ConfigError(file, key, f"at most {nodes.MAX_SOURCES} sources can be deduplicated together")

    @staticmethod
    def spec_of(options: dict) -> MinHashSpec:
        changes = {k: options[k] for k in ("unit", "n", "num_perm", "seed", "hash") if options[k] is not None}
        if options["normalize"] is not None:
            changes["normalize"] = tuple(options["normalize"])
        spec = get_preset(options["preset"], **changes)
        if options["threshold"] is not None:
            bands, rows = choose_bands(options["threshold"], spec.num_perm)
            spec = spec.replace(bands=bands, rows=rows)
        if options["bands"] is not None or options["rows"] is not None:
            spec = spec.replace(bands=options["bands"] or spec.bands, rows=options["rows"] or spec.rows)
        return spec


    def columns(self) -> list[str]:
        tie = self.options["tie_break"]
        return ["id", "text"] + ([tie] if tie not in ("first", "longer", "id") else [])

    def execute(self, tasks, run_phase) -> None:
        spec = self.spec_of(self.options)
        log.info("%s: %s shingles (n=%d), %d permutations, %d bands x %d rows\n%s", self.name, spec.shingling.unit,
                 spec.shingling.n, spec.num_perm, spec.bands, spec.rows, format_s_curve(spec.bands, spec.rows, num_perm=spec.num_perm))
        for old in fs.glob(self.run.work(self.name, "bands", "p=*")) + fs.glob(self.run.work(self.name, "signatures", "s=*")):
            fs.remove(old)   # an earlier version's files, numbered by shard tag
        partitions = self.partitions_now()
        before = self.run.find_record(self.name, MinhashRecord)
        self.run.publish(self.name, MinhashRecord(self.run.work(self.name, "bands", f"n={partitions}"), partitions,
                                                  asdict(spec.shingling), self.options["tie_break"],
                                                  self.run.work(self.name, "signatures")))
        self.repartition(tasks, partitions, before.partitions if before is not None else None, run_phase)
        super().execute(tasks, run_phase)

    def repartition(self, tasks, partitions: int, before: int | None, run_phase) -> None:
        """Band rows of kept shards split by another partition count (the corpus grew past a multiple of 250,000
        documents) are split again, not computed again; then the other counts' folders go."""
        root = self.run.work(self.name, "bands")
        held: dict[tuple[str, str], set[int]] = {}
        for path in fs.glob(fs.join(root, "n=*", "p=*", "*", f"*{WORK}")):
            n, _, source, name = path.rstrip("/").rsplit("/", 4)[-4:]
            held.setdefault((source, name.removesuffix(WORK)), set()).add(int(n[2:]))
        moves, done = [], fs.files_under(self.run.state(self.name, ACCOUNTING))
        for t in tasks:
            other = held.get((t.payload.source, t.payload.shard), set()) - {partitions}
            if other and self.run.marker(self.name, ACCOUNTING, t.key) in done:
                old = before if before in other else max(other)
                moves.append(Task(t.key, t.where, (root, old, partitions, t.payload.source, t.payload.shard), t.source, t.shard))
        if moves:
            log.info("[%s] band keys of %d shards split again into %d partitions (signatures reused)", self.name, len(moves), partitions)
            run_phase(Phase("repartition", moves, _repartition, concurrent=True))
        for folder in fs.glob(fs.join(root, "n=*")):
            if folder.rstrip("/").rsplit("/", 1)[-1] != f"n={partitions}":
                fs.remove(folder)
        fs.remove(self.run.state(self.name, "repartition"))

    def partitions_now(self) -> int:
        """The hash partitions of band keys: the option, else one per 250,000 documents that reach this step, or the
        count an earlier run of this step chose while that still holds them (`partitions_kept`)."""
        if self.options["partitions"]:
            return self.options["partitions"]
        docs_step = self.previous[-1] if self.previous else self.upstream["docs"]
        before = self.run.find_record(self.name, MinhashRecord)
        return partitions_kept(before.partitions if before is not None else None,
                               sum(m["kept"] for m in self.run.markers(docs_step)))

    def source_outputs(self, source: str) -> list[str]:
        """Its work files of the source too (band rows in every partition, signatures), so a changed shard's go."""
        bands = [fs.join(p, source) for p in fs.glob(self.run.work(self.name, "bands", "n=*", "p=*"))]
        return [*super().source_outputs(source), *bands, self.run.work(self.name, "signatures", source)]

    def setup(self) -> None:
        self.hasher = MinHasher(self.spec_of(self.options), threads=self.options["threads"] or task_cores())
        record = self.run.record(self.name, MinhashRecord)
        self.partitions, self.bands = record.partitions, record.bands

    def sink(self, shard: ShardRef) -> MinhashSink:
        name = f"{shard.shard}{WORK}"
        return MinhashSink(lambda p: fs.join(self.bands, f"p={p:05d}", shard.source, name), self.partitions,
                           signatures_path(self.run.work(self.name, "signatures"), shard.source, shard.shard))

    def process(self, table: pa.Table, shard: ShardRef) -> Output | None:
        if not table.num_rows:
            return None
        texts = table.column("text").combine_chunks()
        signatures = self.hasher(texts)
        valid = signatures.valid
        keys = self.hasher.band_keys(signatures)[valid]
        length = pc.utf8_length(texts).to_numpy(zero_copy_only=False).astype(np.int64)[valid]
        return Output(rows=pa.table({"row": table.column("_row").to_numpy()[valid].astype(U64), "tie": self._tie_rank(table, texts)[valid],
                                     "keys": fixed_lists(keys), "sig": fixed_lists(signatures.values[valid]), "length": length}))

    def _tie_rank(self, table: pa.Table, texts: pa.Array) -> np.ndarray:
        tie = self.options["tie_break"]
        if tie in ("first", "id"):  # `id` is decided by the dedup stage once ids are attached
            return np.zeros(table.num_rows, U64)
        if tie == "longer":
            return rank_key(pc.utf8_length(texts))
        return rank_key(table.column(tie).combine_chunks())
