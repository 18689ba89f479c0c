"""The batch template: a stage that maps over the live documents of each docs shard.

A subclass implements `process(batch, shard)`: one Arrow batch of the shard's live documents (those no
earlier step removed) in, an `Output` out: ledger removals, side-table rows, and counts. The template
streams the batches (memory stays bounded), counts documents, writes side rows to the stage's `sink`,
writes the ledger, and returns the shard's accounting; the runner writes the marker.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import cached_property
from typing import ContextManager, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from curate.io import fs
from curate.rundir.edits import apply_edits, read_spans
from curate.rundir import IngestRecord, ledger_table, outcomes, write_ledger
from curate.rundir.layout import ACCOUNTING
from curate.stages.base import Stage
from curate.stages.phase import Phase, PhaseRunner, Task
from curate.stages.registry import STAGES
from curate.stages.resources import Resources
from curate.io.parquet import read_table


@dataclass(frozen=True)
class ShardRef:
    """The payload of a shard task: one docs shard of one source."""

    source: str
    shard: str


@dataclass
class Output:
    """What one batch gave: `removed` rows (id, reason[, detail]), `rows` for the side table, `counts` to sum."""

    removed: pa.Table | None = None
    rows: pa.Table | None = None
    counts: dict = field(default_factory=dict)


def removals(ids: pa.Array, reason, detail: pa.Array | None = None) -> pa.Table:
    """Removal rows for `ids`: one reason for all (a string) or one per id (an array)."""
    ids = ids.combine_chunks() if isinstance(ids, pa.ChunkedArray) else ids
    if isinstance(reason, str):
        reason = pa.array([reason] * len(ids), pa.string())
    columns = {"id": ids, "reason": reason}
    if detail is not None:
        columns["detail"] = detail
    return pa.table(columns)


def shard_tasks(run, docs_step: str) -> list[Task[ShardRef]]:
    """One task per docs shard that the ingest step wrote, in its order."""
    record = run.record(docs_step, IngestRecord)
    return [Task(f"{s['source']}/{s['shard']}", f"source '{s['source']}' shard {s['shard']} (from {s['input']})",
                 ShardRef(s["source"], s["shard"]), s["source"], s["shard"]) for s in record.shards]


class ShardStage(Stage):
    NEEDS = ("docs",)
    COLUMNS: list[str] | None = None   # the docs columns `process` reads (None: all)
    ROW_NUMBERS = False                # add `_row`, each document's row in the docs shard file
    CONCURRENT = False                 # its shards may be processed at once in one process (`Phase.concurrent`)
    PER_SHARD = True                   # a shard's results follow from its own inputs (unless GLOBAL, or a kind says not)
    resources = Resources()

    def plan(self) -> list[Task[ShardRef]]:
        return shard_tasks(self.run, self.upstream["docs"])

    def execute(self, tasks: list[Task], run_phase: PhaseRunner) -> None:
        run_phase(self.shard_phase(tasks))

    def shard_phase(self, tasks: list[Task]) -> Phase:
        return Phase(ACCOUNTING, tasks, self.run_shard, self.setup, self.resources, accounts=True, kernels=self.FACETS.kernels(self.options),
                     concurrent=self.CONCURRENT, prefetch=self.prefetch, restore=self.restore)

    # ---- what a stage implements ------------------------------------------------------------------
    def setup(self) -> None:
        """Load what every task needs (a model, a tokenizer, a record), once per worker."""

    def columns(self) -> list[str] | None:
        return self.COLUMNS

    def prefetch(self, tasks: list[Task[ShardRef]]) -> list[str]:
        """Files that the shards about to run read besides their documents, asked of the disk together before them
        (`Phase.prefetch`): what an append reads that an earlier run wrote. By default their kept outcomes."""
        folder = self.kept_outcomes()
        return outcomes.records(folder, [t.key for t in tasks]) if folder is not None else []

    def kept_outcomes(self) -> str | None:
        """Where the accounting phase keeps each shard's results across runs (`curate.rundir.outcomes`); None: not kept."""
        return None

    def restore(self, tasks: list[Task[ShardRef]]) -> dict[str, dict]:
        """The counts of the shards about to run whose results the driver puts back at once (`Phase.restore`): none
        by default; each task puts back its own."""
        return {}

    def sink(self, shard: ShardRef) -> ContextManager | None:
        """Where `Output.rows` go (a ParquetSink for a side table), or None."""
        return None

    def process(self, batch: pa.Table, shard: ShardRef) -> Output | None:
        raise NotImplementedError(f"{type(self).__name__} must implement process() or process_shard()")

    def process_shard(self, batches: Iterator[pa.Table], shard: ShardRef) -> Iterator[Output | None]:
        """Override to load per-shard state before the batches; by default each batch is processed alone."""
        for batch in batches:
            yield self.process(batch, shard)

    # ---- the template -----------------------------------------------------------------------------
    def run_shard(self, shard: ShardRef) -> dict:
        """The accounting phase's task: `process_shard` over the live batches, the sink, the ledger."""
        return self.map_shard(shard, self.process_shard, self.sink(shard), ledger=self.REMOVES)

    def map_shard(self, shard: ShardRef, process_shard, sink: ContextManager | None, columns: list[str] | None = None,
                  ledger: bool = False, live: list[pa.Table] | None = None) -> dict:
        """Stream the shard's live batches (`live`: the task read them already) through `process_shard(batches, shard)`;
        side rows go to `sink`, removals to the stage's ledger (when `ledger`); returns the shard's counts. Any batch
        phase of a stage can use it, not only the accounting one."""
        n_in, removed, counts = 0, [], {}

        def counted():
            nonlocal n_in
            for batch in self.live_batches(shard, columns) if live is None else live:
                n_in += batch.num_rows
                yield batch

        with sink or nullcontext() as out_sink:
            for out in process_shard(counted(), shard):
                if out is None:
                    continue
                if out.rows is not None:
                    out_sink.write(out.rows)
                if out.removed is not None and out.removed.num_rows:
                    removed.append(out.removed)
                for k, v in out.counts.items():
                    counts[k] = counts.get(k, 0) + v
        by_reason = write_ledger(self.run.ledger(self.name, shard.source, shard.shard),
                                 _ledger_rows(shard.source, self.name, removed)) if ledger else {}
        return {"source": shard.source, "shard": shard.shard, "in": n_in, "kept": n_in - sum(by_reason.values()),
                "removed": dict(sorted(by_reason.items())), **counts}

    def live_batches(self, shard: ShardRef, columns: list[str] | None = None, batch_rows: int | None = None) -> Iterator[pa.Table]:
        """The shard's documents that are still alive, in batches of `batch_rows` (default
        `execution.batch_rows`); `columns` defaults to the stage's `columns()`."""
        removed = removed_ids(self.run, self.previous, shard)
        columns = columns or self.columns()
        edits = [read_spans(self.run, step, shard.source, shard.shard) for step in self.editors] if columns is None or "text" in columns else []
        edits = [spans for spans in edits if spans]
        read = columns + ["id"] if edits and columns is not None and "id" not in columns else columns
        with fs.open_input(self.run.docs(shard.source, shard.shard)) as handle:
            pf = pq.ParquetFile(handle, pre_buffer=False, buffer_size=1 << 20)
            offset = 0
            for batch in pf.iter_batches(batch_size=batch_rows or self.pipeline.execution["batch_rows"], columns=read, use_threads=False):
                table = pa.Table.from_batches([batch])
                if self.ROW_NUMBERS:
                    table = table.append_column("_row", pa.array(np.arange(offset, offset + len(table), dtype=np.int64)))
                offset += len(table)
                if len(removed):
                    table = table.filter(pc.invert(pc.is_in(table.column("id"), value_set=removed)))
                for spans in edits:   # in step order: each step's offsets are into the text the step before it left
                    table = apply_edits(table, spans)
                yield table.select(columns + (["_row"] if self.ROW_NUMBERS else [])) if read is not columns else table

    @cached_property
    def editors(self) -> list[str]:
        """The earlier steps that edit text (`Stage.EDITS`, e.g. pii), whose edits this step's documents carry."""
        kinds = {s.name: s.kind for s in self.pipeline.stages}
        return [step for step in self.previous if getattr(STAGES.get(kinds.get(step, "")), "EDITS", False)]


def _ledger_rows(source: str, stage: str, removed: list[pa.Table]) -> pa.Table:
    if not removed:
        return ledger_table(source, stage, [], [])
    table = pa.concat_tables(removed, promote_options="default")
    detail = table.column("detail").combine_chunks() if "detail" in table.column_names else None
    return ledger_table(source, stage, table.column("id").combine_chunks(), table.column("reason").combine_chunks(), detail)


def removed_ids(run, steps: list[str], shard: ShardRef) -> pa.Array:
    """Ids that earlier steps removed from this shard (their ledgers are small next to the documents)."""
    parts = []
    for step in steps:
        path = run.ledger(step, shard.source, shard.shard)
        if fs.exists(path):
            with fs.open_input(path) as handle:
                parts.extend(read_table(handle, columns=["id"]).column("id").chunks)
    return pa.chunked_array(parts, pa.string()).combine_chunks() if parts else pa.array([], pa.string())
