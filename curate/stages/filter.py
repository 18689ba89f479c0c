"""The filter stage: SQL predicates (DuckDB) per source over each shard's live documents.

A document is kept when its source's predicate is TRUE; FALSE or NULL removes it, and the ledger says
`where:<predicate>`. Sources without a predicate pass through unchanged (and are still accounted for).
"""

from __future__ import annotations

import time

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from curate.config.schema import Field
from curate.errors import ConfigError
from curate.io import fs
from curate.runner.tasks import Task
from curate.stages.base import ShardStage


def _connect() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("SET threads = 1")  # one task per core: Ray already runs tasks in parallel
    return con


class FilterStage(ShardStage):
    OPTIONS = {
        "where": Field((dict,), item=Field((str,)), doc="source name -> SQL predicate that a kept document satisfies"),
    }

    @classmethod
    def validate_options(cls, options, sources, file, key):
        for source, predicate in options["where"].items():
            if source not in sources:
                raise ConfigError(file, f"{key}.where.{source}", f"not a source; sources are {', '.join(sources)}")
            try:
                duckdb.sql(f"EXPLAIN SELECT * FROM (SELECT 1 AS _x) WHERE ({predicate})")
            except duckdb.ParserException as exc:
                raise ConfigError(file, f"{key}.where.{source}", f"invalid SQL predicate: {str(exc).splitlines()[0]}") from None
            except duckdb.Error:
                pass  # column names are checked against the data when the stage is planned

    def plan(self) -> list[Task]:
        tasks = super().plan()
        self._check_columns(tasks)
        return tasks

    def _check_columns(self, tasks: list[Task]) -> None:
        """Bind each predicate against its source's document schema before any task runs."""
        for source, predicate in self.options["where"].items():
            first = next((t for t in tasks if t.source == source), None)
            if first is None:
                continue
            with fs.open_input(self.run.docs(source, first.shard)) as handle:
                schema = pq.read_schema(handle)
            con = _connect()
            con.register("docs", schema.empty_table())
            try:
                con.execute(f"SELECT id FROM docs WHERE ({predicate})").fetchall()
            except duckdb.Error as exc:
                raise ConfigError(self.pipeline.file, f"stages.{self.name}.where.{source}",
                                  f"{str(exc).splitlines()[0]} (columns: {', '.join(schema.names)})") from None

    def run_task(self, task: Task) -> dict:
        started = time.monotonic()
        predicate = self.options["where"].get(task.source)
        con = _connect() if predicate else None
        n_in, ids = 0, []
        for table in self.live_batches(task):
            n_in += table.num_rows
            if con is None or not table.num_rows:
                continue
            con.register("docs", table)
            removed = con.sql(f"SELECT id FROM docs WHERE NOT coalesce(({predicate}), false)").to_arrow_table()
            ids.extend(removed.column("id").chunks)
            con.unregister("docs")
        n_removed = sum(len(c) for c in ids)
        reasons = [pa.array([f"where:{predicate}"] * n_removed, pa.string())] if n_removed else []
        counts = self.write_ledger(task, ids, reasons)
        return self.finish_task(task, started, n_in, counts)
