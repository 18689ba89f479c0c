"""SQL from users stays SQL that reads: filter predicates, `keep` rules and recipes are single expressions,
`curate query` is one read-only statement, and DuckDB's file access is off except what curate registers.

A predicate is pasted into curate's own statements, so `1=1); COPY (SELECT 42) TO 'x.csv'; SELECT (1` would
otherwise run a second statement at load; a shared recipe could read or write any file the user can. The
checks parse with DuckDB's own parser (`json_serialize_sql`), never by pattern; `lock` then turns DuckDB's
external access off for the connection (reads only below the folders curate names, writes nowhere) and
locks its configuration, so even an expression's subquery cannot reach another file.
"""

from __future__ import annotations

import json
import threading

import duckdb

from curate.errors import ConfigError, CurateError

# Statement kinds `curate query` runs: SELECT covers WITH, FROM-first, VALUES, DESCRIBE, SHOW and SUMMARIZE.
READ_ONLY = {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN}
_PARSER = None
_PARSER_LOCK = threading.Lock()
SMUGGLED = "not a single SQL expression (it closes its parenthesis, or adds a clause or a statement)"


def _parser() -> duckdb.DuckDBPyConnection:
    """A cursor of one locked connection that only parses (a cursor per call: safe from several threads)."""
    global _PARSER
    with _PARSER_LOCK:
        if _PARSER is None:
            _PARSER = lock(duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False}))
        return _PARSER.cursor()


def _parse(sql: str) -> dict:
    """DuckDB's parse tree of `sql` as JSON (nothing is bound or run)."""
    return json.loads(_parser().execute("SELECT json_serialize_sql(?::VARCHAR)", [sql]).fetchall()[0][0])


def expression_error(expr: str) -> str | None:
    """Why `expr` is not one SQL expression (a parse error, or a statement smuggled around it), or None."""
    if not expr.strip():
        return "empty expression"
    wrapped = f"SELECT (\n{expr}\n)"
    try:
        if len(_parser().extract_statements(wrapped)) != 1:
            return SMUGGLED
    except duckdb.Error as exc:
        return str(exc).splitlines()[0]
    tree = _parse(wrapped)
    if tree.get("error"):
        return tree.get("error_message", "does not parse").splitlines()[0]
    statements = tree.get("statements") or []
    node = statements[0].get("node", {}) if len(statements) == 1 else {}
    single = (node.get("type") == "SELECT_NODE" and len(node.get("select_list", [])) == 1
              and (node.get("from_table") or {}).get("type") in (None, "EMPTY") and not node.get("where_clause")
              and not node.get("groups", {}).get("group_expressions") and not node.get("having")
              and not node.get("qualify") and not node.get("modifiers") and not node.get("cte_map", {}).get("map")
              and not node.get("sample"))
    return None if single else SMUGGLED


def check_expression(expr: str, file: str, key: str) -> None:
    """A ConfigError naming `file` and `key` unless `expr` is one SQL expression."""
    if error := expression_error(expr):
        raise ConfigError(file, key, f"invalid SQL predicate: {error}; give one expression, e.g. `int_score >= 3`")


def read_only_statement(sql: str) -> str:
    """`sql` as one read-only statement (SELECT, WITH, FROM, DESCRIBE, SHOW, SUMMARIZE, EXPLAIN), without its
    trailing semicolon; a CurateError in one line for anything else."""
    try:
        statements = _parser().extract_statements(sql)
    except duckdb.Error as exc:
        raise CurateError(f"query failed: {str(exc).splitlines()[0]}") from None
    if len(statements) != 1:
        raise CurateError(f"curate query runs one statement; got {len(statements)}. Run them one at a time")
    statement = statements[0]
    if statement.type == duckdb.StatementType.EXPLAIN:  # EXPLAIN ANALYZE runs what it explains: that must read too
        words = statement.query.lstrip().split(None, 2)
        inner = words[2] if len(words) > 2 and words[1].upper() == "ANALYZE" else statement.query.lstrip()[len(words[0]):]
        read_only_statement(inner)
    elif statement.type not in READ_ONLY:
        kind = statement.type.name.replace("_", " ")
        raise CurateError(f"curate query is read-only and runs no {kind} statement; use SELECT (and --out FILE to write a result)")
    return without_trailing_comments(statement.query).rstrip().rstrip(";").strip()


def without_trailing_comments(sql: str) -> str:
    """`sql` without the comments after its last token (`SELECT 1; -- why`), found by DuckDB's own tokenizer
    (a '--' inside a string is no comment): pasted into a statement of curate's, a trailing `--` comment would
    swallow what follows it."""
    tokens = duckdb.tokenize(sql)
    end = len(tokens)
    while end and tokens[end - 1][1] == duckdb.token_type.comment:
        end -= 1
    return sql[: tokens[end][0]] if end < len(tokens) else sql


def lock(con: duckdb.DuckDBPyConnection, readable: tuple[str, ...] = ()) -> duckdb.DuckDBPyConnection:
    """Turn off `con`'s access to files and extensions, but for reading below the `readable` folders (local
    paths or the URIs of filesystems registered on it), and lock its configuration for good. Arrow tables
    registered before or after still read."""
    folders = [f.rstrip("/") + "/" for f in readable]
    if folders:
        con.execute("SET allowed_directories = ?", [folders])
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    return con
