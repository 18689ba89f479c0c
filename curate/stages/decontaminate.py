"""The decontaminate stage: training documents that contain evaluation text, each flag traced to its eval item.

Phase `scan` (keyed by the index: the eval sets' grams and n) looks every live document's word n-grams up in the
eval sets' index and stores each hit: `RUN/_work/<step>/scan/<source>/<shard>.parquet` (id, gram, length, word
position, byte span) and, per gram, how many documents hold it (`counts/`). Between the phases the driver sums the
counts over the whole corpus: grams found in more than `frequent_docs` documents count only beside a rarer gram.
The accounting phase decides from the stored matches alone (curate.decontam.decide), so new thresholds or a new
action re-decide without scanning again. It writes `RUN/<step>/<source>/<shard>.parquet`, one row per (document,
item) with a counting match (the `contamination` view of `curate query`), and, with `action: remove`, ledger rows
`decontaminate:<set>` whose detail names the item.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from curate.common.schema import COUNT_MAX, Field
from curate.decontam.decide import decide
from curate.decontam.evalsets import SET_OPTIONS, load_set
from curate.decontam.index import MATCHES, EvalIndex, doc_counts
from curate.decontam.record import DecontaminateRecord
from curate.errors import ConfigError
from curate.io import fs
from curate.io.parquet import ParquetSink, read_table, write_table
from curate.run_folders import RESERVED
from curate.rundir.tables import SourceSink
from curate.stages.facets import WARM_TEXT, Facets, Kernel
from curate.stages.phase import Phase
from curate.stages.reads import file_identity
from curate.stages.registry import stage
from curate.stages.shard import Output, ShardRef, ShardStage, removals

EXCERPT = 400   # characters of the matched passage and of the eval item kept in the table
TABLE = pa.schema([("id", pa.string()), ("set", pa.string()), ("item", pa.string()), ("flagged", pa.bool_()),
                   ("overlap", pa.float64()), ("grams", pa.int32()), ("item_grams", pa.int32()), ("longest_words", pa.int32()),
                   ("passage", pa.string()), ("eval_text", pa.string()), ("hashes", pa.list_(pa.uint64()))])


def warm_scan() -> None:
    from curate.decontam.evalsets import EvalItem

    EvalIndex([EvalItem("warm", "0", ("second line with punctuation numbers",))], ["warm"], 3, 2).scan(pa.array(["a", "b"]),
                                                                                                     pa.array([WARM_TEXT, "x"]))


SCAN = Kernel("the decontamination word-hash and lookup kernels", "curate.stages.decontaminate:warm_scan",
              ("curate.decontam.lookup:find_grams", "curate.decontam.ngrams:prefix_sums", "curate.decontam.normalize:_scan"))


class DecontaminateFacets(Facets):
    REPORT = ("curate.report.decontam:SECTION",)

    @classmethod
    def lines(cls, run, step, rows, order):
        record = run.find_record(step, DecontaminateRecord)
        return [] if record is None else record.lines(step, run.markers(step))


@stage("decontaminate")
class DecontaminateStage(ShardStage):
    PRODUCES = ("contamination",)
    FACETS = DecontaminateFacets
    VERSION = 2   # 2: text folded to NFKD without marks, case-folded; scripts without spaces split into characters
    REMOVES = True
    COLUMNS = ["id", "text"]
    OPTIONS = {
        "sets": Field((dict,), item=Field((dict,), keys=SET_OPTIONS), doc="eval set name -> {path, format, fields}"),
        "n": Field((int,), default=13, min=2, max=1000, doc="words per n-gram (GPT-3: 13)"),
        "min_short_words": Field((int,), default=8, min=1, max=1000, doc="a field shorter than n words matches only whole, and only "
                                                               "with at least this many words (shorter: never)"),
        "frequent_docs": Field((int,), default=100, min=1, max=COUNT_MAX, doc="a gram in more training documents than this counts only "
                                                               "in a run with a rarer gram (boilerplate, common phrases)"),
        "min_overlap": Field((float,), default=0.5, min=0.0, max=1.0, doc="flag when this share of an item's grams is found"),
        "min_match_words": Field((int,), default=50, min=1, max=1_000_000, doc="... or a contiguous match of at least this many words"),
        "action": Field((str,), default="remove", choices=["remove", "report"], doc="remove flagged documents, or only flag them"),
    }

    @classmethod
    def validate_options(cls, options, sources, file, key):
        if not options["sets"]:
            raise ConfigError(file, f"{key}.sets", "expected at least one eval set: name -> {path: FILE, fields: {...}}")
        for name in options["sets"]:
            if not name or ":" in name or "," in name:
                raise ConfigError(file, f"{key}.sets.{name}", "a set's name goes into ledger reasons: no ':' or ','")
        if key.split(".", 1)[-1] in RESERVED:
            raise ConfigError(file, key, "a decontaminate step writes its table to RUN/<step name>/, a folder of every run; rename the step")

    # ---- driver ---------------------------------------------------------------------------------
    def index(self) -> EvalIndex:
        if getattr(self, "_index", None) is None:
            names = sorted(self.options["sets"])   # by name, whatever order the config was written or resolved in
            items = [item for name in names
                     for item in load_set(name, self.options["sets"][name], self.pipeline.file, f"stages.{self.name}.sets.{name}")]
            self._index = EvalIndex(items, names, self.options["n"], self.options["min_short_words"])
        return self._index

    def preflight(self) -> None:
        self.index()   # a missing, unreachable, truncated or empty eval set fails here, in one line (exit 2)

    def reads(self, tasks, source):
        return {f"eval set {name} ({spec['path']})": file_identity(spec["path"]) for name, spec in self.options["sets"].items()}

    PER_SHARD = False   # which grams are frequent follows every shard

    def fingerprint_parts(self, upstream, tasks):
        """Grams are counted over the whole corpus, so each source's decisions depend on every source's documents
        (the scan of each source depends on its own documents only: a keyed phase)."""
        every = {f"upstream.{s}": upstream.get(s, "") for s in self.pipeline.sources}
        return {s: {**parts, **every} for s, parts in super().fingerprint_parts(upstream, tasks).items()}

    def execute(self, tasks, run_phase) -> None:
        index = self.index()
        scan = run_phase(Phase("scan", tasks, partial(self.scan, index), key=index.fingerprint, kernels=(SCAN,),
                               outputs=(self.run.work(self.name, "scan"), self.run.work(self.name, "counts"))))
        self.frequent = self.frequent_grams(tasks)
        sets = {name: {**info, "path": self.options["sets"][name]["path"]} for name, info in index.summary().items()}
        self.run.publish(self.name, DecontaminateRecord(sets, index.n, int(len(self.frequent)),
                                                        round(sum(r["seconds"] for r in scan), 3), sum(r.get("bytes", 0) for r in scan)))
        super().execute(tasks, run_phase)

    def frequent_grams(self, tasks) -> np.ndarray:
        """The grams more than `frequent_docs` live documents hold, over every source (sorted)."""
        parts = []
        for t in tasks:
            with fs.open_input(self.run.work(self.name, "counts", t.source, f"{t.shard}.parquet")) as handle:
                parts.append(read_table(handle))
        if not parts:
            return np.zeros(0, np.uint64)
        total = pa.concat_tables(parts).group_by("gram").aggregate([("docs", "sum")])
        frequent = total.filter(pc.greater(total.column("docs_sum"), self.options["frequent_docs"])).column("gram")
        return np.sort(frequent.to_numpy()).astype(np.uint64)

    # ---- phase scan -----------------------------------------------------------------------------
    def scan(self, index: EvalIndex, shard: ShardRef) -> dict:
        found = []

        def process(batches, _shard):
            for batch in batches:
                matches = index.scan(batch.column("id"), batch.column("text"))
                found.append(matches)
                yield Output(rows=matches, counts={"bytes": int(pc.sum(pc.binary_length(batch.column("text"))).as_py() or 0),
                                                   "matched": len(pc.unique(matches.column("id")))})
        sink = ParquetSink(self.run.work(self.name, "scan", shard.source, f"{shard.shard}.parquet"), MATCHES)
        counts = self.map_shard(shard, process, sink, ["id", "text"])
        write_table(self.run.work(self.name, "counts", shard.source, f"{shard.shard}.parquet"),
                    doc_counts(pa.concat_tables(found) if found else MATCHES.empty_table()))
        return counts

    # ---- the accounting phase: decisions from the stored matches --------------------------------
    def keyed_tables(self) -> list[dict]:
        return [{"name": self.name, "view": "contamination", "kind": self.KIND, "path": self.name, "key": ["source", "id", "set", "item"],
                 "columns": [f.name for f in TABLE if f.name != "id"]}]

    def owned_paths(self) -> list[str]:
        return [*super().owned_paths(), self.run.path(self.name)]

    def source_outputs(self, source: str) -> list[str]:
        return [*super().source_outputs(source), self.run.path(self.name, source)]

    def sink(self, shard: ShardRef) -> SourceSink:
        return SourceSink(self.run.table(self.name, shard.source, shard.shard), shard.source, TABLE)

    def process_shard(self, batches, shard: ShardRef):
        o, index = self.options, self.index()
        with fs.open_input(self.run.work(self.name, "scan", shard.source, f"{shard.shard}.parquet")) as handle:
            pairs = decide(read_table(handle), index, self.frequent, o["min_overlap"], o["min_match_words"])
        for batch in batches:
            mine = pairs.filter(pc.is_in(pairs.column("id"), value_set=batch.column("id")))
            rows = self.evidence(mine, batch)
            flagged = rows.filter(rows.column("flagged"))
            yield Output(rows=rows, removed=self.removals(flagged) if o["action"] == "remove" else None,
                         counts={"matched": len(pc.unique(rows.column("id"))), "flagged": len(pc.unique(flagged.column("id")))})

    def evidence(self, pairs: pa.Table, batch: pa.Table) -> pa.Table:
        """The table's rows: set and item by name, the matched passage (the longest run) and the item's text."""
        index = self.index()
        items = [index.items[i] for i in pairs.column("item").to_pylist()]
        texts = dict(zip(batch.column("id").to_pylist(), batch.column("text").to_pylist())) if pairs.num_rows else {}
        passages = [_excerpt(texts[d].encode()[a:b].decode(errors="replace"))
                    for d, a, b in zip(*(pairs.column(c).to_pylist() for c in ("id", "span_start", "span_end")))]
        return pa.Table.from_pydict({
            "id": pairs.column("id"), "set": [i.set for i in items], "item": [i.id for i in items], "flagged": pairs.column("flagged"),
            "overlap": pairs.column("overlap"), "grams": pairs.column("grams"), "item_grams": pairs.column("item_grams"),
            "longest_words": pairs.column("longest_words"), "passage": passages, "eval_text": [_excerpt(i.text) for i in items],
            "hashes": pairs.column("hashes")}, schema=TABLE)

    def removals(self, flagged: pa.Table) -> pa.Table:
        """One ledger row per flagged document: its strongest match (the first set by name, then the highest overlap, the
        longest match, the item id) and how many more items it matched."""
        by_doc: dict[str, list] = {}
        for row in flagged.to_pylist():
            by_doc.setdefault(row["id"], []).append(row)
        ids, reasons, details = [], [], []
        for doc, rows in sorted(by_doc.items()):
            rows.sort(key=lambda r: (r["set"], -r["overlap"], -r["longest_words"], r["item"]))
            top = rows[0]
            more = f"; {len(rows) - 1} more item{'s' if len(rows) > 2 else ''}" if len(rows) > 1 else ""
            ids.append(doc)
            reasons.append(f"decontaminate:{top['set']}")
            details.append(f"item {top['item']}: overlap {top['overlap']:.2f} ({top['grams']}/{top['item_grams']} grams), "
                           f"longest match {top['longest_words']} words{more}")
        return removals(pa.array(ids, pa.string()), pa.array(reasons, pa.string()), pa.array(details, pa.string()))


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= EXCERPT else flat[:EXCERPT].rstrip() + " …"
