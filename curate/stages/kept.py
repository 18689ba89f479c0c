"""The final step: write the documents that survived every stage to `RUN/kept/<source>/<shard>.parquet`.

Every file has one schema (`source`, `id`, `text`, then every source's own columns; see rundir/tables.py),
so `kept/` loads in one call with HF `datasets`, pandas, polars, pyarrow.dataset and DuckDB.
"""

from __future__ import annotations

import pyarrow as pa

from curate.io.parquet import ParquetSink
from curate.rundir.tables import DocumentSchema
from curate.stages.shard import Output, ShardRef, ShardStage


class KeptStage(ShardStage):
    """Added by the runner after the last step (before a final one such as `manifest`); not a `use:`."""

    TABLES = ("kept",)
    CONCURRENT = True

    def reads(self, tasks, source):
        """The shared schema: every kept file has every source's columns, so a new column anywhere rewrites them all."""
        return {"schema": DocumentSchema.of_docs(self.run, [(t.payload.source, t.payload.shard) for t in tasks]).schema.to_string()}

    def execute(self, tasks, run_phase) -> None:
        self.documents = DocumentSchema.of_docs(self.run, [(t.payload.source, t.payload.shard) for t in tasks])
        super().execute(tasks, run_phase)

    def sink(self, shard: ShardRef) -> ParquetSink:
        return ParquetSink(self.run.kept(shard.source, shard.shard), self.documents.schema)

    def process(self, batch: pa.Table, shard: ShardRef) -> Output:
        return Output(rows=self.documents.conform(batch, shard.source))
