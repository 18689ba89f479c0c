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

from curate.errors import ConfigError
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


def source_files(pipeline_file, source) -> list[fs.InputFile]:
    """Every file of a source's globs, named relative to the common base of all of them: two globs with
    files of the same name (`dumpA/part-0000.jsonl`, `dumpB/part-0000.jsonl`) give distinct positional ids,
    and a single glob's names (and ids) are its own base's."""
    seen, files, named = set(), [], {}
    try:
        base = fs.common_base([fs.glob_base(p, source.storage_options) for p in source.paths])
    except (OSError, ValueError, ImportError) as exc:
        raise ConfigError(pipeline_file, f"sources.{source.name}.paths", f"cannot list {source.paths!r}: {exc}") from None
    for i, pattern in enumerate(source.paths):
        try:
            matched = fs.expand(pattern, source.storage_options, base)
        except (OSError, ValueError, ImportError) as exc:
            raise ConfigError(pipeline_file, f"sources.{source.name}.paths[{i}]", f"cannot list {pattern!r}: {exc}") from None
        if not matched:
            raise ConfigError(pipeline_file, f"sources.{source.name}.paths[{i}]", f"no files match {pattern!r}")
        for f in matched:
            if f.path in seen:
                continue
            if f.relative in named:
                raise ConfigError(pipeline_file, f"sources.{source.name}.paths[{i}]",
                                  f"{f.path} and {named[f.relative]} would both be named {f.relative!r} (records without "
                                  "ids would get the same positional ids); put them in two sources, or give paths "
                                  "that share a folder")
            seen.add(f.path)
            named[f.relative] = f.path
            files.append(f)
    return files


def stable_name(relative: str) -> str:
    """A docs shard's name from its input file's name (relative to its source's base), not from the file's place in
    the sorted glob: a file added to a source, wherever its name sorts, renames no other file's shard, so the results
    of the others (their docs, every later step's per-shard files) stay where they are and can be reused."""
    return hashlib.sha256(relative.encode()).hexdigest()[:12]
