"""Write RUN/manifest.json: the one file a trainer (or a person) needs to know what a run produced, how,
and whether the bytes on disk are still the bytes the run wrote (size and sha256 of every output)."""

from __future__ import annotations

import importlib.metadata
import json
import platform
import re
from collections import Counter
from datetime import datetime, UTC

from curate._version import __version__
from curate.errors import CurateError
from curate.io import fs

from . import schema
from .digest import hash_files
from .store import write_atomic

# recorded when importable: what decides the bytes of the outputs
VERSIONED = ("pyarrow", "ray", "duckdb", "tokenizers", "tiktoken", "numpy", "datatrove", "datasketch", "fasttext",
             "fasttext-community", "zstandard", "orjson", "fsspec", "s3fs", "gcsfs", "pyyaml", "jsonschema")
COMPUTED = ("files", "created_at", "created_by", "versions")


def versions() -> dict[str, str]:
    """package -> version for curate, Python and every package in VERSIONED that is installed."""
    found = {"curate": __version__, "python": platform.python_version()}
    for name in VERSIONED:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    return found


def normalize(path: str) -> str:
    """A listed file as the manifest spells it: '/'-separated, relative to the run, no leading './'."""
    path = path.replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path


def write_manifest(run: str, body: dict, files: list[str], *, storage_options: dict | None = None,
                   workers: int | None = None, known: dict[str, tuple[int, str]] | None = None) -> dict:
    """Hash `files` (paths relative to `run`), complete `body` with files/created_at/created_by/versions
    (and format_version, unless the body sets it), validate it and write RUN/manifest.json atomically.
    Returns the manifest as written. `known`: (bytes, sha256) of some of the files, which the caller vouches for
    (a run's kept digests of files unchanged since an earlier run): those are not read here.

    Raises CurateError if `body` sets a computed key, a file is missing or unreadable, or the result breaks
    the schema (the message names the JSON path of every problem)."""
    clash = sorted(set(body) & set(COMPUTED))
    if clash:
        raise CurateError(f"write_manifest computes {', '.join(clash)} itself; leave them out of the body")
    paths = [normalize(p) for p in files]
    unsafe = [p for p in paths if not re.match(schema.REL_PATH, p) or p == schema.MANIFEST_NAME]
    if unsafe:  # checked before hashing: '../x' must never be read
        raise CurateError(f"write_manifest: not a file path inside the run: {', '.join(map(repr, unsafe))}")
    duplicates = sorted(p for p, n in Counter(paths).items() if n > 1)
    if duplicates:
        raise CurateError(f"write_manifest: files listed twice: {', '.join(duplicates)}")
    paths.sort()
    manifest = dict(body)
    manifest.setdefault("format_version", schema.FORMAT_VERSION)  # the writer knows which format it writes
    manifest["created_at"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    manifest["created_by"] = f"curate {__version__}"
    manifest["versions"] = versions()
    # fail on a wrong body before hashing what may be terabytes; placeholders stand in for the digests
    manifest["files"] = [{"path": p, "bytes": 0, "sha256": "0" * 64} for p in paths]
    schema.check(manifest, f"the manifest for {run}")
    known = {normalize(p): v for p, v in (known or {}).items()}
    hashed = {**hash_files(run, [p for p in paths if p not in known], storage_options, workers, what="manifest"),
              **{p: known[p] for p in paths if p in known}}
    unreadable = [f"{p}: {'missing' if isinstance(r, FileNotFoundError) else r}"
                  for p, r in hashed.items() if isinstance(r, Exception)]
    if unreadable:
        raise CurateError(f"cannot hash the files of {run}:\n  " + "\n  ".join(unreadable))
    manifest["files"] = [{"path": p, "bytes": hashed[p][0], "sha256": hashed[p][1]} for p in paths]
    try:
        data = schema.dumps(manifest)
    except (TypeError, ValueError) as exc:  # a value JSON cannot hold (NaN, a numpy scalar, ...)
        raise CurateError(f"the manifest for {run} cannot be written as JSON: {exc}") from None
    written = json.loads(data)
    schema.check(written, f"the manifest for {run}")  # what lands on disk, not just what was passed in
    filesystem, root = fs.filesystem(run, storage_options)
    write_atomic(filesystem, fs.join(root, schema.MANIFEST_NAME), data)
    return written
