"""The filter stage: named recipes and inline SQL predicates, evaluated with DuckDB per shard.

Each batch of live documents is joined by `id` with the shard's rows of every id-keyed table an earlier step
wrote (`Stage.VIEW`: signals, model scores, a new signal stage), so a predicate can use document columns
(`int_score`, `text`), signals (`rps_doc_word_count`) and scores alike; a column two earlier steps write is
read from the later one. The side tables are read once per shard, with pyarrow
through curate's own filesystem (a run in object storage included), and only the columns the rules name.
A document is kept only when every rule is TRUE; a removed document's ledger reason is the first rule it
failed: `<recipe>.<rule>`, or `where:<predicate>` for an inline one; its detail holds the values that rule
read (`int_score=2`, `rps_doc_word_count=12`; a text column by its length), so a removal can be checked
without a join. Rules are SQL over stored columns, so changing a threshold re-runs this stage alone.
"""

from __future__ import annotations

import re

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from curate.config.chain import keyed_steps
from curate.common.schema import Field
from curate.errors import ConfigError
from curate.io import fs
from curate.recipes import Rule, load_recipe, reason_sql
from curate.sql import Scoped, connect, quote, session
from curate.common.sql_guard import check_expression
from curate.stages.facets import Facets
from curate.stages.registry import STAGES, stage
from curate.stages.shard import Output, ShardRef, ShardStage, removals
from curate.io.parquet import read_table

ALL = "all"
DETAIL_CHARS = 80   # each value in a ledger detail is cut to this many characters
TEXT_COLUMNS = ("text",)  # shown by their length, not their content


def named_columns(predicate: str, columns: list[str]) -> list[str]:
    """The columns a predicate names (as whole words), in the order they appear in `columns`."""
    text = predicate.lower()
    return [c for c in columns if c != "id" and re.search(rf"(?<!\w){re.escape(c.lower())}(?!\w)", text)]


def _ident(column: str) -> str:
    return '"' + column.replace('"', '""') + '"'


def detail_sql(rules: list[Rule], columns: list[str]) -> tuple[str, str]:
    """(the columns to carry beside `reason`, a CASE over `reason` giving the values the failed rule read).
    Only the columns some rule names are carried (a text column as its length), so nothing else is copied."""
    carried, whens = {}, []
    for rule in rules:
        parts = []
        for c in named_columns(rule.predicate, columns):
            carried[c] = f"length({_ident(c)}) AS {_ident(c)}" if c in TEXT_COLUMNS else _ident(c)
            name = f"length({c})=" if c in TEXT_COLUMNS else f"{c}="
            parts.append(f"{quote(name)} || coalesce(left(CAST({_ident(c)} AS VARCHAR), {DETAIL_CHARS}), 'NULL')")
        if parts:
            whens.append(f"WHEN {quote(rule.name)} THEN concat_ws(', ', {', '.join(parts)})")
    return "".join(f", {c}" for c in carried.values()), (f"CASE reason {' '.join(whens)} END" if whens else "NULL")


class FilterFacets(Facets):
    REPORT = ("curate.report.signals:SECTION",)   # its thresholds, drawn over the signals


@stage("filter")
class FilterStage(ShardStage):
    FACETS = FilterFacets
    USES = ("tables",)   # every id-keyed table of the earlier steps (config/chain.py)
    REMOVES = True
    SOURCE_OPTIONS = ("recipes", "where")
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
            check_expression(predicate, file, f"{key}.where.{source}")  # column names: checked when the stage is planned

    @classmethod
    def predicates(cls, options, file, key):
        rules = [r for who, names in options["recipes"].items() for n in names for r in load_recipe(n, file, f"{key}.recipes.{who}")]
        return [(r.name, r.predicate) for r in rules] + [(f"where.{who}", p) for who, p in options["where"].items()]

    @classmethod
    def source_predicates(cls, options, file, key, source):
        """The rules `source` is filtered by, in the order `rules` gives them, labelled as the options name them."""
        return ([(r.name, r.predicate) for who in (ALL, source) for name in options["recipes"].get(who, [])
                 for r in load_recipe(name, file, f"{key}.recipes.{who}")]
                + [(f"where.{who}", options["where"][who]) for who in (ALL, source) if who in options["where"]])

    def rules(self, source: str) -> list[Rule]:
        out = []
        for who in (ALL, source):
            for name in self.options["recipes"].get(who, []):
                out += load_recipe(name, self.pipeline.file, f"stages.{self.name}.recipes.{who}")
        for who in (ALL, source):
            if who in self.options["where"]:
                out.append(Rule(f"where:{self.options['where'][who]}", self.options["where"][who]))
        return out

    def reads(self, tasks, source):
        """The rules themselves, recipes included: a recipe file edited in place re-decides."""
        return {"rules": [(r.name, r.predicate) for r in self.rules(source)]}

    def setup(self) -> None:
        self.rules_of = {source: self.rules(source) for source in self.pipeline.sources}

    def check(self, tasks) -> None:
        """Bind every rule against its source's columns before any task runs: a typo fails in one line."""
        for source in self.pipeline.sources:
            rules = self.rules(source)
            first = next((t.payload for t in tasks if t.source == source), None)
            if not rules or first is None:
                continue
            with fs.open_input(self.run.docs(first.source, first.shard)) as handle:
                docs = pq.read_schema(handle).empty_table()
            con = Scoped(connect())   # its own connection: a failing rule is expected here
            self._bind(con, docs, self._side_tables(first, rules, schema_only=True))
            for rule in rules:
                try:
                    con.sql(f"SELECT {reason_sql([rule])} FROM docs").fetchall()
                except duckdb.Error as exc:
                    columns = [c[0] for c in con.sql("DESCRIBE docs").fetchall()]
                    raise ConfigError(self.pipeline.file, f"stages.{self.name} rule {rule.name} for {source}",
                                      f"{str(exc).splitlines()[0]} (columns: {', '.join(columns)})") from None

    def _side_tables(self, shard: ShardRef, rules: list[Rule], schema_only: bool = False) -> dict[str, pa.Table]:
        """The shard's rows of each earlier step's id-keyed table, read once per shard with pyarrow through curate's
        filesystem (local or object storage, the run's own credentials), only `id` and the columns the rules name."""
        text = " ".join(r.predicate for r in rules).lower()
        found = []
        for step in keyed_steps(self.pipeline.stages, STAGES, self.name):
            path = self.run.table(step, shard.source, shard.shard)
            if fs.exists(path):
                with fs.open_input(path) as handle:
                    schema = pq.read_schema(handle)
                found.append((step, path, schema, [c for c in schema.names if c not in ("id", "source")
                                                   and re.search(rf"(?<!\w){re.escape(c.lower())}(?!\w)", text)]))
        owner = {c: step for step, _, _, named in found for c in named}   # the later step's column wins
        out = {}
        for step, path, schema, named in found:
            columns = ["id"] + [c for c in named if owner[c] == step]
            if schema_only:
                out[step] = schema.empty_table().select(columns)
                continue
            with fs.open_input(path) as handle:
                out[step] = read_table(handle, columns=columns)
        return out

    @staticmethod
    def _bind(con: Scoped, table: pa.Table, sides: dict[str, pa.Table]) -> None:
        """The view `docs` on `con`: `table` joined by id with the side tables."""
        con.register("live", table)
        view = "SELECT * FROM live"
        for i, rows in enumerate(sides.values()):
            con.register(f"side{i}", rows)
            if rows.num_columns > 1:
                view += f" LEFT JOIN side{i} USING (id)"
        con.view("docs", view)

    def process_shard(self, batches, shard: ShardRef):
        rules = self.rules_of[shard.source]
        sides = self._side_tables(shard, rules) if rules else {}
        for batch in batches:
            yield self._removed(batch, rules, sides)

    def _removed(self, batch: pa.Table, rules: list[Rule], sides: dict[str, pa.Table]) -> Output | None:
        if not rules or not batch.num_rows:
            return None
        with session() as con:
            self._bind(con, batch, sides)
            columns = [c[0] for c in con.sql("DESCRIBE docs").fetchall()]
            # OFFSET 0 keeps DuckDB from pushing the filter into the CASE (which would evaluate every rule)
            carried, detail = detail_sql(rules, columns)  # the values behind a removal, formatted for removed rows only
            removed = con.sql(f"SELECT id, reason, {detail} AS detail FROM (SELECT id, {reason_sql(rules)} AS reason{carried} "
                              "FROM docs OFFSET 0) WHERE reason IS NOT NULL ORDER BY id").to_arrow_table()
        return Output(removed=removals(removed.column("id"), removed.column("reason").cast(pa.string()).combine_chunks(),
                                       removed.column("detail").cast(pa.string()).combine_chunks()))
