"""Copy a verified run to its final home (a local directory or any fsspec URI such as s3://bucket/prefix).

Order matters to readers polling DEST: an older DEST/manifest.json is removed first, every file is
streamed over and its size re-checked at DEST, and the manifest is written last, so whoever sees a
manifest at DEST can trust every file it lists to be there, complete.
"""

from __future__ import annotations

import logging
import os
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait

from curate.errors import CurateError, UsageError
from curate.io import fs

from . import schema, store
from .digest import default_workers
from .progress import Ticker
from .verify import check_files, read_manifest

log = logging.getLogger("curate")
EXTRAS = ("pipeline.yaml",)  # copied alongside the listed files when present, even if unlisted
MARKER = ".curate-publishing"  # at DEST while a publish is under way: the manifest of the run being copied


def _within(src_fs, src: str, dst_fs, dst: str) -> bool:
    """Whether `dst` is the run's folder `src` or lies inside it (symlinks and '..' resolved where local)."""
    if fs.is_local(src_fs) and fs.is_local(dst_fs):
        src, dst = os.path.realpath(src), os.path.realpath(dst)
    elif type(src_fs) is not type(dst_fs):
        return False
    src, dst = src.rstrip("/"), dst.rstrip("/")
    return dst == src or dst.startswith(src + "/")


def _check_destination(dst_fs, dst_root: str, dest: str, raw: bytes) -> None:
    """DEST must be empty, new, or hold this very run (its manifest, or the marker of an unfinished publish
    of it): publishing over another run would merge the two, and `verify` checks only listed files."""
    try:
        present = dst_fs.find(dst_root) if dst_fs.exists(dst_root) else []
    except OSError as exc:
        raise CurateError(f"publishing to {dest}: cannot list it ({exc})") from None
    if not present:
        return
    for name in (schema.MANIFEST_NAME, MARKER):
        try:
            if dst_fs.cat_file(fs.join(dst_root, name)) == raw:
                return
        except (FileNotFoundError, IsADirectoryError):
            pass
    example = present[0][len(dst_root.rstrip("/")) + 1:] if present[0].startswith(dst_root.rstrip("/")) else present[0]
    raise CurateError(f"refusing to publish into {dest}: it holds {len(present)} file{'s' if len(present) != 1 else ''} "
                      f"(e.g. {example}) of something other than this run; publish into an empty or new folder, or remove it first")


def _problems(lines: list[str], limit: int = 20) -> str:
    more = f"\n  ... and {len(lines) - limit} more" if len(lines) > limit else ""
    return "\n  ".join(lines[:limit]) + more


def _originals(src_fs, src_root: str, listed: dict) -> list[str]:
    """The listed span files (edits/) that hold the original text each edit replaced (`keep_original: true`): the
    very PII a pii step took out. One Parquet footer each."""
    import pyarrow.parquet as pq

    found = []
    for rel in sorted(p for p in listed if p.startswith("edits/") and p.endswith(".parquet")):
        with src_fs.open(fs.join(src_root, rel), "rb") as handle:
            if "original" in pq.read_schema(handle).names:
                found.append(rel)
    return found


def publish(run: str, dest: str, storage_options: dict | None = None, *, run_storage_options: dict | None = None,
            workers: int | None = None, allow_originals: bool = False) -> dict:
    """Verify RUN, copy its listed files (and pipeline.yaml) to DEST, check their sizes there, then write
    DEST/manifest.json. `storage_options` are for DEST, `run_storage_options` for RUN. Span files that keep the
    replaced originals are refused unless `allow_originals` (publishing them would publish what pii removed).

    Returns {"dest", "files", "bytes", "seconds"}. Raises CurateError, leaving no manifest at DEST, if RUN
    fails verification, a file changes while being copied, or a copy or the size check at DEST fails."""
    started = time.monotonic()
    raw, manifest, problems = read_manifest(run, run_storage_options)
    if not problems:
        problems = [f"schema: {p}" for p in schema.problems(manifest)]
        problems += check_files(run, manifest, run_storage_options, workers)
    if problems:
        raise CurateError(f"refusing to publish {run}: it does not match its manifest:\n  {_problems(problems)}")

    src_fs, src_root = fs.filesystem(run, run_storage_options)
    dst_fs, dst_root = fs.filesystem(dest, storage_options)
    if _within(src_fs, src_root, dst_fs, dst_root):
        raise UsageError(f"cannot publish {run} onto itself or into its own folder ({dest}); publish to a folder outside the run")
    listed = {e["path"]: (e["bytes"], e["sha256"]) for e in manifest["files"]}
    if not allow_originals and (kept := _originals(src_fs, src_root, listed)):
        raise UsageError(f"refusing to publish {run}: {kept[0]}{f' and {len(kept) - 1} more span files' if len(kept) > 1 else ''} "
                         "keep the original text each edit replaced (keep_original: true), the PII the step took out; "
                         "run the step without keep_original, or pass --allow-originals to publish them anyway")
    items = dict(listed)
    for extra in EXTRAS:
        if extra not in items and src_fs.exists(fs.join(src_root, extra)):
            items[extra] = (int(src_fs.info(fs.join(src_root, extra))["size"]), None)
    total = sum(size for size, _ in items.values())
    log.info("publish %s -> %s: %d files, %.1f MiB", run, dest, len(items), total / 2**20)

    _check_destination(dst_fs, dst_root, dest, raw)
    marker = fs.join(dst_root, MARKER)
    if fs.is_local(dst_fs):
        dst_fs.makedirs(dst_root, exist_ok=True)
    dst_fs.pipe_file(marker, raw)  # says whose files these are until the manifest does: a retry may go on
    dst_manifest = fs.join(dst_root, schema.MANIFEST_NAME)
    if dst_fs.exists(dst_manifest):  # it describes files about to be overwritten: take it down first
        log.info("publish: removing the previous %s at %s", schema.MANIFEST_NAME, dest)
        dst_fs.rm(dst_manifest)

    sent = _copy_all(run, dest, items, src_fs, src_root, dst_fs, dst_root, Ticker("publish", len(items), total),
                     workers)

    try:
        dst_fs.invalidate_cache()
        wrong = []
        for rel, size in sorted(sent.items()):
            found = int(dst_fs.info(fs.join(dst_root, rel))["size"])
            if found != size:
                wrong.append(f"{rel} (size {found} != {size})")
    except OSError as exc:
        raise CurateError(f"publishing {run} to {dest}: cannot check the copies there ({exc}); "
                          f"{schema.MANIFEST_NAME} was not written") from exc
    if wrong:
        raise CurateError(f"publishing {run} to {dest}: copies differ in size at the destination; "
                          f"{schema.MANIFEST_NAME} was not written:\n  {_problems(wrong)}")

    store.write_atomic(dst_fs, dst_manifest, raw)
    dst_fs.rm(marker)
    seconds = round(time.monotonic() - started, 3)
    report = {"dest": dest, "files": len(sent), "bytes": sum(sent.values()), "seconds": seconds}
    log.info("published %s -> %s: %d files, %.1f MiB in %.1fs", run, dest, report["files"],
             report["bytes"] / 2**20, seconds)
    return report


def _copy_all(run, dest, items, src_fs, src_root, dst_fs, dst_root, ticker, workers) -> dict[str, int]:
    """Copy every item, a few at a time; the first failure cancels the copies not yet started."""

    def one(rel: str) -> int:
        size, digest = store.copy_file(src_fs, fs.join(src_root, rel), dst_fs, fs.join(dst_root, rel), ticker)
        ticker.add(file_done=True)
        want_size, want_digest = items[rel]
        if want_digest is not None and (size, digest) != (want_size, want_digest):
            raise CurateError(f"{rel} changed while it was being published "
                              f"(size {size}, sha256 {digest[:12]}... != {want_size}, {want_digest[:12]}...)")
        return size

    pool = ThreadPoolExecutor(max_workers=max(1, min(workers or default_workers(), len(items))))
    try:
        futures = {pool.submit(one, rel): rel for rel in sorted(items)}
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        for future in done:
            if future.exception() is not None:
                pool.shutdown(wait=True, cancel_futures=True)
                exc, rel = future.exception(), futures[future]
                raise CurateError(f"publishing {run} to {dest} failed on {rel}: {exc}; "
                                  f"{schema.MANIFEST_NAME} was not written") from exc
        sent = {futures[f]: f.result() for f in futures}
    finally:
        pool.shutdown(wait=True)
    ticker.finish()
    return sent
