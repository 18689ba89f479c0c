"""A task's DuckDB connection is kept per thread (`curate.sql.session`): opening and locking one per batch cost
~18 ms each, ~55 s of CPU at 1M documents. What one block registers must never be seen by the next."""

import threading

import duckdb
import pyarrow as pa
import pytest

from curate.sql import session


def test_a_thread_reuses_its_connection_and_a_block_leaves_nothing_behind():
    with session() as con:
        first = con.con
        con.register("live", pa.table({"id": ["a", "b"]}))
        con.view("docs", "SELECT * FROM live")
        assert con.sql("SELECT count(*) FROM docs").fetchall() == [(2,)]
    with session() as con:
        assert con.con is first
        for name in ("live", "docs"):
            with pytest.raises(duckdb.CatalogException):
                con.sql(f"SELECT * FROM {name}").fetchall()
        with pytest.raises(duckdb.Error):   # still locked: no file outside the run is read
            con.sql("SELECT * FROM read_csv('/etc/passwd')").fetchall()


def test_a_failing_block_closes_the_connection_and_another_thread_has_its_own():
    with session() as con:
        kept = con.con
    with pytest.raises(duckdb.Error), session() as con:
        con.register("live", pa.table({"id": ["a"]}))
        con.sql("SELECT no_such_column FROM live").fetchall()
    with session() as con:
        assert con.con is not kept
        again = con.con
    other = []
    thread = threading.Thread(target=lambda: other.append(session().__enter__().con))
    thread.start()
    thread.join()
    assert other[0] is not again
