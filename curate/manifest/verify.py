"""Check a run against its manifest: every listed file still exists with the listed size and sha256, no other
file sits in the folders the manifest covers, and the manifest itself is valid. Run it before training on or
publishing a run that sat on shared storage.

The folders covered are those the listed files lie in, at any depth below their first segment (kept/,
ledger/, edits/, the pack step's folder): whoever reads them globs them, so a file added there joins the data
unseen. Not covered: a pack step's per-shard work (`<pack step>/_shards/`), which the run resumes from and never
publishes.
"""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor

from curate.io import fs

from . import schema
from .digest import default_workers, sha256_file
from .progress import Ticker

_SAFE = re.compile(schema.REL_PATH)
UNCOVERED = "_shards"   # RUN/<pack step>/_shards/: the per-shard token files merged into the published ones (rundir/layout.py)


def read_manifest(run: str, storage_options: dict | None = None) -> tuple[bytes | None, object, list[str]]:
    """(raw bytes, parsed manifest, problems) of RUN/manifest.json; bytes and manifest are None when it is
    missing or not JSON, and the problems say which."""
    filesystem, root = fs.filesystem(run, storage_options)
    try:
        with filesystem.open(fs.join(root, schema.MANIFEST_NAME), "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None, None, [f"missing: {schema.MANIFEST_NAME}"]
    try:
        return raw, json.loads(raw), []
    except ValueError as exc:
        return None, None, [f"{schema.MANIFEST_NAME}: not valid JSON ({exc})"]


def _listed(manifest) -> list[dict]:
    """The well-formed entries of `files` (a malformed one is already a schema problem); unsafe paths such
    as '../x' are never opened."""
    files = manifest.get("files") if isinstance(manifest, dict) else None
    return [e for e in files or [] if isinstance(e, dict)
            and isinstance(e.get("path"), str) and _SAFE.match(e["path"])
            and type(e.get("bytes")) is int and isinstance(e.get("sha256"), str)]


def check_files(run: str, manifest, storage_options: dict | None = None, workers: int | None = None) -> list[str]:
    """One line per listed file that is missing or differs: 'missing: P', 'changed: P (size FOUND != LISTED)'
    or 'changed: P (sha256 FOUND... != LISTED...)'. The size is compared first, so a truncated file is
    reported without reading it."""
    entries = _listed(manifest)
    filesystem, root = fs.filesystem(run, storage_options)
    filesystem.invalidate_cache()  # a cached listing (s3fs keeps them) could hide a change made since
    ticker = Ticker("verify", len(entries), sum(e["bytes"] for e in entries))

    def one(entry: dict) -> str | None:
        rel, full = entry["path"], fs.join(root, entry["path"])
        try:
            info = filesystem.info(full)
            if info.get("type") == "directory":
                return f"missing: {rel} (a directory is there)"
            if int(info.get("size") or 0) != entry["bytes"]:
                return f"changed: {rel} (size {int(info.get('size') or 0)} != {entry['bytes']})"
            size, digest = sha256_file(filesystem, full, ticker)
        except FileNotFoundError:
            return f"missing: {rel}"
        except (OSError, ValueError) as exc:
            return f"unreadable: {rel} ({exc})"
        finally:
            ticker.add(file_done=True)
        if size != entry["bytes"]:  # it changed between stat and read
            return f"changed: {rel} (size {size} != {entry['bytes']})"
        if digest != entry["sha256"]:
            return f"changed: {rel} (sha256 {digest[:12]}... != {entry['sha256'][:12]}...)"
        return None

    with ThreadPoolExecutor(max_workers=max(1, min(workers or default_workers(), len(entries) or 1))) as pool:
        found = [p for p in pool.map(one, entries) if p]
    ticker.finish()
    return found


def unlisted_files(run: str, manifest, storage_options: dict | None = None) -> list[str]:
    """'unlisted: P' for every file below a covered folder (see the module's docstring) that the manifest
    does not list."""
    listed = {e["path"] for e in _listed(manifest)}
    filesystem, root = fs.filesystem(run, storage_options)
    root = root.rstrip("/")
    found = []
    for top in sorted({p.split("/", 1)[0] for p in listed if "/" in p}):
        try:
            present = filesystem.find(fs.join(root, top))
        except FileNotFoundError:
            continue
        for full in present:
            rel = full[len(root) + 1:] if full.startswith(root + "/") else full
            if rel not in listed and rel.split("/")[1:2] != [UNCOVERED]:
                found.append(f"unlisted: {rel}")
    return sorted(found)


def verify(run: str, *, storage_options: dict | None = None, workers: int | None = None) -> list[str]:
    """Every problem with RUN and its manifest, one line each (schema problems as 'schema: $.path: ...', files
    the manifest covers but does not list as 'unlisted: P'); an empty list means the run is exactly what its
    manifest says."""
    _, manifest, found = read_manifest(run, storage_options)
    if found:
        return found
    found = [f"schema: {p}" for p in schema.problems(manifest)]
    return found + check_files(run, manifest, storage_options, workers) + unlisted_files(run, manifest, storage_options)
