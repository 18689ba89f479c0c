"""What a stage is: options, a plan of tasks, a pure function per task, and the outputs it owns."""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
import time
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from curate.config.pipeline import Pipeline, canonical_json
from curate.config.schema import Field
from curate.io import fs
from curate.io.parquet import write_table
from curate.readers.base import LEDGER_SCHEMA
from curate.runner.rundir import RunDir
from curate.runner.tasks import Task


class Stage(ABC):
    """A pipeline step. Subclasses set OPTIONS and implement `plan` and `run_task`.

    `previous` lists the names of earlier stages whose ledgers remove documents before this one sees them.
    """

    OPTIONS: dict[str, Field] = {}

    def __init__(self, name: str, options: dict, pipeline: Pipeline, run: RunDir, previous: list[str]):
        self.name, self.options, self.pipeline, self.run, self.previous = name, options, pipeline, run, previous

    @classmethod
    def validate_options(cls, options: dict, sources: dict, file: str, key: str) -> None:
        """Checks across options (beyond types and bounds); raise ConfigError."""

    def fingerprint(self, upstream: str, tasks: list[Task]) -> str:
        """Changes whenever this stage's results could change: options, upstream results, planned inputs."""
        body = canonical_json({"kind": type(self).__name__, "options": self.options, "upstream": upstream,
                               "extra": self.fingerprint_extra(tasks)})
        return hashlib.sha256(body.encode()).hexdigest()

    def fingerprint_extra(self, tasks: list[Task]):
        return None

    def owned_paths(self) -> list[str]:
        """Everything this stage writes, removed when its fingerprint changes."""
        return [self.run.path("ledger", self.name), self.run.path("_state", self.name)]

    @abstractmethod
    def plan(self) -> list[Task]:
        """The tasks of this stage, in a deterministic order."""

    @abstractmethod
    def run_task(self, task: Task) -> dict:
        """Do one task: write its outputs, then its marker (`finish_task`); return its counts."""

    def resources(self) -> dict | None:
        return None

    def execute(self, tasks: list[Task], runner) -> None:
        """Run the planned tasks; a global stage overrides this to run several phases."""
        runner.run(self, self.name, tasks, lambda t: self.run.marker(self.name, t.source, t.shard))

    def finish_task(self, task: Task, started: float, n_in: int, removed: dict, **extra) -> dict:
        """Write the completion marker (last, after every output) and return the task's counts."""
        removed_total = sum(removed.values())
        stats = {"stage": self.name, "source": task.source, "shard": task.shard, "in": n_in,
                 "kept": n_in - removed_total, "removed": dict(sorted(removed.items())),
                 "seconds": round(time.monotonic() - started, 4), **extra}
        self.run.write_json(self.run.marker(self.name, task.source, task.shard), stats)
        return stats


class ShardStage(Stage):
    """A stage that maps over the ingested document shards, seeing only documents no earlier stage removed."""

    def plan(self) -> list[Task]:
        return [Task(self.name, m["source"], m["shard"], f"source '{m['source']}' shard {m['shard']} (from {m.get('input', '?')})")
                for m in self.run.markers(self.previous[0])] if self.previous else []

    def removed_ids(self, source: str, shard: str) -> pa.Array:
        """Ids that earlier stages removed from this shard (their ledgers are small next to the documents)."""
        parts = []
        for stage in self.previous:
            path = self.run.ledger(stage, source, shard)
            if fs.exists(path):
                with fs.open_input(path) as handle:
                    parts.extend(pq.read_table(handle, columns=["id"]).column("id").chunks)
        return pa.chunked_array(parts, pa.string()).combine_chunks() if parts else pa.array([], pa.string())

    def live_batches(self, task: Task, columns: list[str] | None = None, batch_rows: int | None = None,
                     with_rows: bool = False) -> Iterator[pa.Table]:
        """Stream the shard's documents that are still alive, in batches (memory stays bounded).

        `with_rows` adds `_row`, each document's row number in the docs shard file.
        """
        removed = self.removed_ids(task.source, task.shard)
        path = self.run.docs(task.source, task.shard)
        handle = fs.open_input(path)
        with handle:
            pf = pq.ParquetFile(handle, pre_buffer=False, buffer_size=1 << 20)
            size = batch_rows or self.pipeline.execution["batch_rows"]
            offset = 0
            for batch in pf.iter_batches(batch_size=size, columns=columns, use_threads=False):
                table = pa.Table.from_batches([batch])
                if with_rows:
                    table = table.append_column("_row", pa.array(np.arange(offset, offset + len(table), dtype=np.int64)))
                offset += len(table)
                if len(removed):
                    table = table.filter(pc.invert(pc.is_in(table.column("id"), value_set=removed)))
                yield table

    def write_ledger(self, task: Task, ids: list[pa.Array], reasons: list[pa.Array], details: list[pa.Array] | None = None) -> dict:
        """Record removed documents for this shard; returns counts by reason."""
        id_arr = pa.chunked_array(ids, pa.string()).combine_chunks() if ids else pa.array([], pa.string())
        reason_arr = pa.chunked_array(reasons, pa.string()).combine_chunks() if reasons else pa.array([], pa.string())
        n = len(id_arr)
        detail_arr = (pa.chunked_array(details, pa.string()).combine_chunks() if details else pa.nulls(n, pa.string()))
        table = pa.Table.from_arrays([id_arr, pa.array([task.source] * n, pa.string()), pa.array([self.name] * n, pa.string()),
                                      reason_arr, detail_arr], schema=LEDGER_SCHEMA)
        write_table(self.run.ledger(self.name, task.source, task.shard), table)
        counts = pc.value_counts(reason_arr).to_pylist() if n else []
        return {c["values"]: c["counts"] for c in counts}
