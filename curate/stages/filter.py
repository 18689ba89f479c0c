"""The filter stage: named recipes and inline SQL predicates, evaluated with DuckDB per shard.

Each shard's live documents are joined by `id` with the shard's signals (when a signals stage ran), so a
predicate can use document columns (`int_score`, `text`) and signals (`rps_doc_word_count`) alike. A
document is kept only when every rule is TRUE; a removed document's ledger reason is the first rule it
failed: `<recipe>.<rule>`, or `where:<predicate>` for an inline one. Rules are SQL over stored
columns, so changing a threshold re-runs this stage alone: no signal is recomputed.
"""

from __future__ import annotations

import time

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from curate.config.schema import Field
from curate.errors import ConfigError
from curate.io import fs
from curate.recipes import Rule, load_recipe
from curate.runner.tasks import Task
from curate.stages.base import ShardStage

ALL = "all"


def _connect() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("SET threads = 1")  # one task per core: Ray already runs tasks in parallel
    return con


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def reason_sql(rules: list[Rule]) -> str:
    """A CASE expression naming the first failed rule (NULL when all pass)."""
    whens = " ".join(f"WHEN NOT coalesce(({r.predicate}), false) THEN {_quote(r.name)}" for r in rules)
    return f"CASE {whens} END"


class FilterStage(ShardStage):
    OPTIONS = {
        "recipes": Field((dict,), default=dict, item=Field((list,), item=Field((str,))),
                         doc="source name (or 'all') -> recipe names from filters/"),
        "where": Field((dict,), default=dict, item=Field((str,)), doc="source name (or 'all') -> SQL predicate to keep"),
    }

    @classmethod
    def validate_options(cls, options, sources, file, key):
        for option in ("recipes", "where"):
            for source in options[option]:
                if source != ALL and source not in sources:
                    raise ConfigError(file, f"{key}.{option}.{source}", f"not a source; sources are {', '.join(sources)} (or all)")
        for source, names in options["recipes"].items():
            for i, name in enumerate(names):
                load_recipe(name, file, f"{key}.recipes.{source}[{i}]")
        for source, predicate in options["where"].items():
            try:
                duckdb.sql(f"EXPLAIN SELECT * FROM (SELECT 1 AS _x) WHERE ({predicate})")
            except duckdb.ParserException as exc:
                raise ConfigError(file, f"{key}.where.{source}", f"invalid SQL predicate: {str(exc).splitlines()[0]}") from None
            except duckdb.Error:
                pass  # column names are checked against the data when the stage is planned

    def rules(self, source: str) -> list[Rule]:
        out = []
        for who in (ALL, source):
            for name in self.options["recipes"].get(who, []):
                out += load_recipe(name, self.pipeline.file, f"stages.{self.name}.recipes.{who}")
        for who in (ALL, source):
            if who in self.options["where"]:
                out.append(Rule(f"where:{self.options['where'][who]}", self.options["where"][who]))
        return out

    def fingerprint_extra(self, tasks):
        return {s: [(r.name, r.predicate) for r in self.rules(s)] for s in self.pipeline.sources}

    def _signals_path(self, source: str, shard: str) -> str | None:
        path = self.run.path("signals", source, f"{shard}.parquet")
        return path if fs.exists(path) else None

    def plan(self) -> list[Task]:
        tasks = super().plan()
        self._check_columns(tasks)
        return tasks

    def _check_columns(self, tasks: list[Task]) -> None:
        """Bind every rule against its source's columns before any task runs: a typo fails in one line."""
        for source in self.pipeline.sources:
            rules = self.rules(source)
            first = next((t for t in tasks if t.source == source), None)
            if not rules or first is None:
                continue
            con = self._bind(first, limit=0)
            for rule in rules:
                try:
                    con.execute(f"SELECT {reason_sql([rule])} FROM docs").fetchall()
                except duckdb.Error as exc:
                    columns = [c[0] for c in con.sql("DESCRIBE docs").fetchall()]
                    raise ConfigError(self.pipeline.file, f"stages.{self.name} rule {rule.name} for {source}",
                                      f"{str(exc).splitlines()[0]} (columns: {', '.join(columns)})") from None

    def _bind(self, task: Task, limit: int | None = None, table: pa.Table | None = None) -> duckdb.DuckDBPyConnection:
        """A connection whose view `docs` is the live documents joined with their signals."""
        con = _connect()
        if table is None:
            with fs.open_input(self.run.docs(task.source, task.shard)) as handle:
                table = pq.read_schema(handle).empty_table()
        con.register("live", table)
        signals = self._signals_path(task.source, task.shard)
        if signals:
            con.execute(f"CREATE VIEW sig AS SELECT * FROM read_parquet({_quote(signals)})")
            con.execute("CREATE VIEW docs AS SELECT * FROM live LEFT JOIN sig USING (id)")
        else:
            con.execute("CREATE VIEW docs AS SELECT * FROM live")
        return con

    def run_task(self, task: Task) -> dict:
        started = time.monotonic()
        rules = self.rules(task.source)
        n_in, ids, reasons = 0, [], []
        for table in self.live_batches(task):
            n_in += table.num_rows
            if not rules or not table.num_rows:
                continue
            con = self._bind(task, table=table)
            # OFFSET 0 keeps DuckDB from pushing the filter into the CASE (which would evaluate every rule)
            removed = con.sql(f"SELECT id, reason FROM (SELECT id, {reason_sql(rules)} AS reason FROM docs OFFSET 0) "
                              "WHERE reason IS NOT NULL ORDER BY id").to_arrow_table()
            ids.extend(removed.column("id").chunks)
            reasons.extend(removed.column("reason").cast(pa.string()).chunks)
            con.close()
        counts = self.write_ledger(task, ids, reasons)
        return self.finish_task(task, started, n_in, counts)
