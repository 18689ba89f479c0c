"""Which run directory, if any, holds a path: commands that write a file the user names (`curate query --out`,
`curate manifest publish`) must never write into a run, the one they read or any other, where a file of
theirs would replace or join the run's own outputs.

A folder is a run when it has `_state/` (a run's state) or a `pipeline.yaml` that starts with the header a run
writes (a run, or a published copy of one). Local paths are resolved first (symlinks, `..`), so no spelling
of a path inside a run gets past the check.
"""

from __future__ import annotations

import os

from curate.io import fs
from curate.rundir.layout import PIPELINE_HEADER


def _is_run(filesystem, folder: str) -> bool:
    try:
        if filesystem.isdir(fs.join(folder, "_state")):
            return True
        with filesystem.open(fs.join(folder, "pipeline.yaml"), "rb") as handle:
            return handle.read(len(PIPELINE_HEADER)) == PIPELINE_HEADER.encode()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
        return False


def resolved(path: str) -> str:
    """`path` as the check compares it: a local path absolute with symlinks and `..` resolved, a URI as given
    without a trailing '/'."""
    return path.rstrip("/") if "://" in path else os.path.realpath(path)


def enclosing_run(path: str, storage_options: dict | None = None) -> str | None:
    """The run directory that is `path` or holds it at any depth (resolved as `resolved` says), or None."""
    where = resolved(path)
    filesystem, stripped = fs.filesystem(where, storage_options)
    folder = stripped.rstrip("/") or "/"
    while True:
        if _is_run(filesystem, folder):
            return folder if fs.is_local(filesystem) else filesystem.unstrip_protocol(folder)
        parent = folder.rsplit("/", 1)[0] or "/"
        if parent == folder or not parent:
            return None
        folder = parent
