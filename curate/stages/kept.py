"""The final step: write the documents that survived every stage to `RUN/kept/<source>/<shard>.parquet`."""

from __future__ import annotations

import time

import pyarrow.parquet as pq

from curate.io import fs
from curate.io.parquet import ParquetSink
from curate.runner.tasks import Task
from curate.stages.base import ShardStage


class KeptStage(ShardStage):
    OPTIONS = {}

    def owned_paths(self) -> list[str]:
        return [self.run.path("kept"), self.run.path("_state", self.name)]

    def run_task(self, task: Task) -> dict:
        started = time.monotonic()
        n = 0
        with fs.open_input(self.run.docs(task.source, task.shard)) as handle:
            schema = pq.read_schema(handle)
        with ParquetSink(self.run.kept(task.source, task.shard), schema) as sink:
            for table in self.live_batches(task):
                sink.write(table)
                n += table.num_rows
        return self.finish_task(task, started, n, {})
