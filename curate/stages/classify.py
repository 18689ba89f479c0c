"""The classify stage: quality models (fastText, Hugging Face, NeMo) scored on actor pools, then SQL decisions.

Each model is its own phase, on long-lived Ray actors with the model's `resources` (a GPU when the
cluster has one; CPU actors with torch threads = `num_cpus` otherwise), loading the model once. Its
scores are kept per model (`RUN/_work/<stage>/models/<model>/`), keyed by the model and the steps before it,
so changing a `keep` predicate re-runs only the decision. In a `cascade`, a model scores only what the
models before it did not decide. The accounting phase writes `RUN/scores/<source>/<shard>.parquet`
(id, decided_by, every model's columns) and ledgers documents failing `keep` as `classify:<model>`.
"""

from __future__ import annotations

import logging
from functools import partial

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from curate.models.cascade import check_predicate, combine, decided_ids, removed
from curate.models.overlap import scored_batches
from curate.stages.model_choice import MODEL_OPTIONS, ModelChoice, choose_models
from curate.config.pipeline import canonical_json
from curate.common.schema import Field
from curate.errors import ConfigError
from curate.io import fs
from curate.io.parquet import ParquetSink, read_table
from curate.rundir import ClassifyRecord
from curate.rundir.tables import SourceSink
from curate.stages.facets import Facets
from curate.stages.phase import Phase
from curate.stages.registry import stage
from curate.stages.shard import Output, ShardRef, ShardStage

log = logging.getLogger("curate")
ALL = "all"
STEP_OPTIONS = {"model": Field((str,)), "decides": Field((str,), default=None, nullable=True,
                                                          doc="SQL over this model's columns: TRUE = decided here")}


class ClassifyFacets(Facets):
    REPORT = ("curate.report.signals:SECTION", "curate.report.classify:SECTION")

    @classmethod
    def lines(cls, run, step, rows, order):
        """Each model's cost, and a stand-in said plainly."""
        record = run.find_record(step, ClassifyRecord)
        lines = []
        for name, m in (record.models if record is not None else {}).items():
            unit = m["device"].upper()
            lines.append(f"{step}/{name} ({m['kind']}): {m['documents']:,} docs, {m['seconds_per_1000']:.3f}s/1,000 "
                         f"on {unit}, ~{m['hours_per_billion']:,.0f} {unit}-h per billion docs")
            if m["standin"]:
                lines.append(f"NOTE: model {name} is the sample's stand-in, not {m['replaces']}")
        return lines

    @classmethod
    def manifest(cls, run, step):
        """Every model it ran (`<step>.<model>`)."""
        record = run.find_record(step, ClassifyRecord)
        return {} if record is None else {"models": {f"{step}.{name}": {"stage": step, **m} for name, m in record.models.items()}}


@stage("classify")
class ClassifyStage(ShardStage):
    PRODUCES = ("scores",)
    VIEW = "scores"
    FACETS = ClassifyFacets
    VERSION = 2   # 2: its table moved to RUN/<step>/
    REMOVES = True
    SOURCE_OPTIONS = ("keep",)
    COLUMNS = ["id"]
    OPTIONS = {
        "models": Field((dict,), item=Field((dict,), keys=MODEL_OPTIONS), doc="name -> model (the column prefix)"),
        "keep": Field((dict,), default=dict, item=Field((str,)), doc="source (or all) -> SQL over the scores: TRUE keeps"),
        "cascade": Field((list,), default=None, nullable=True, item=Field((dict,), keys=STEP_OPTIONS),
                         doc="models in order; each decides what its `decides` says, the last decides the rest"),
        "audit": Field((bool,), default=False, doc="run every cascade model on every document (to measure the cascade)"),
    }

    @classmethod
    def keyed_columns(cls, options):
        """Each model's columns carry its name as a prefix (models/output.py)."""
        return [] if options is None else [f"{name}_*" for name in options["models"]]

    @classmethod
    def validate_options(cls, options, sources, file, key):
        if not options["models"]:
            raise ConfigError(file, f"{key}.models", "expected at least one model")
        for name, model in options["models"].items():
            if not name.isidentifier():
                raise ConfigError(file, f"{key}.models.{name}", "a model name prefixes its columns: letters, digits and '_'")
            for s in model["sources"] or []:
                if s not in sources:
                    raise ConfigError(file, f"{key}.models.{name}.sources", f"'{s}' is not a source; sources are {', '.join(sources)}")
        for who, predicate in options["keep"].items():
            if who != ALL and who not in sources:
                raise ConfigError(file, f"{key}.keep.{who}", f"not a source; sources are {', '.join(sources)} (or all)")
            if error := check_predicate(predicate):
                raise ConfigError(file, f"{key}.keep.{who}", f"invalid SQL predicate: {error}")
        steps = options["cascade"] or []
        for i, step in enumerate(steps):
            if step["model"] not in options["models"]:
                raise ConfigError(file, f"{key}.cascade[{i}].model", f"no model '{step['model']}'; models are {', '.join(options['models'])}")
            if i < len(steps) - 1 and step["decides"] is None:
                raise ConfigError(file, f"{key}.cascade[{i}].decides", "every cascade step but the last says what it decides")
            if step["decides"] and (error := check_predicate(step["decides"])):
                raise ConfigError(file, f"{key}.cascade[{i}].decides", f"invalid SQL predicate: {error}")

    # ---- driver ---------------------------------------------------------------------------------
    def models(self) -> dict[str, ModelChoice]:
        return choose_models(self.options["models"])

    def preflight(self) -> None:
        """Every model loads (cheap checks: path, config, labels, tokenizer) before any task of the run."""
        for choice in self.models().values():
            choice.check()

    def options_for(self, source: str) -> dict:
        """Only the models that score this source concern it (and `keep` for it)."""
        models = self.models()
        return {**super().options_for(source),
                "models": {n: m for n, m in self.options["models"].items() if models[n].applies_to(source)}}

    def reads(self, tasks, source):
        """The files of the models that score this source, by content: a model retrained to the same path
        re-decides (its scores are a keyed phase, recomputed by the same change)."""
        return {f"model {n} ({m.spec.path})": m.fingerprint() for n, m in self.models().items() if m.applies_to(source)}

    @property
    def cascade(self) -> list[tuple[str, str | None]]:
        return [(s["model"], s["decides"]) for s in self.options["cascade"] or []]

    def execute(self, tasks, run_phase) -> None:
        models, cascade = self.models(), self.cascade
        order = [n for n, _ in cascade] + [n for n in models if n not in dict(cascade)]
        costs = {}
        for name in order:
            choice = models[name]
            before = cascade[: [n for n, _ in cascade].index(name)] if name in dict(cascade) and not self.options["audit"] else []
            common = canonical_json({"model": choice.fingerprint(), "before": before, "audit": self.options["audit"]})
            key = {s: common if choice.applies_to(s) else None for s in self.pipeline.sources}  # None: nothing to score
            results = run_phase(Phase(f"model-{name}", tasks, partial(self.score_shard, name, before), partial(self.load, name),
                                      choice.resources, key=key, outputs=(self.model_dir(name),)))
            costs[name] = choice.cost(results)
            if getattr(results, "ran", len(results)):
                log.info("%s: %s", self.name, choice.describe(costs[name]))
            else:   # a resume: nothing was scored now, the scores of an earlier run hold
                log.info("%s: model %s: the scores of %s documents from an earlier run still hold; nothing scored now",
                         self.name, name, f"{costs[name]['documents']:,}")
        self.run.publish(self.name, ClassifyRecord({n: {**models[n].describe_json(), **costs[n]} for n in order}))
        super().execute(tasks, run_phase)

    # ---- model phases (workers) -----------------------------------------------------------------
    def model_dir(self, name: str, *parts: str) -> str:
        return self.run.work(self.name, "models", name, *parts)

    def load(self, name: str) -> None:
        self.loaded = getattr(self, "loaded", {})
        self.loaded[name] = self.models()[name].load()

    def score_shard(self, name: str, before: list, shard: ShardRef) -> dict:
        """Score the shard's live documents of this model's sources that no earlier cascade step decided."""
        choice, model = self.models()[name], self.loaded[name]
        schema = pa.schema([("id", pa.string()), *model.output_schema()])
        decided = self._decided(before, shard)
        scored = 0
        with ParquetSink(self.model_dir(name, shard.source, f"{shard.shard}.parquet"), schema) as sink:
            if not choice.applies_to(shard.source):
                return {"in": 0, "scored": 0, "device": model.device}
            batches = (b.filter(pc.invert(pc.is_in(b.column("id"), value_set=decided))) if len(decided) else b
                       for b in self.live_batches(shard, ["id", "text"], batch_rows=choice.batch_docs))
            for batch, scores in scored_batches(model, (b for b in batches if b.num_rows)):
                sink.write(pa.Table.from_arrays([batch.column("id"), *scores.columns], schema=schema))
                scored += batch.num_rows
        return {"in": scored, "scored": scored, "device": model.device}

    def _decided(self, before: list, shard: ShardRef) -> pa.Array:
        parts = []
        for name, decides in before:
            path = self.model_dir(name, shard.source, f"{shard.shard}.parquet")
            with fs.open_input(path) as handle:
                parts.append(decided_ids(read_table(handle), decides))
        return pa.concat_arrays(parts) if parts else pa.array([], pa.string())

    # ---- the accounting phase: decisions --------------------------------------------------------
    def setup(self) -> None:
        self.schemas = {}
        for name in self.models():
            path = next(iter(fs.glob(self.model_dir(name, "*", "*.parquet"))), None)
            with fs.open_input(path) as handle:
                self.schemas[name] = pq.read_schema(handle).remove(0)  # every file of a model has its schema

    def sink(self, shard: ShardRef) -> ParquetSink:
        """Every scores file has every model's columns (null where a model did not score), even an empty one."""
        empty = combine(pa.table({"id": pa.array([], pa.string())}), {}, self.schemas, [], [])
        return SourceSink(self.run.table(self.name, shard.source, shard.shard), shard.source, empty.schema)

    def process_shard(self, batches, shard: ShardRef):
        models = self.models()
        scored = {}
        for name in models:
            with fs.open_input(self.model_dir(name, shard.source, f"{shard.shard}.parquet")) as handle:
                scored[name] = read_table(handle)
        cascade = [(n, d) for n, d in self.cascade if models[n].applies_to(shard.source)]
        others = [n for n in models if n not in dict(self.cascade) and models[n].applies_to(shard.source)]
        keep = self.keep_for(shard.source)
        for batch in batches:
            table = combine(batch, scored, self.schemas, cascade, others)
            yield Output(rows=table, removed=removed(table, keep, "classify"))

    def keep_for(self, source: str) -> str | None:
        parts = [f"({self.options['keep'][w]})" for w in (ALL, source) if w in self.options["keep"]]
        return " AND ".join(parts) if parts else None
