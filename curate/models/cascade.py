"""Deciding with model scores: per-model score tables to one table with `decided_by`, then removals.

A cascade is an ordered list of (model, decides): a document goes to the first model; if that model's
`decides` predicate (SQL over its own columns) is TRUE, the cascade stops there; otherwise the
document goes to the next model, and the last model decides whatever reaches it. Models outside the
cascade score every document of their sources and decide together (`decided_by` = "a+b").
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from curate.sql import quote, session
from curate.common.sql_guard import expression_error


def decided_ids(scores: pa.Table, decides: str) -> pa.Array:
    """Ids of the rows of one model's score table for which its `decides` predicate is TRUE."""
    with session() as con:
        con.register("s", scores)
        ids = con.sql(f"SELECT id FROM s WHERE coalesce(({decides}), false)").to_arrow_table().column("id").combine_chunks()
    return ids.cast(pa.string())


def combine(live: pa.Table, scored: dict[str, pa.Table], schemas: dict[str, pa.Schema], cascade: list[tuple[str, str | None]],
            others: list[str]) -> pa.Table:
    """One row per live document (in `live`'s order): id, decided_by, then every model's columns.

    `scored[name]` holds the rows model `name` scored (id + its columns); `cascade` lists (model,
    decides) in order; `others` the models outside it that apply to this source."""
    with session() as con:
        con.register("live", live.select(["id"]).append_column("_pos", pa.array(range(live.num_rows), pa.int64())))
        joins, cases, columns = [], [], []
        for i, (name, schema) in enumerate(schemas.items()):
            table = scored.get(name) if scored.get(name) is not None else schema.empty_table().add_column(
                0, "id", pa.array([], pa.string()))
            con.register(f"m{i}", table)
            joins.append(f"LEFT JOIN (SELECT *, true AS _in{i} FROM m{i}) USING (id)")
            columns += [quote_ident(f.name) for f in schema]
            step = next((j for j, (n, _) in enumerate(cascade) if n == name), None)
            if step is not None:
                decides = cascade[step][1]
                last = step == len(cascade) - 1
                cond = f"_in{i}" if last or decides is None else f"_in{i} AND coalesce(({decides}), false)"
                cases.append((step, f"WHEN {cond} THEN {quote(name)}"))
        decided = (f"CASE {' '.join(c for _, c in sorted(cases))} END" if cases
                   else (quote("+".join(others)) if others else "NULL"))
        sql = (f"SELECT id, CAST({decided} AS VARCHAR) AS decided_by{''.join(', ' + c for c in columns)} "
               f"FROM live {' '.join(joins)} ORDER BY _pos")
        return con.sql(sql).to_arrow_table()


def removed(scores: pa.Table, keep: str | None, reason_prefix: str) -> pa.Table:
    """Rows that fail `keep` (NULL fails): id, reason `<prefix>:<decided_by>`, and the deciding scores as detail."""
    if keep is None:
        return pa.table({"id": pa.array([], pa.string()), "reason": pa.array([], pa.string()), "detail": pa.array([], pa.string())})
    with session() as con:
        con.register("scores", scores)
        gone = con.sql(f"SELECT * FROM scores WHERE NOT coalesce(({keep}), false)").to_arrow_table()
    reason = pc.binary_join_element_wise(pa.array([reason_prefix] * gone.num_rows, pa.string()),
                                         pc.fill_null(gone.column("decided_by"), "none"), ":")
    return pa.table({"id": gone.column("id"), "reason": reason, "detail": _details(gone)})


def _details(rows: pa.Table) -> pa.Array:
    """`<model>_score=0.1234 <model>_label=Low` for the model(s) that decided each row."""
    names = [c for c in rows.column_names if c.endswith("_score") or c.endswith("_label")]
    out = []
    for row in rows.to_pylist():
        who = (row["decided_by"] or "").split("+")
        parts = [f"{c}={_fmt(row[c])}" for c in names if any(c.startswith(w + "_") for w in who) and row[c] is not None]
        out.append(" ".join(parts))
    return pa.array(out, pa.string())


def _fmt(value) -> str:
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def check_predicate(predicate: str) -> str | None:
    """Why `predicate` is not one SQL expression (a parse error, a smuggled statement) in one line, or None."""
    return expression_error(predicate)
