"""The final step: write the documents that survived every stage to `RUN/kept/<source>/<shard>.parquet`."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from curate.io import fs
from curate.io.parquet import ParquetSink
from curate.stages.shard import Output, ShardRef, ShardStage


class KeptStage(ShardStage):
    """Added by the runner after the last step (before a final one such as `manifest`); not a `use:`."""

    TABLES = ("kept",)

    def sink(self, shard: ShardRef) -> ParquetSink:
        with fs.open_input(self.run.docs(shard.source, shard.shard)) as handle:
            schema = pq.read_schema(handle)
        return ParquetSink(self.run.kept(shard.source, shard.shard), schema)

    def process(self, batch: pa.Table, shard: ShardRef) -> Output:
        return Output(rows=batch)
