"""DuckDB as curate uses it: one connection setting, reading Parquet wherever a run lives, quoting, and a
memory bound for the connections of the driver (the report, `curate query`) whose tables grow with the run."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
import weakref
from typing import Iterator

import duckdb

from curate.errors import UsageError

from curate.io import fs
from curate.common.sql_guard import lock


MEMORY_ENV = "CURATE_DUCKDB_MEMORY_MB"
MEMORY_MB = 256   # DuckDB's own buffers in the driver; above it, joins, sorts and aggregates spill to a temp folder


def memory_mb() -> int:
    """The driver's DuckDB memory limit in MB: `CURATE_DUCKDB_MEMORY_MB`, or 256."""
    text = os.environ.get(MEMORY_ENV, "").strip()
    if not text:
        return MEMORY_MB
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 16:
        raise UsageError(f"{MEMORY_ENV}={text}: give DuckDB's memory limit in MB, a whole number of at least 16")
    return value


def bound(con: duckdb.DuckDBPyConnection, memory: int | None = None, threads: int | None = 2) -> duckdb.DuckDBPyConnection:
    """Cap `con`'s memory at `memory` MB (default `memory_mb()`) and its threads, spilling to a private temp
    folder (removed with the connection) instead: DuckDB would otherwise take 80% of the machine's memory
    for a report's GROUP BY over a 10M-document ledger, and spill to `.tmp` in the current folder. Call before
    `lock` (the configuration is locked there)."""
    folder = tempfile.mkdtemp(prefix="curate-duckdb-")
    weakref.finalize(con, shutil.rmtree, folder, True)
    con.execute(f"SET memory_limit = '{int(memory or memory_mb())}MB'")
    con.execute(f"SET temp_directory = {quote(folder)}")
    if threads is not None:
        con.execute(f"SET threads = {int(threads)}")
    return con


def connect(threads: int | None = 1, readable: tuple[str, ...] = (), memory: int | None = None) -> duckdb.DuckDBPyConnection:
    """A connection that never downloads anything (DuckDB would otherwise fetch extensions from the internet
    at run time: httpfs for a remote path, inet for a typo such as `>>=`) and reads no file but below the
    `readable` folders (a run directory), writing none: Arrow tables registered on it are what SQL from
    users sees (`sql_guard.lock`). `threads`: 1 inside a task, where Ray already runs tasks in parallel;
    None lets DuckDB use every core (curate query). `memory` (MB): `bound` the connection (the driver's)."""
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    if memory is not None:
        bound(con, memory, threads=None)
    if threads is not None:
        con.execute(f"SET threads = {int(threads)}")
    folders = []
    for folder in readable:  # a remote run is read through curate's own filesystem, registered before the lock
        filesystem, stripped = fs.filesystem(folder)
        folders.append(folder)
        if not fs.is_local(filesystem):
            _register(con, filesystem)
            folders.append(filesystem.unstrip_protocol(stripped))  # memory://r is memory:///r once listed
    return lock(con, tuple(dict.fromkeys(folders)))


class Scoped:
    """A thread's task connection for one block (`session`): the tables it registers and the views it makes go when
    the block ends, so nothing of one batch is seen by the next."""

    def __init__(self, con: duckdb.DuckDBPyConnection):
        self.con, self.tables, self.views = con, [], []

    def register(self, name: str, table) -> None:
        self.tables.append(name)
        self.con.register(name, table)

    def view(self, name: str, query: str) -> None:
        self.views.append(name)
        self.con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS {query}")

    def sql(self, query: str):
        return self.con.sql(query)

    def clear(self) -> None:
        for name in self.views:
            self.con.execute(f"DROP VIEW IF EXISTS {name}")
        for name in self.tables:
            self.con.unregister(name)


_THREAD = threading.local()


@contextlib.contextmanager
def session() -> Iterator[Scoped]:
    """A task's connection (`connect()`, one thread), kept for the thread's next block: opening and locking one costs
    ~18 ms, and the filter and classifier steps ask for one per batch (3,000 at 1M documents: ~55 s of CPU). A block
    that fails closes it (the next block opens a fresh one)."""
    con = getattr(_THREAD, "con", None)
    if con is None:
        con = _THREAD.con = connect()
    scoped = Scoped(con)
    try:
        yield scoped
    except BaseException:
        _THREAD.con = None
        con.close()
        raise
    scoped.clear()


def _register(con: duckdb.DuckDBPyConnection, filesystem) -> None:
    protocol = filesystem.protocol if isinstance(filesystem.protocol, str) else filesystem.protocol[0]
    if protocol not in con.list_filesystems():
        con.register_filesystem(filesystem)


def read_parquet(con: duckdb.DuckDBPyConnection, path: str, options: str = "") -> str:
    """`read_parquet(path[, options])` for SQL on `con`. A remote path (s3://, gs://, memory://, ...) is read
    through curate's own fsspec filesystem for it, registered with the connection on first use: the same
    credentials and settings as every other read of the run, and no DuckDB extension (httpfs) to download."""
    filesystem, _ = fs.filesystem(path)
    if not fs.is_local(filesystem):
        _register(con, filesystem)
    return f"read_parquet({quote(path)}{', ' + options if options else ''})"


def quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"

