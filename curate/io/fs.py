"""fsspec in one place: local paths and s3://, gs://, hf:// URIs are handled the same way.

Expanding a source's paths on a local disk (POSIX file names are bytes):
- a name that is not valid UTF-8 is read like any other; in ids and messages its undecodable bytes are
  written `\\xNN` (`caf\\xe9.jsonl`), so ids stay valid UTF-8 and two such names never collide;
- a symlink to a file is read through the link (the Hugging Face cache is made of them);
- a dangling symlink, a symlink loop or something that is not a regular file (a FIFO, a socket, a
  device) is an input that cannot be read: `InputFile.unreadable` says why, for the ledger
  (`bad_record:unreadable_file`);
- a symlink to a directory matched by a glob is skipped with one line on stderr: directories are not
  searched through symlinks (it guards against loops and double counting, as `find` does); a path
  given explicitly is searched even when it is a symlink to a directory.
"""

from __future__ import annotations

import errno
import hashlib
import glob as _glob
import os
import shutil
import stat
import sys
import uuid
from dataclasses import dataclass

import fsspec
from fsspec.implementations.local import LocalFileSystem

_GLOB_CHARS = "*?["
_LOCAL = LocalFileSystem()


@dataclass(frozen=True)
class InputFile:
    """One matched input file: its full path, the path relative to the glob's base (used in ids), its size."""

    path: str
    relative: str
    size: int
    unreadable: str | None = None  # why it cannot be read (a dangling symlink, ...): one unreadable_file row
    version: str = ""              # changes when the file does: modification time, or the store's ETag / version


def version_of(info: dict) -> str:
    """What tells a changed file from the same one, from fsspec's `info`: the object store's version id or
    ETag where there is one, else the modification time (a file edited in place at the same size differs)."""
    for key in ("VersionId", "version_id", "generation", "ETag", "etag", "md5Hash", "crc32c"):
        if info.get(key):
            return f"{key}:{info[key]}"
    for key in ("mtime", "LastModified", "last_modified", "updated", "created"):
        if info.get(key):
            return f"{key}:{info[key]}"
    return ""


# Object stores whose fsspec filesystems cache directory listings: other processes (a cluster's workers)
# write the run directory too, so a cached listing would hide their files from this one.
_SHARED_STORES = ("s3", "s3a", "gs", "gcs", "abfs", "abfss", "az", "adl")


def filesystem(uri: str, storage_options: dict | None = None):
    """Return (fs, path-without-protocol) for a local path or a URI. An absolute local path takes a short cut
    (what fsspec would return, without its parsing: dedup's phases open thousands of small work files)."""
    if uri.startswith("/") and "::" not in uri and not storage_options and os.sep == "/":
        return _LOCAL, uri.rstrip("/") or "/"
    options = dict(storage_options or {})
    protocol = uri.split("://", 1)[0] if "://" in uri else ""
    if protocol in _SHARED_STORES:
        options.setdefault("use_listings_cache", False)
    if protocol in ("s3", "s3a"):
        _pin_endpoint(options)
    return fsspec.core.url_to_fs(uri, **options)


def _pin_endpoint(options: dict) -> None:
    """Name the S3 endpoint from the environment in the options: fsspec caches a filesystem by its options,
    and one made while `AWS_ENDPOINT_URL` named another server would otherwise be handed back (a process that
    moves between two S3 servers would write to the first)."""
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if endpoint and "endpoint_url" not in options and "endpoint_url" not in options.get("client_kwargs", {}):
        options["endpoint_url"] = endpoint


def is_local(fs) -> bool:
    return isinstance(fs, LocalFileSystem)


def glob_base(pattern: str, storage_options: dict | None = None) -> str:
    """The folder a path or glob's matches are named relative to (without the protocol): the part before
    the first glob character, a directory itself, or a file's folder."""
    fs, stripped = filesystem(pattern, storage_options)
    if any(c in stripped for c in _GLOB_CHARS):
        base = stripped[: min(stripped.find(c) for c in _GLOB_CHARS if c in stripped)]
        return base[: base.rfind("/") + 1]
    if os.path.isdir(stripped) if is_local(fs) else fs.isdir(stripped):
        return stripped.rstrip("/") + "/"
    return stripped[: stripped.rfind("/") + 1]


def common_base(bases: list[str]) -> str:
    """The longest folder (ending in `/`, or empty) that every base lies in."""
    common = os.path.commonprefix(bases)
    return common[: common.rfind("/") + 1]


def expand(pattern: str, storage_options: dict | None = None, base: str | None = None) -> list[InputFile]:
    """Expand a path or glob (with `**`) to files, sorted so that planning is deterministic; `relative`
    names are relative to `base` (default: the pattern's own, `glob_base`)."""
    fs, stripped = filesystem(pattern, storage_options)
    local = is_local(fs)
    base = glob_base(pattern, storage_options) if base is None else base
    if any(c in stripped for c in _GLOB_CHARS):
        found = fs.glob(stripped, detail=True)
    else:
        found = {stripped: _info(fs, stripped)} if (os.path.lexists(stripped) if local else fs.exists(stripped)) else {}
        if found and (found[stripped].get("type") == "directory" or (local and os.path.isdir(stripped))):
            found = dict(fs.find(stripped.rstrip("/") + "/", detail=True))
    files = []
    for path, info in sorted(found.items()):
        kind = info.get("type")
        if kind == "directory":
            continue
        unreadable = None
        if local and kind != "file":
            unreadable = _not_a_file(path)
            if unreadable is _SKIP:
                continue
        full = path if local else fs.unstrip_protocol(path)
        relative = path[len(base):] if path.startswith(base) else os.path.basename(path)
        files.append(InputFile(full, printable(relative), int(info.get("size") or 0), unreadable, version_of(info)))
    return files


def _info(fs, path: str) -> dict:
    try:
        return fs.info(path)
    except OSError:  # a local symlink that leads nowhere: classified by _not_a_file
        return {"type": "other", "size": 0}


_SKIP = "skip"


def _not_a_file(path: str) -> str | None:
    """For a local path fsspec does not list as a file: None when it reads as one (a symlink to a file),
    `_SKIP` (after a line on stderr) for a symlink to a directory, else why it cannot be read."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symlink loop (the link resolves to itself)"
        if os.path.islink(path):
            return f"a dangling symlink (it points to {printable(os.readlink(path))}, which does not exist)"
        return f"cannot be opened: {exc.strerror}"
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        print(f"curate: note: skipping {printable(path)}: a symlink to a directory ({printable(os.path.realpath(path))}); "
              "directories are not searched through symlinks, name it in paths to read it", file=sys.stderr)
        return _SKIP
    what = {stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a character device",
            stat.S_IFBLK: "a block device"}.get(stat.S_IFMT(mode), "something")
    return f"{what}, not a regular file"


def printable(name: str) -> str:
    """`name` as valid UTF-8: bytes of a file name that are not UTF-8 (which Python keeps as surrogate
    escapes) are written `\\xNN`, so ids and ledger details built from it can be stored."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        pass
    try:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return name.encode("utf-8", "backslashreplace").decode("utf-8")


def open_input(path: str, storage_options: dict | None = None, block_size: int = 8 << 20):
    """Open a file for streaming reads with large blocks (remote stores punish small reads)."""
    fs, stripped = filesystem(path, storage_options)
    if is_local(fs):
        return open(stripped, "rb", buffering=block_size)
    return fs.open(stripped, "rb", block_size=block_size)


def join(root: str, *parts: str) -> str:
    return "/".join([root.rstrip("/"), *[p.strip("/") for p in parts]])


class AtomicWriter:
    """Write to a temporary name and rename on success, so a killed task never leaves a half file.

    Object stores (s3, gs) publish an object only when its upload completes, so there the final name is
    written directly.
    """

    def __init__(self, path: str):
        self.path = path
        self.fs, self.stripped = filesystem(path)
        self.local = is_local(self.fs)
        self.tmp = f"{self.stripped}.tmp-{uuid.uuid4().hex}" if self.local else self.stripped

    def __enter__(self):
        folder = self.stripped.rsplit("/", 1)[0]
        if self.local:  # a stat where the folder exists (most writes), not a failing mkdir per parent
            if not os.path.isdir(folder):
                os.makedirs(folder, exist_ok=True)
            self.handle = open(self.tmp, "wb")
        else:
            self.fs.makedirs(folder, exist_ok=True)
            self.handle = self.fs.open(self.tmp, "wb")
        return self.handle

    def __exit__(self, exc_type, exc, tb):
        self.handle.close()
        if exc_type is not None:
            if self.local and os.path.exists(self.tmp):
                os.remove(self.tmp)
            return False
        if self.local:
            install(self.tmp, self.stripped)
        return False


ASIDE_BYTES = 1 << 18
"""A new file of this many bytes or more replaces an existing one by moving the old one aside first (`install`)."""


def install(tmp: str, path: str) -> None:
    """Put the finished file `tmp` at `path`. Renamed over an existing file, ext4 (its default `auto_da_alloc`)
    allocates and starts writing the new file's blocks at once, inside the rename: replacing a file cost ~2x writing a
    new one on the VM measured (200 files of 2.5 MB: 0.40 s against 0.20 s), and an append replaces every output of a
    grown source (~1.4 GB at 1M documents). So a file of `ASIDE_BYTES` or more is installed the other way: the old one
    renamed to a temporary name (`<name>.tmp-<hex>`), the new one renamed in, the old one removed; its blocks are
    written back later with the rest. A kill between the two renames leaves no file at `path`, only temporaries
    (`remove_temporaries` clears them on resume), and the task that was writing it runs again, as after any kill. Small
    files (markers, records, the run lock's heartbeat) are replaced in one rename: never absent."""
    if os.stat(tmp).st_size < ASIDE_BYTES:
        os.replace(tmp, path)
        return
    aside = f"{path}.tmp-{uuid.uuid4().hex}"
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        aside = None
    os.replace(tmp, path)
    if aside is not None:
        os.remove(aside)


def write_bytes(path: str, data: bytes) -> None:
    with AtomicWriter(path) as f:
        f.write(data)


def copy_stream(src, dst) -> int:
    """Copy the rest of `src` to the end of `dst` (open files); returns the bytes copied. Between two local files the
    kernel copies (`copy_file_range`: nothing passes through Python), else in 16 MiB pieces."""
    total = 0
    if hasattr(os, "copy_file_range") and hasattr(src, "fileno") and hasattr(dst, "fileno"):
        try:
            fin, fout = src.fileno(), dst.fileno()
            dst.flush()
            while n := os.copy_file_range(fin, fout, 1 << 30):
                total += n
            return total
        except OSError:   # not a plain file (io.UnsupportedOperation), or a kernel or file system without it
            if total:
                raise
    while piece := src.read(16 << 20):
        dst.write(piece)
        total += len(piece)
    return total


def read_bytes(path: str) -> bytes:
    fs, stripped = filesystem(path)
    if is_local(fs):   # (fsspec's local file object costs ~40 us a read; a run reads ~40,000 small files at 1M documents)
        with open(stripped, "rb") as f:
            return f.read()
    with fs.open(stripped, "rb") as f:
        return f.read()


SETTLED_NS = 2_000_000_000
"""A file unchanged this long before it was read may later be trusted by its `stat` (size, times, inode): curate
replaces a file by renaming a new one into place, never edits one, but one written again within the clock's tick could keep
its times ("racy git"). The kept digests (`curate.rundir.digests`) and dedup's kept band rows (`curate.dedup.band_cache`)
both follow it."""


def settled(st: os.stat_result, at_ns: int, after_ns: int = SETTLED_NS) -> bool:
    """Whether the file of `st` had not changed for `after_ns` at `at_ns` (when it was read): `SETTLED_NS`'s rule."""
    return at_ns - max(st.st_mtime_ns, st.st_ctime_ns) > after_ns


PREFETCH_BYTES = 1 << 30   # what one `prefetch` asks for at most: the page cache of a small node keeps it until it is read


def prefetch(paths: list[str], budget: int = PREFETCH_BYTES) -> int:
    """Ask the kernel to read local files into memory now, in the background (`posix_fadvise(WILLNEED)`), before a
    phase reads them one after another: the first files of `paths` up to `budget` bytes; returns how many. A file read
    days after it was written (an append reads the band keys and signatures of an earlier run) waited ~4 ms for this
    VM's disk, one file after another: 1,167 signature files (553 MB) took 5.1 s read in turn, and 0.8 s asked for
    together first (the disk serves many reads at once). Nothing on object stores, or where the platform has no
    `posix_fadvise` (macOS)."""
    if not hasattr(os, "posix_fadvise"):
        return 0
    asked = 0
    for path in paths:
        store, stripped = filesystem(path)
        if not is_local(store):
            continue
        try:
            fd = os.open(stripped, os.O_RDONLY)
        except OSError:
            continue
        try:
            budget -= os.fstat(fd).st_size
            if budget < 0:
                break
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
            asked += 1
        finally:
            os.close(fd)
    return asked


def exists(path: str) -> bool:
    fs, stripped = filesystem(path)
    return os.path.exists(stripped) if is_local(fs) else fs.exists(stripped)


def glob(pattern: str) -> list[str]:
    fs, stripped = filesystem(pattern)
    if is_local(fs) and "**" not in stripped:   # (fsspec's glob costs ~0.2 ms a call; dedup lists thousands of folders)
        return sorted(_glob.glob(stripped))
    return sorted(p if is_local(fs) else fs.unstrip_protocol(p) for p in fs.glob(stripped))


def remove(path: str) -> None:
    """Remove a file or a folder with everything in it; nothing when there is none. Locally without fsspec, whose
    recursive `rm` lists the path first (~0.6 ms a file: an append removes thousands)."""
    fs, stripped = filesystem(path)
    if not is_local(fs):
        if fs.exists(stripped):
            fs.rm(stripped, recursive=True)
    elif os.path.isdir(stripped) and not os.path.islink(stripped):
        shutil.rmtree(stripped)
    elif os.path.lexists(stripped):
        os.remove(stripped)


def link(path: str, dest: str) -> None:
    """Make `dest` the same file as `path`: a hard link where the folder is local (no bytes copied; a copy where
    linking is refused, across filesystems), a copy on object stores. Replaces `dest` atomically."""
    store, stripped = filesystem(path)
    _, target = filesystem(dest)
    if not is_local(store):
        store.copy(stripped, target)
        return
    os.makedirs(os.path.dirname(target), exist_ok=True)
    tmp = f"{target}.tmp-{uuid.uuid4().hex}"
    try:
        os.link(stripped, tmp)
    except OSError:
        shutil.copyfile(stripped, tmp)
    os.replace(tmp, target)


def move(path: str, dest: str) -> None:
    """Move a file or folder to `dest` (a rename where the filesystem has one; copy and delete on object stores)."""
    fs, stripped = filesystem(path)
    _, target = filesystem(dest)
    if is_local(fs):
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.replace(stripped, target)
    else:
        fs.mv(stripped, target, recursive=True)


def remove_temporaries(root: str) -> int:
    """Delete the temporary files (`<name>.tmp-<hex>`) that killed tasks left under a local run directory;
    object stores have none (an upload appears only when complete). Returns how many were removed."""
    store, stripped = filesystem(root)
    if not is_local(store) or not os.path.isdir(stripped):
        return 0
    removed = 0
    for folder, _, names in os.walk(stripped):
        for name in names:
            stem, _, tail = name.rpartition(".tmp-")
            if stem and len(tail) == 32 and all(c in "0123456789abcdef" for c in tail):
                os.remove(os.path.join(folder, name))
                removed += 1
    return removed


def upload_tree(local: str, dest: str, last: str | None = None) -> None:
    """Copy a local folder to `dest` (a folder or a URI), the file named `last` (a completion marker) after
    every other, so a reader that sees it sees the whole tree."""
    store, stripped = filesystem(dest)
    names = sorted(os.path.relpath(os.path.join(d, n), local).replace(os.sep, "/")
                   for d, _, files in os.walk(local) for n in files)
    for name in sorted(names, key=lambda n: n == last):
        target = f"{stripped.rstrip('/')}/{name}"
        store.makedirs(target.rsplit("/", 1)[0], exist_ok=True)
        store.put_file(os.path.join(local, name), target)


def local_copy(path: str, storage_options: dict | None = None) -> str:
    """A local path for `path`: itself when it is local, else a copy of the remote file or folder in this
    node's cache (`$CURATE_CACHE`, default `~/.cache/curate/remote`), keyed by the URI and its version, made
    once per node: libraries such as fastText open only local files, and every worker of a node shares it."""
    store, stripped = filesystem(path, storage_options)
    if is_local(store):
        return path
    info = store.info(stripped)  # FileNotFoundError for a missing object
    key = hashlib.sha256(f"{path}\x00{version_of(info)}".encode()).hexdigest()[:24]
    cache = os.environ.get("CURATE_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "curate", "remote")
    target = os.path.join(cache, key, stripped.rstrip("/").rsplit("/", 1)[-1])
    if os.path.exists(target):
        return target
    os.makedirs(os.path.dirname(target), exist_ok=True)
    tmp = f"{target}.tmp-{uuid.uuid4().hex}"
    try:
        if info.get("type") == "directory":
            store.get(stripped.rstrip("/") + "/", tmp, recursive=True)
        else:
            store.get_file(stripped, tmp)
        try:
            os.replace(tmp, target)
        except OSError:  # a worker beside us won the race (a folder cannot replace a folder): same bytes
            if not os.path.exists(target):
                raise
    finally:
        if os.path.isdir(tmp):
            shutil.rmtree(tmp, ignore_errors=True)
        elif os.path.exists(tmp):
            os.remove(tmp)
    return target


def files_under(folder: str) -> set[str]:
    """Every file below `folder` (none when it is missing), spelled as `join` spells them: one listing
    instead of an `exists` request per file, which object stores answer one round trip at a time."""
    store, stripped = filesystem(folder)
    stripped = stripped.rstrip("/")
    try:
        found = store.find(stripped)
    except FileNotFoundError:
        return set()
    head = folder.rstrip("/")
    return {head + p[len(stripped):] for p in found if p.startswith(stripped + "/")}
