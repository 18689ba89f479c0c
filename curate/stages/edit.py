"""The text-editing template: a stage that writes only `edit(batch) -> spans`.

An editing stage never rewrites `RUN/docs/` and removes no document (in = kept for every shard). It says which
spans of each text to replace; the template records them in `RUN/edits/<step>/<source>/<shard>.parquet`
(`curate.rundir.edits`), publishes an `EditsRecord`, counts the documents edited and the spans by kind for the
summary, `summary.json` and the report, and lists the `edits` view of `curate query`. Every later step reads the
edited text (`ShardStage.live_batches` applies the edits of the editing steps before it, in order).

    @stage("lowercase")
    class Lowercase(EditStage):
        def edit(self, batch):
            texts = batch.column("text").to_pylist()
            rows = [i for i, t in enumerate(texts) if t != t.lower()]
            return spans(rows, ["lower"] * len(rows), [0] * len(rows), [len(texts[i]) for i in rows],
                         [texts[i].lower() for i in rows])
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from curate.io.parquet import ParquetSink
from curate.rundir import EditsRecord
from curate.rundir.edits import EDITS, WITH_ORIGINAL
from curate.rundir.tables import SourceSink
from curate.stages.facets import Facets
from curate.stages.shard import Output, ShardRef, ShardStage

EDITED, SPANS = "edited", "spans:"   # marker counts: documents edited, spans by kind (`spans:email`, ...)
SPAN_COLUMNS = pa.schema([("row", pa.int64()), ("kind", pa.string()), ("start", pa.int64()), ("end", pa.int64()),
                          ("placeholder", pa.string())])


@dataclass(frozen=True)
class Edited:
    """What `edit` returns when it also removes documents it could not edit safely (a user pattern that ran past its
    budget): the spans, and ledger rows made with `curate.stages.shard.removals` (reason and evidence)."""

    spans: pa.Table
    removed: pa.Table | None = None


def spans(rows, kinds, starts, ends, placeholders) -> pa.Table:
    """What `edit` returns, from five equal-length sequences: the document's row in the batch, the kind of span,
    start and end (code points into its text) and what replaces it ("" deletes)."""
    return pa.Table.from_arrays([pa.array(rows, pa.int64()), pa.array(kinds, pa.string()), pa.array(starts, pa.int64()),
                                 pa.array(ends, pa.int64()), pa.array(placeholders, pa.string())], schema=SPAN_COLUMNS)


def edit_counts(markers: list[dict]) -> dict[str, dict]:
    """Per source: documents in, documents edited, spans by kind (kinds sorted), from an editing step's markers."""
    out: dict[str, dict] = {}
    for m in markers:
        row = out.setdefault(m["source"], {"in": 0, "documents": 0, "spans": {}, "removed": {}})
        row["in"] += m["in"]
        row["documents"] += m.get(EDITED, 0)
        for reason, n in m.get("removed", {}).items():
            row["removed"][reason] = row["removed"].get(reason, 0) + n
        for key, n in m.items():
            if key.startswith(SPANS):
                row["spans"][key[len(SPANS):]] = row["spans"].get(key[len(SPANS):], 0) + n
    for row in out.values():
        row["spans"] = dict(sorted(row["spans"].items()))
    return out


def removal_lines(step: str, counts: dict[str, dict]) -> list[str]:
    """A WARNING line per reason an editing step removed documents for (`edit_counts`' `removed`)."""
    removed: dict[str, int] = {}
    for c in counts.values():
        for reason, n in c["removed"].items():
            removed[reason] = removed.get(reason, 0) + n
    return [f"WARNING: {step}: {n:,} document{'s' if n > 1 else ''} removed ({reason}): "
            f"curate query RUN \"SELECT * FROM ledger WHERE reason = '{reason}'\" names them and why"
            for reason, n in sorted(removed.items())]


class EditFacets(Facets):
    """Documents edited and spans by kind: a closing line per step (then one per source) and `edits` in summary.json."""

    @classmethod
    def lines(cls, run, step, rows, order):
        """`pii: 7 of 16 documents edited (43.8%); spans: email 7, ipv4 5`, then one line per source (in `order`)."""
        if run.find_record(step, EditsRecord) is None:
            return []
        counts = edit_counts(run.markers(step))
        counts = {s: counts[s] for s in sorted(counts, key=lambda s: (order.index(s) if s in order else len(order), s))}
        docs, edited = sum(c["in"] for c in counts.values()), sum(c["documents"] for c in counts.values())
        by_kind: dict[str, int] = {}
        for c in counts.values():
            for kind, n in c["spans"].items():
                by_kind[kind] = by_kind.get(kind, 0) + n
        share = f" ({edited / docs:.1%})" if docs else ""
        lines = [f"{step}: {edited:,} of {docs:,} documents edited{share}; spans: "
                 + (", ".join(f"{k} {n:,}" for k, n in sorted(by_kind.items())) or "none")]
        for source, c in counts.items():
            lines.append((f"  {source:10} edited {c['documents']:,} of {c['in']:,}  "
                          + "  ".join(f"{k} {n:,}" for k, n in c["spans"].items())).rstrip())
        return lines + removal_lines(step, counts)

    @classmethod
    def flags(cls, run, step, sources):
        if run.find_record(step, EditsRecord) is None:
            return {}
        counts = edit_counts(run.markers(step))
        return {s: {"edits": {"documents": c["documents"], "spans": c["spans"]}} for s, c in counts.items()}


class EditStage(ShardStage):
    """A stage that edits text: implement `edit(batch)` (and `edit_kinds()`); `keep_original: true` in its options
    stores each replaced original in its edits (off unless the stage offers the option)."""

    EDITS = True
    COLUMNS = ["id", "text"]
    FACETS = EditFacets

    def edit(self, batch: pa.Table) -> pa.Table | Edited:
        """The spans to replace in `batch` (its `id` and `text`): a table with SPAN_COLUMNS (see `spans`), sorted by
        row then start, never overlapping; it may also give `original_sha256` and `original` (else they are computed).
        A stage that may remove a document it cannot edit safely returns `Edited` and says so in `removes()`."""
        raise NotImplementedError(f"{type(self).__name__} must implement edit(batch)")

    def removes(self) -> bool:
        """Whether this step, with its options, may remove documents (it then writes a ledger)."""
        return False

    def edit_kinds(self) -> list[str]:
        """The kinds of span this step records, as its record lists them."""
        return []

    # ---- the template ------------------------------------------------------------------------------
    def execute(self, tasks, run_phase) -> None:
        self.run.publish(self.name, EditsRecord(self.edit_kinds(), self.run.relative(self.run.path("edits", self.name))))
        super().execute(tasks, run_phase)

    @property
    def edits_schema(self) -> pa.Schema:
        return WITH_ORIGINAL if self.options.get("keep_original") else EDITS

    def sink(self, shard: ShardRef) -> ParquetSink:
        return SourceSink(self.run.edits(self.name, shard.source, shard.shard), shard.source, self.edits_schema)

    def run_shard(self, shard: ShardRef) -> dict:
        return self.map_shard(shard, self.process_shard, self.sink(shard), ledger=self.removes())

    def process(self, batch: pa.Table, shard: ShardRef) -> Output:
        found = self.edit(batch)
        removed = None
        if isinstance(found, Edited):
            found, removed = found.spans, found.removed
        schema = self.edits_schema
        if any(name not in found.column_names for name in schema.names[5:]):
            found = _with_originals(found, batch.column("text"))
        ids = batch.column("id").combine_chunks().take(found.column("row"))
        rows = pa.Table.from_arrays([ids, *(found.column(c).cast(schema.field(c).type) for c in schema.names[1:])], schema=schema)
        counts = {EDITED: pc.count_distinct(found.column("row")).as_py() if found.num_rows else 0}
        for kind in pc.value_counts(found.column("kind")).to_pylist() if found.num_rows else []:
            counts[f"{SPANS}{kind['values']}"] = kind["counts"]
        return Output(removed=removed, rows=rows, counts=counts)

    def keyed_tables(self) -> list[dict]:
        """Its edits, in `curate query` as a view named after the step and in `edits` (every editing step's, with `step`)."""
        return [{"name": self.name, "view": "edits", "kind": self.KIND, "path": f"edits/{self.name}", "key": ["source", "id", "start"],
                 "columns": self.edits_schema.names[1:]}]

    def owned_paths(self) -> list[str]:
        return [*super().owned_paths(), self.run.path("edits", self.name)]

    def source_outputs(self, source: str) -> list[str]:
        return [*super().source_outputs(source), self.run.path("edits", self.name, source)]


def _with_originals(found: pa.Table, texts: pa.ChunkedArray) -> pa.Table:
    """`found` with `original` and `original_sha256` of each span (Python per span: edits are few next to the text)."""
    texts = texts.combine_chunks().take(found.column("row")).to_pylist() if found.num_rows else []
    originals = [t[s:e] for t, s, e in zip(texts, found.column("start").to_pylist(), found.column("end").to_pylist())]
    digests = [hashlib.sha256(o.encode()).hexdigest() for o in originals]
    found = found.drop_columns([c for c in ("original", "original_sha256") if c in found.column_names])
    return found.append_column("original_sha256", pa.array(digests, pa.string())).append_column("original", pa.array(originals, pa.string()))
