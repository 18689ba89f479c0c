"""DuckDB as curate uses it: one connection setting, reading Parquet wherever a run lives, quoting."""

from __future__ import annotations

import duckdb

from curate.io import fs
from curate.common.sql_guard import lock


def connect(threads: int | None = 1, readable: tuple[str, ...] = ()) -> duckdb.DuckDBPyConnection:
    """A connection that never downloads anything (DuckDB would otherwise fetch extensions from the internet
    at run time: httpfs for a remote path, inet for a typo such as `>>=`) and reads no file but below the
    `readable` folders (a run directory), writing none: Arrow tables registered on it are what SQL from
    users sees (`sql_guard.lock`). `threads`: 1 inside a task, where Ray already runs tasks in parallel;
    None lets DuckDB use every core (curate query)."""
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
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

