"""What a stage reads besides its options and upstream records, in the form its fingerprint takes.

A model, a term list, a tokenizer or a recipe replaced at the same path must change the fingerprint of
every result computed from it, so local files are identified by the sha256 of their bytes (they are
small next to the data; a file over `HASH_LIMIT` is identified by size and modification time in
nanoseconds instead). Files in object storage are identified by size and ETag or version. Hashes are
cached for one run (`clear_cache` at its start), keyed by path, size and modification time.
"""

from __future__ import annotations

import hashlib
import os

from curate.io import fs

HASH_LIMIT = 256 << 20
_cache: dict[tuple, str] = {}


def clear_cache() -> None:
    _cache.clear()


def file_identity(path: str | None):
    """The identity of a file or folder (every file below it), or None when it does not exist
    (a Hub name: the model's spec names it, and its revision is in the local cache)."""
    if not path:
        return None
    if "://" in path:
        try:
            return [(f.relative, f.size, f.version) for f in fs.expand(path)]
        except (OSError, ValueError, ImportError):
            return None  # unreachable or absent: the stage's own check says so in one line
    if os.path.isdir(path):
        return {os.path.relpath(os.path.join(d, f), path): _file(os.path.join(d, f))
                for d, _, names in sorted(os.walk(path)) for f in sorted(names)}
    return _file(path) if os.path.exists(path) else None


def _file(path: str) -> str:
    st = os.stat(path)
    key = (os.path.realpath(path), st.st_size, st.st_mtime_ns, st.st_ino)
    if key not in _cache:
        if st.st_size > HASH_LIMIT:
            _cache[key] = f"size {st.st_size} mtime {st.st_mtime_ns}"
        else:
            digest = hashlib.sha256()
            with open(path, "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
            _cache[key] = digest.hexdigest()
    return _cache[key]


def options_for(options: dict, source: str, per_source: tuple[str, ...]) -> dict:
    """The part of a stage's options that concerns `source`: an option keyed by source name (and `all`)
    that the stage names in `per_source`, such as a filter's `where` or a classifier's `keep`, keeps only
    the entries for `all` and `source`; every other option is kept whole, so a new option is covered
    without naming it."""
    return {key: {k: value[k] for k in ("all", source) if k in value} if key in per_source and isinstance(value, dict) else value
            for key, value in options.items()}


def tokenizer_identity(spec: str):
    """A tokenizer by name (gpt2, a Hub name) or, for a tokenizer.json path, by its content too."""
    return [spec, file_identity(spec) if os.path.exists(spec) or "://" in spec else None]
