"""What a stage is: its options, what it needs and produces, a plan of tasks, and the phases that do them."""

from __future__ import annotations

from abc import ABC, abstractmethod

from curate.config.pipeline import Pipeline
from curate.common.schema import Field
from curate.io import fs
from curate.rundir import RunDir
from curate.stages.facets import Facets
from curate.stages.phase import PhaseRunner, Task
from curate.stages.reads import options_for


class Stage(ABC):
    """A pipeline step. Subclasses set OPTIONS and the chain declarations, and implement `plan` and `execute`.

    - NEEDS: what earlier steps must provide (checked when the pipeline loads), e.g. ("minhash",).
    - USES: what it reads when an earlier step provides it; "tables": every earlier step's id-keyed table (a
      filter joins them all, see VIEW).
    - PRODUCES: what it provides to later steps (files in the run directory and a record, see rundir).
    - REMOVES: it writes ledger rows for documents; later steps no longer see them.
    - EDITS: it records spans of text it replaces (`RUN/edits/<step>/`); later steps see the edited text.
    - FINAL: it describes the finished run (after the kept documents are written), so it comes last.
    - FACETS: what it shows and needs beyond its files (summary lines, report sections, manifest facts, kernels).
    - GLOBAL, VERSION, TABLES, PIPELINE_READS, SOURCE_OPTIONS: what its fingerprint and resume need (see
      `fingerprint_parts`).

    `previous` names the earlier steps that remove documents or edit their text; `upstream` maps each need (and each use
    that is present) to the step providing it.
    """

    KIND = ""
    OPTIONS: dict[str, Field] = {}
    NEEDS: tuple[str, ...] = ()
    USES: tuple[str, ...] = ()
    PRODUCES: tuple[str, ...] = ()
    REMOVES = False
    EDITS = False
    FINAL = False
    FACETS: type[Facets] = Facets   # what it shows beyond its files: summary lines and flags, report sections,
                                    # manifest facts, kernels to compile (stages/facets.py)
    GLOBAL = False                         # each source's results depend on every source (dedup, mix, manifest)
    VERSION = 1                            # bump when the stage's code changes what it writes: runs recompute it
    TABLES: tuple[str, ...] = ()           # per-source folders it writes: RUN/<table>/<source>/ ("tokens/docs";
                                           # "quarantine/{step}": a part of its own, by step name)
    PIPELINE_READS: tuple[str, ...] = ()   # pipeline settings it reads beyond its options, e.g. ("priority",)
    SOURCE_OPTIONS: tuple[str, ...] = ()   # options keyed by source (and `all`): a source depends on its entries only
    HOW_ONLY: tuple[str, ...] = ()         # options that change how it runs, never what it writes (threads): changing
                                           # one recomputes nothing, so they stay out of its fingerprint
    PER_SHARD = False   # its results for a docs shard depend only on that shard's inputs (what the steps before it left
                        # of the shard) and its options: a source that changed keeps the results of its unchanged shards
    SHARD_PARTS: tuple[str, ...] = ()   # parts of its per-source fingerprint that `shard_identities` keys per shard
    VIEW = ""   # it writes a table keyed by id under its own name, RUN/<step>/<source>/, shown in `curate query` as
                # a view named after the step and in this view over every step of the kind ("signals", "scores");
                # earlier versions wrote that table to RUN/<VIEW>/, removed by the runner (runner/stale.py)
    RUN_FILES: tuple[str, ...] = ()   # files or folders of RUN itself (not its step's) that steps of this kind write,
                                      # e.g. ("manifest.json",): removed once the pipeline has no step of the kind

    def __init__(self, name: str, options: dict, pipeline: Pipeline, run: RunDir, previous: list[str],
                 upstream: dict[str, str]):
        self.name, self.options, self.pipeline, self.run = name, options, pipeline, run
        self.previous, self.upstream = previous, upstream
        self.holds = False   # set by the runner before `execute`: every result of its last, finished run still holds,
                             # so no task runs (a no-op re-run skips what only a run with work needs: a tokenizer's load)

    @classmethod
    def validate_options(cls, options: dict, sources: dict, file: str, key: str) -> None:
        """Checks across options (beyond types and bounds); raise ConfigError."""

    def preflight(self) -> None:
        """Checks that need more than the options (a model file loads, a tokenizer exists), run before any
        task of the run starts; raise CurateError."""

    def check(self, tasks: list[Task]) -> None:
        """Checks that need the results of the steps before it (a predicate's columns), run before any of this
        stage's results are removed or recomputed; raise CurateError."""

    def fingerprint_parts(self, upstream: dict[str, str], tasks: list[Task]) -> dict[str, dict[str, object]]:
        """Per source, everything this stage's results for that source depend on, by name: its code version,
        its options (only those that concern the source), the batch size, the pipeline settings it reads
        (`PIPELINE_READS`), what else it reads (`reads`: file contents, a tokenizer, planned inputs) and the
        fingerprint of the source's results upstream. A `GLOBAL` stage depends on every source's upstream,
        so a change anywhere recomputes all of it. The runner hashes each part, so it can say which changed."""
        sources = list(self.pipeline.sources)
        common = {"version": f"{self.KIND}/{self.VERSION}", "execution.batch_rows": self.pipeline.execution["batch_rows"]}
        for name in self.PIPELINE_READS:
            common[f"pipeline.{name}"] = getattr(self.pipeline, name)
        if self.GLOBAL:
            parts = {**common, **{f"options.{k}": v for k, v in self.options.items() if k not in self.HOW_ONLY},
                     **{f"reads.{k}": v for k, v in (self.reads(tasks, None) or {}).items()},
                     **{f"upstream.{s}": upstream.get(s, "") for s in sources}}
            return dict.fromkeys(sources, parts)
        return {s: {**common, **{f"options.{k}": v for k, v in self.options_for(s).items() if k not in self.HOW_ONLY},
                    **{f"reads.{k}": v for k, v in (self.reads(tasks, s) or {}).items()},
                    "upstream": upstream.get(s, "")} for s in sources}

    @classmethod
    def keyed_columns(cls, options: dict | None) -> list[str]:
        """The columns (besides `id` and `source`) of the id-keyed table a step of this kind writes with `options`;
        with None, the columns only a step of this kind writes (names no document column would take: `rps_*`,
        `dt_words`), so a rule that reads one with no such step before it fails at load (config/chain.py).
        A name may end in `*` (a prefix: `quality_*`)."""
        return []

    @classmethod
    def predicates(cls, options: dict, file: str, key: str) -> list[tuple[str, str]]:
        """(label, SQL predicate) of every rule a step of this kind evaluates over documents and earlier steps'
        tables, so the columns they read are checked at load (config/chain.py `check_columns`) and the derived
        defaults can follow them, e.g. signals add `dt_words` when one reads it (`curate.config.derive`)."""
        return []

    @classmethod
    def source_predicates(cls, options: dict, file: str, key: str, source: str) -> list[tuple[str, str]]:
        """The `predicates` that apply to the documents of `source` (all of them, unless the kind says otherwise)."""
        return cls.predicates(options, file, key)

    def keyed_tables(self) -> list[dict]:
        """The id-keyed tables this step wrote, as its record lists them (see `RunDir.publish_tables`)."""
        if not self.VIEW:
            return []
        return [{"name": self.name, "view": self.VIEW, "kind": self.KIND, "path": self.name, "key": ["source", "id"],
                 "columns": self.keyed_columns(self.options)}]

    @classmethod
    def tables(cls, step: str) -> list[str]:
        """The folders of TABLES for a step of this kind named `step`."""
        return [t.format(step=step) for t in cls.TABLES]

    def options_for(self, source: str) -> dict:
        """The options that concern `source` (see `reads.options_for`); a stage may narrow them further."""
        return options_for(self.options, source, self.SOURCE_OPTIONS)

    def reads(self, tasks: list[Task], source: str | None) -> dict | None:
        """What the stage reads for `source` (None: for every source) beyond options and upstream records,
        by name: file identities, a tokenizer, planned inputs."""
        return None

    def owned_paths(self) -> list[str]:
        """Everything this stage writes, removed when a GLOBAL stage changes."""
        return [*(self.run.path(*f.split("/")) for f in self.RUN_FILES),
                self.run.path("ledger", self.name), self.run.state(self.name), self.run.work(self.name),
                *(self.run.path(*t.split("/")) for t in self.tables(self.name)), *([self.run.path(self.name)] if self.VIEW else [])]

    def source_outputs(self, source: str) -> list[str]:
        """What this stage wrote for one source, removed when that source's fingerprint changes (the markers
        of its unkeyed phases are removed by the runner)."""
        return [self.run.path("ledger", self.name, source), *(self.run.path(*t.split("/"), source) for t in self.tables(self.name)),
                *([self.run.path(self.name, source)] if self.VIEW else [])]

    def shard_outputs(self, source: str, shard: str) -> list[str]:
        """The files this stage wrote for one docs shard: what a later step reads of that shard, hashed into the later
        step's per-shard key (`PER_SHARD`); a missing one counts as absent."""
        return [fs.join(folder, f"{shard}.parquet") for folder in self.source_outputs(source)]

    def shard_identities(self, tasks: list[Task], source: str) -> dict[str, str] | None:
        """A PER_SHARD stage that reads no earlier step (ingest): per docs shard of `source`, what its results there
        follow from, in place of the parts named in `SHARD_PARTS` (None: what it reads of each shard, `ShardInputs`)."""
        return None

    def record_part(self, step: str, source: str) -> object | None:
        """For its per-shard key: the part of the record of `step` (a step it needs) that its results for `source`
        follow from, where that record holds facts of every source (None: the whole record)."""
        return None

    def shard_facts(self, source: str, shard: str) -> dict:
        """Facts of one docs shard its results follow from that no file holds whole (pack: the digest of the shard's
        copies, from the mix step's marker), for its per-shard key."""
        return {}

    def shard_reads(self, source: str, shard: str) -> list[str]:
        """Files of one docs shard it reads beyond the live documents and the files of the steps it needs, for its
        per-shard key."""
        return []

    @abstractmethod
    def plan(self) -> list[Task]:
        """The tasks of the stage's accounting phase, in a deterministic order."""

    @abstractmethod
    def execute(self, tasks: list[Task], run_phase: PhaseRunner) -> None:
        """Run the stage's phases through `run_phase`; the last one is usually the accounting phase."""
