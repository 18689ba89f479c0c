"""The pii stage: e-mail and IP addresses (phone numbers and the user's own patterns on request) replaced by
placeholders, every replacement recorded span by span. The first stage that edits text rather than removing it.

It writes `RUN/edits/<step>/<source>/<shard>.parquet` (source, id, kind, start, end in code points, placeholder,
original_sha256; the original itself only with `keep_original: true`) and nothing else: `RUN/docs/` stays as
ingested, and every later step reads the edited text through `ShardStage.live_batches` (curate/pii/edits.py).
It removes no document (in = kept), except one on which a pattern of yours runs past `pattern_timeout`: that one
goes to the ledger (reason `pii_timeout`) with a warning naming it, as kept unscanned it could leak what the pattern
was meant to find (curate/pii/user.py). What counts as an address, and the exceptions, are in
curate/pii/patterns.py; `curate query RUN "SELECT * FROM edits"` shows the edits of every pii step.
"""

from __future__ import annotations

import logging
import re
from collections import Counter

import pyarrow as pa

from curate.config.schema import Field
from curate.errors import ConfigError
from curate.io.parquet import ParquetSink
from curate.pii.edits import EDITS, WITH_ORIGINAL
from curate.pii.find import find_spans
from curate.pii.patterns import KINDS, build_kinds
from curate.pii.summary import EDITED, SPANS, TIMEOUT
from curate.pii.user import problem
from curate.rundir import EditsRecord
from curate.rundir.tables import SourceSink
from curate.stages.registry import stage
from curate.stages.shard import Output, ShardRef, ShardStage, removals

log = logging.getLogger("curate")


@stage("pii")
class PiiStage(ShardStage):
    EDITS = True
    VERSION = 2   # e-mail in any script and across invisible characters, phones not inside longer numbers
    COLUMNS = ["id", "text"]
    OPTIONS = {
        "kinds": Field((list,), default=lambda: ["email", "ipv4", "ipv6"], item=Field((str,), choices=list(KINDS)),
                       doc="what to replace: email, ipv4, ipv6, phone (off by default: many false positives)"),
        "patterns": Field((dict,), default=dict, item=Field((str,)),
                          doc="your own kinds: name -> regex (Python syntax; run by the regex package with a time budget, "
                              "prefiltered in Arrow by a literal every match contains)"),
        "pattern_timeout": Field((float,), default=1.0, min=0.001, max=3600.0,
                                 doc="seconds one of your patterns may take on one document; past it the document is "
                                     "removed (ledger reason pii_timeout) and named in a warning"),
        "placeholders": Field((dict,), default=dict, item=Field((str, list)),
                              doc="kind -> a placeholder or a list (one is chosen by the hash of the original); "
                                  "defaults: datatrove's / FineWeb-2's, and <name> for your own kinds"),
        "public_ips_only": Field((bool,), default=True, doc="replace only global IP addresses (private, loopback, "
                                                            "documentation ranges are kept)"),
        "keep_domains": Field((list,), default=list, item=Field((str,)),
                              doc="e-mail domains never replaced (besides example.com/.org/.net and .test/.example/.invalid)"),
        "keep_original": Field((bool,), default=False, doc="store each replaced original in the edits table (it is PII!)"),
    }

    @classmethod
    def validate_options(cls, options, sources, file, key):
        if not options["kinds"] and not options["patterns"]:
            raise ConfigError(file, f"{key}.kinds", "nothing to look for: name at least one kind, or give your own patterns")
        for name, regex in options["patterns"].items():
            if name in KINDS or not re.fullmatch(r"[a-z][a-z0-9_]*", name):
                raise ConfigError(file, f"{key}.patterns.{name}", "name your pattern in lower case (letters, digits, _), "
                                                                  f"other than the built-in kinds {', '.join(KINDS)}")
            if (why := problem(regex)) is not None:
                raise ConfigError(file, f"{key}.patterns.{name}", why)
        for kind, value in options["placeholders"].items():
            if kind not in (*KINDS, *options["patterns"]):
                raise ConfigError(file, f"{key}.placeholders.{kind}", f"no such kind; kinds are {', '.join([*KINDS, *options['patterns']])}")
            if isinstance(value, list) and (not value or not all(isinstance(v, str) for v in value)):
                raise ConfigError(file, f"{key}.placeholders.{kind}", "expected a string or a non-empty list of strings")

    def execute(self, tasks, run_phase) -> None:
        self.run.publish(self.name, EditsRecord(sorted([*self.options["kinds"], *self.options["patterns"]]),
                                                self.run.relative(self.run.path("edits", self.name))))
        super().execute(tasks, run_phase)

    def setup(self) -> None:
        o = self.options
        self.kinds = build_kinds(o["kinds"], o["patterns"], o["placeholders"], o["public_ips_only"], o["keep_domains"],
                                 o["pattern_timeout"])
        self.schema = self.schema_of(o)

    def sink(self, shard: ShardRef) -> ParquetSink:
        return SourceSink(self.run.edits(self.name, shard.source, shard.shard), shard.source, self.schema)

    def run_shard(self, shard: ShardRef) -> dict:
        """As any step's, with a ledger when there are patterns of yours (the only way a document leaves here)."""
        return self.map_shard(shard, self.process_shard, self.sink(shard), ledger=bool(self.options["patterns"]))

    def process(self, batch: pa.Table, shard: ShardRef) -> Output:
        timed_out: list = []
        spans = find_spans(batch.column("text"), self.kinds, timed_out)
        batch_ids = batch.column("id").combine_chunks()
        ids = batch_ids.take(spans.column("row"))
        rows = pa.Table.from_arrays([ids, *(spans.column(c) for c in self.schema.names[1:])], schema=self.schema)
        counts = Counter({EDITED: len(set(spans.column("row").to_pylist()))})
        counts.update(f"{SPANS}{k}" for k in spans.column("kind").to_pylist())
        if not timed_out:
            return Output(rows=rows, counts=dict(counts))
        details = [f"pattern '{kind}' ran past its {seconds:g} s budget (stages.{self.name}.pattern_timeout)" for _, kind, seconds in timed_out]
        removed = removals(batch_ids.take(pa.array([row for row, _, _ in timed_out], pa.int64())), TIMEOUT, pa.array(details, pa.string()))
        for doc_id, detail in zip(removed.column("id").to_pylist(), details):
            log.warning("curate: warning: %s: document %s of source '%s' removed (%s): %s", self.name, doc_id, shard.source, TIMEOUT, detail)
        return Output(removed=removed, rows=rows, counts=dict(counts))

    def keyed_tables(self) -> list[dict]:
        """Its edits, in `curate query` as a view named after the step and in `edits` (every pii step's)."""
        return [{"name": self.name, "view": "edits", "kind": self.KIND, "path": f"edits/{self.name}", "key": ["source", "id", "start"],
                 "columns": self.schema_of(self.options).names[1:]}]

    @staticmethod
    def schema_of(options: dict) -> pa.Schema:
        return WITH_ORIGINAL if options.get("keep_original") else EDITS

    def owned_paths(self) -> list[str]:
        return [*super().owned_paths(), self.run.path("edits", self.name)]

    def source_outputs(self, source: str) -> list[str]:
        return [*super().source_outputs(source), self.run.path("edits", self.name, source)]

