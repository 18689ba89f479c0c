"""What a step reads of one docs shard, by content: the key that lets an append compute only new work.

A per-shard step (`Stage.PER_SHARD`) gives a docs shard the same results whenever it reads the same bytes for it:
the shard's documents, the ledgers and edits of the steps before it that remove or edit, the side tables of the
steps it needs (its `upstream`) and the records they publish. `ShardInputs.digest` hashes exactly those files,
so a global step such as dedup, recomputed after an append, still lets every later step reuse the shards whose
ledger it left as it was. Of an earlier step's ledger only the removed ids count (`removed_digest`): a later step
reads nothing else of it (`shard.removed_ids`), and its detail names facts about other shards (dedup's cluster
number and kept twin move when a new document joins the cluster). Digests are cached by path, size and
modification time: a file read by several steps of one run is hashed once.
"""

from __future__ import annotations

import hashlib
import os

import pyarrow.compute as pc

from curate.config.chain import TABLES
from curate.config.pipeline import canonical_json
from curate.io import fs
from curate.io.parquet import read_table
from curate.stages.base import Stage

_cache: dict[tuple, str] = {}


def _cached(path: str, kind: str, compute) -> str | None:
    """`compute(path)` once per (path, size, modification time, kind); None when the file does not exist."""
    local = "://" not in path
    if local:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        key = (kind, path, st.st_size, st.st_mtime_ns, st.st_ino)
        if key in _cache:
            return _cache[key]
    elif not fs.exists(path):
        return None
    value = compute(path)
    if local:
        _cache[key] = value
    return value


def _bytes_digest(path: str) -> str:
    digest = hashlib.sha256()
    with fs.open_input(path) as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _ids_digest(path: str) -> str:
    with fs.open_input(path) as handle:
        ids = pc.unique(read_table(handle, columns=["id"]).column("id").combine_chunks()).sort()
    digest = hashlib.sha256()
    for chunk in ids.cast("large_string").buffers()[1:]:   # offsets, then the bytes: one string set, one digest
        digest.update(b"" if chunk is None else memoryview(chunk))
    return "ids:" + digest.hexdigest()


def file_digest(path: str) -> str | None:
    """sha256 of a file's bytes, or None when it does not exist."""
    return _cached(path, "bytes", _bytes_digest)


def removed_digest(path: str) -> str | None:
    """Of a ledger: sha256 of the set of ids it removed (what a later step reads of it), or None when there is none."""
    return _cached(path, "ids", _ids_digest)


class ShardInputs:
    """`digest(stage, source, shard)`: the content of everything `stage` reads of that docs shard, given the run's
    steps by name."""

    def __init__(self, run, steps: dict[str, Stage]):
        self.run, self.steps = run, steps

    def files(self, stage: Stage, source: str, shard: str) -> dict[str, str | None]:
        """Of a step before it that removes or edits: which documents it left (its ledger's ids) and their text (its
        edits); of a step it needs: every file that step wrote for the shard; and what the stage itself names. By
        path (relative to the run), each file's digest."""
        needed = set(stage.upstream.values())
        out = {}
        for step in sorted(set(stage.previous) | needed):
            if step in needed:
                out.update({path: file_digest(path) for path in self.steps[step].shard_outputs(source, shard)})
            else:
                ledger, edits = self.run.ledger(step, source, shard), self.run.edits(step, source, shard)
                out.update({ledger: removed_digest(ledger), edits: file_digest(edits)})
        out.update({path: file_digest(path) for path in stage.shard_reads(source, shard)})
        return {self.run.relative(path): digest for path, digest in out.items()}

    def records(self, stage: Stage) -> dict[str, str | None]:
        """The records of the steps it needs beyond documents and tables (a mix plan for tokenize), by content:
        they are read for every shard alike."""
        named = {step for need, step in stage.upstream.items() if need != "docs" and not need.startswith(f"{TABLES}.")}
        return {step: file_digest(self.run.path("_state", step, "record.json")) for step in sorted(named)}

    def digest(self, stage: Stage, source: str, shard: str) -> str:
        files = self.files(stage, source, shard)
        # the batch size too: it decides how a step's files for the shard are cut into row groups (their bytes), and a
        # keyed phase (model scores, blocklist scans) keeps its results by this digest alone
        body = {"files": files, "records": self.records(stage), "execution.batch_rows": stage.pipeline.execution["batch_rows"]}
        return hashlib.sha256(canonical_json(body).encode()).hexdigest()


def clear_cache() -> None:
    _cache.clear()
