"""The dual_use stage (Deep Ignorance): a blocklist over every document, a classifier only on escalated ones.

Phase `scan` counts the distinct blocklist terms of every live document (`RUN/_work/<stage>/scan/`, keyed by
the term list). Phase `classifier` scores, on actors with the model's resources, the escalated
documents (`escalate_at` distinct terms or more) that have no score from this model yet: scores are
cached per model (`RUN/_work/<stage>/classifier/<model>/`), so a new threshold or `escalate_at` never
re-runs the model on a document it already scored. An inference error marks the document (fail
closed). The accounting phase decides from the stored values: `RUN/dual_use/<source>/` (every
document's hits, terms, escalation, score, flag and what decided it), flagged documents whole in
`RUN/quarantine/<step>/<source>/`, and ledger rows `dual_use:classifier`, `dual_use:error`, `dual_use:blocklist`.
"""

from __future__ import annotations

import hashlib
import logging
from functools import partial

import pyarrow as pa
import pyarrow.compute as pc

from curate.config.pipeline import canonical_json
from curate.common.schema import Field, check_mapping
from curate.errors import ConfigError, CurateError
from curate.dualuse import Blocklist, demo_terms_path
from curate.dualuse.decide import DECISIONS, decide, read_scores, score_escalated
from curate.io import fs
from curate.models.spec import describe, one_line
from curate.io.parquet import ParquetSink, read_table, write_table
from curate.rundir import DualUseRecord
from curate.rundir.tables import DocumentSchema, SourceSink
from curate.stages.model_choice import MODEL_OPTIONS, model_choice
from curate.stages.dual_use_facets import BLOCKLIST, DualUseFacets
from curate.stages.phase import Phase
from curate.stages.reads import file_identity
from curate.stages.registry import stage
from curate.stages.resources import Resources
from curate.stages.shard import Output, ShardRef, ShardStage

log = logging.getLogger("curate")
SCAN = pa.schema([("id", pa.string()), ("blocklist_hits", pa.int32()), ("blocklist_terms", pa.list_(pa.string()))])
MODEL = {k: v for k, v in MODEL_OPTIONS.items() if k not in ("sources", "standin")} | {
    "windows": Field((str,), default="max", choices=["truncate", "max"], doc="max over windows (transformers)")}


@stage("dual_use")
class DualUseStage(ShardStage):
    FACETS = DualUseFacets
    PRODUCES = ("dual_use",)
    TABLES = ("quarantine/{step}",)
    VIEW = "dual_use"
    VERSION = 3   # 2: its decisions moved to RUN/<step>/; 3: its quarantine to RUN/quarantine/<step>/
    REMOVES = True
    OPTIONS = {
        "terms": Field((str,), default="demo", doc="term file (one per line, # comments); 'demo': the shipped stand-in list"),
        "escalate_at": Field((int,), default=2, min=1, max=10_000, doc="distinct terms that send a document to the classifier"),
        "model": Field((str, dict), default=None, nullable=True, keys=MODEL,
                       doc="the stage-2 classifier (a path, or a model mapping as in classify); none: the blocklist decides"),
        "threshold": Field((float,), default=0.5, min=0.0, max=1.0, doc="flag when the classifier's score is above this"),
        "fail_closed": Field((bool,), default=True, doc="an inference error flags the document"),
        "backfill": Field((bool,), default=True, doc="keep escalated documents the classifier cleared"),
    }

    # ---- driver ---------------------------------------------------------------------------------
    def terms_path(self) -> str:
        """The term file as a local path: a term file in object storage is read from this node's cached copy."""
        path = demo_terms_path() if self.options["terms"] == "demo" else self.options["terms"]
        if "://" not in path:
            return path
        try:
            return fs.local_copy(path)
        except Exception as exc:  # noqa: BLE001 - no s3fs, no credentials, offline: the one line a user reads
            raise ConfigError(self.pipeline.file, f"stages.{self.name}.terms", f"cannot read {path}: {one_line(describe(exc))}") from None

    @classmethod
    def validate_options(cls, options, sources, file, key):
        if isinstance(options["model"], str):  # a path alone: fastText by its suffix, else a transformer folder
            path = options["model"]
            options["model"] = check_mapping({"kind": "fasttext" if path.endswith((".bin", ".ftz")) else "hf", "path": path},
                                             MODEL, file, f"{key}.model")

    def model(self):
        m = self.options["model"]
        return None if m is None else model_choice("dual_use", {**m, "sources": None, "standin": None})

    def preflight(self) -> None:
        try:
            Blocklist.from_file(self.terms_path())  # a missing, unreadable or empty term file fails here, in one line
        except ConfigError:
            raise
        except CurateError as exc:   # a file the pipeline names: exit 2, as eval sets and models
            raise ConfigError(self.pipeline.file, f"stages.{self.name}.terms", str(exc)) from None
        model = self.model()
        if model is None:
            return
        labels = model.check()
        if len(labels) > 1 and model.spec.label is None:  # the top label's probability flags whatever it predicts
            shown = ", ".join(labels[:10]) + (" ..." if len(labels) > 10 else "")
            raise ConfigError(self.pipeline.file, f"stages.{self.name}.model",
                              f"{model.spec.path} has {len(labels)} labels ({shown}): name the one that flags, "
                              f"e.g. `model: {{path: {model.spec.path}, label: {labels[-1]}}}`")

    def reads(self, tasks, source):
        """The term file and the classifier's files, by content: either replaced at the same path re-decides
        (the scan and the scores are keyed phases, recomputed by the same change)."""
        model = self.model()
        schema = DocumentSchema.of_docs(self.run, [(t.payload.source, t.payload.shard) for t in tasks]).schema
        return {f"term file {self.options['terms']}": file_identity(self.terms_path()), "schema": schema.to_string(),
                **({f"model {model.spec.path}": model.fingerprint()} if model else {})}

    def execute(self, tasks, run_phase) -> None:
        blocklist = Blocklist.from_file(self.terms_path())
        scan = run_phase(Phase("scan", tasks, partial(self.scan, blocklist), resources=Resources(actor=True),
                               key=blocklist.fingerprint, outputs=(self.run.work(self.name, "scan"),), kernels=(BLOCKLIST,)))
        model, scored = self.model(), []
        if model is not None:
            cache = self.cache_dir()
            for stale in fs.glob(self.run.work(self.name, "classifier", "*")):
                if stale.rstrip("/") != cache.rstrip("/"):
                    fs.remove(stale)  # scores of another model
            self.forget_changed_texts(cache)
            key = canonical_json({"model": model.fingerprint(), "terms": blocklist.fingerprint, "escalate_at": self.options["escalate_at"]})
            scored = run_phase(Phase("classifier", tasks, self.classify, self.load, model.resources, key=key))
        self.run.publish(self.name, DualUseRecord(self.funnel_costs(scan, scored)))
        self.documents = DocumentSchema.of_docs(self.run, [(t.payload.source, t.payload.shard) for t in tasks])
        super().execute(tasks, run_phase)

    def forget_changed_texts(self, cache: str) -> None:
        """Cached scores are by id: a source whose documents were read again (an input edited) loses them."""
        for source in self.pipeline.sources:
            texts = self.run.source_fingerprint(self.upstream["docs"], source)
            marker = fs.join(cache, source, "texts.json")
            if (self.run.read_json(marker) or {}).get("docs") != texts:
                fs.remove(fs.join(cache, source))
                self.run.write_json(marker, {"docs": texts})

    def cache_dir(self) -> str:
        digest = hashlib.sha256(canonical_json(self.model().fingerprint()).encode()).hexdigest()[:16]
        return self.run.work(self.name, "classifier", digest)

    def funnel_costs(self, scan: list[dict], scored: list[dict]) -> dict:
        return {"scan_seconds": round(sum(r["seconds"] for r in scan), 3),
                "classifier_seconds": round(sum(r["seconds"] for r in scored), 3),
                "classifier_documents": sum(r["scored"] for r in scored),
                "device": "gpu" if any(str(r.get("device")).startswith("cuda") for r in scored) else "cpu",
                "model": self.model().describe_json() if self.model() else None}

    # ---- phase scan -----------------------------------------------------------------------------
    def scan(self, blocklist: Blocklist, shard: ShardRef) -> dict:
        def process(batches, _shard):
            for batch in batches:
                hits, terms = blocklist.scan(batch.column("text"))
                yield Output(rows=pa.Table.from_arrays([batch.column("id").combine_chunks(), pa.array(hits, pa.int32()), terms],
                                                       schema=SCAN),
                             counts={"escalated": int((hits >= self.options["escalate_at"]).sum())})
        sink = ParquetSink(self.run.work(self.name, "scan", shard.source, f"{shard.shard}.parquet"), SCAN)
        return self.map_shard(shard, process, sink, ["id", "text"])

    # ---- phase classifier -----------------------------------------------------------------------
    def load(self) -> None:
        self.loaded = self.model().load()

    def classify(self, shard: ShardRef) -> dict:
        """Score the escalated documents this model has not scored yet; a batch that fails is retried
        document by document, and a document that still fails is recorded as an error."""
        escalated = self.escalated_ids(shard)
        done = read_scores(self.cache_dir(), shard)
        todo = pc.filter(escalated, pc.invert(pc.is_in(escalated, value_set=done.column("id")))) if done.num_rows else escalated
        if not len(todo):
            return {"in": len(escalated), "scored": 0, "errors": 0, "device": self.loaded.device}
        texts = []
        for batch in self.live_batches(shard, ["id", "text"]):
            texts.append(batch.filter(pc.is_in(batch.column("id"), value_set=todo)))
        table = pa.concat_tables(texts)
        result = score_escalated(self.loaded, table)
        name = hashlib.sha256("\n".join(sorted(todo.to_pylist())).encode()).hexdigest()[:16]
        write_table(fs.join(self.cache_dir(), shard.source, shard.shard, f"{name}.parquet"), result)
        return {"in": len(escalated), "scored": table.num_rows, "errors": int(pc.sum(result.column("error")).as_py() or 0),
                "device": self.loaded.device}

    def escalated_ids(self, shard: ShardRef) -> pa.Array:
        with fs.open_input(self.run.work(self.name, "scan", shard.source, f"{shard.shard}.parquet")) as handle:
            scan = read_table(handle, columns=["id", "blocklist_hits"])
        return scan.column("id").filter(pc.greater_equal(scan.column("blocklist_hits"), self.options["escalate_at"])).combine_chunks()

    # ---- the accounting phase: decisions --------------------------------------------------------
    @classmethod
    def keyed_columns(cls, options):
        return [] if options is None else [f.name for f in DECISIONS if f.name != "id"]   # names too plain to claim

    def sink(self, shard: ShardRef) -> ParquetSink:
        return SourceSink(self.run.table(self.name, shard.source, shard.shard), shard.source, DECISIONS)

    def process_shard(self, batches, shard: ShardRef):
        with fs.open_input(self.run.work(self.name, "scan", shard.source, f"{shard.shard}.parquet")) as handle:
            scan = read_table(handle)
        scores = read_scores(self.cache_dir(), shard) if self.model() is not None else None
        o = self.options
        with ParquetSink(self.run.quarantine(self.name, shard.source, shard.shard), self.documents.schema) as quarantine:
            for batch in batches:
                decided, removed, counts = decide(batch.select(["id"]), scan, scores, o["escalate_at"], o["threshold"],
                                                  o["fail_closed"], o["backfill"])
                flagged = decided.column("flagged").to_numpy(zero_copy_only=False)
                quarantine.write(self.documents.conform(batch.filter(pa.array(flagged)), shard.source))
                yield Output(rows=decided, removed=removed, counts=counts)

