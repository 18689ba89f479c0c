"""A run folder keeps the digests of its settled files for the next run, and a file that changed is hashed again."""

from __future__ import annotations

import hashlib
import json
import os
import time

import pytest

from curate.rundir import digests


SETTLED_S = 0.05


@pytest.fixture(autouse=True)
def _empty_cache(monkeypatch):
    monkeypatch.setattr(digests, "SETTLED_NS", int(SETTLED_S * 1e9))   # (a file's change time cannot be set back)
    digests.clear_cache()
    yield
    digests.clear_cache()


def _write(path, data: bytes, settled: bool) -> None:
    path.write_bytes(data)
    if settled:
        time.sleep(2 * SETTLED_S)


def _next_run(monkeypatch, kept: str) -> list[str]:
    """A new process's cache, from what the last run kept; the paths it hashes are listed."""
    digests.clear_cache()
    digests.load(kept)
    hashed: list[str] = []
    real = digests._bytes_digest
    monkeypatch.setattr(digests, "_bytes_digest", lambda path: hashed.append(path) or real(path))
    return hashed


def test_a_settled_files_digest_is_kept_and_trusted_by_the_next_run(tmp_path, monkeypatch):
    old, new = tmp_path / "old.parquet", tmp_path / "new.parquet"
    _write(old, b"written a while ago", True)
    _write(new, b"written just now", False)
    want = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (old, new)}
    assert digests.file_digest(str(old)) == want[old] and digests.file_digest(str(new)) == want[new]
    kept = str(tmp_path / "digests.json")
    digests.save(kept)

    hashed = _next_run(monkeypatch, kept)
    assert digests.file_digest(str(old)) == want[old]
    assert digests.file_digest(str(new)) == want[new]
    assert hashed == [str(new)]   # the file written within SETTLED_NS of its hashing is hashed again: it may change in the tick


def _replaced(path, before) -> None:
    """As curate writes: a new file renamed over the old one (a new inode), given the old one's times."""
    replacement = path.with_name(path.name + ".tmp")
    replacement.write_bytes(b"bbbb")
    os.utime(replacement, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(replacement, path)


def _edited_in_place(path, before) -> None:
    """The same inode and size, its modification time given back: only its change time (which no one sets) differs."""
    time.sleep(0.05)
    path.write_bytes(b"bbbb")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


@pytest.mark.parametrize("change", [_replaced, _edited_in_place])
def test_a_file_changed_with_the_same_size_and_modification_time_is_hashed_again(tmp_path, monkeypatch, change):
    path = tmp_path / "ledger.parquet"
    _write(path, b"aaaa", True)
    before = os.stat(path)
    digests.file_digest(str(path))
    kept = str(tmp_path / "digests.json")
    digests.save(kept)

    change(path, before)
    hashed = _next_run(monkeypatch, kept)
    assert digests.file_digest(str(path)) == hashlib.sha256(b"bbbb").hexdigest()
    assert hashed == [str(path)]


def test_a_digest_read_elsewhere_is_remembered_while_the_file_is_as_it_was_and_kept_when_settled(tmp_path, monkeypatch):
    """`remember`: the manifest hashes files no step keys (the merged token files) and hands their digests here, with
    the `stat` taken before it read them: known while the file is unchanged, kept for the next run when settled."""
    settled, fresh, changed = tmp_path / "settled.bin", tmp_path / "fresh.bin", tmp_path / "changed.bin"
    for path, data in ((settled, b"settled"), (changed, b"changed")):
        _write(path, data, True)
    taken = {p: (os.stat(p), time.time_ns()) for p in (settled, changed)}
    _write(fresh, b"fresh", False)
    taken[fresh] = (os.stat(fresh), time.time_ns())
    _replaced(changed, taken[changed][0])   # (after its stat was taken: what was read may not be what is there now)
    for path in (settled, fresh, changed):
        digests.remember(str(path), *taken[path], hashlib.sha256(path.read_bytes()).hexdigest())
    assert digests.known(str(settled)) == hashlib.sha256(b"settled").hexdigest()
    assert digests.known(str(fresh)) == hashlib.sha256(b"fresh").hexdigest()
    assert digests.known(str(changed)) is None and digests.known(str(tmp_path / "absent")) is None
    kept = str(tmp_path / "digests.json")
    digests.save(kept)
    hashed = _next_run(monkeypatch, kept)
    assert digests.known(str(settled)) == hashlib.sha256(b"settled").hexdigest()
    assert digests.known(str(fresh)) is None   # written within SETTLED_NS of its stat: not kept across runs
    assert digests.file_digest(str(settled)) == hashlib.sha256(b"settled").hexdigest() and hashed == []   # not read again
    assert digests.file_digest(str(fresh)) == hashlib.sha256(b"fresh").hexdigest() and hashed == [str(fresh)]


def test_kept_digests_of_another_version_or_unreadable_are_ignored(tmp_path, monkeypatch):
    path = tmp_path / "f"
    _write(path, b"x", True)
    for body in (b"not json", b'{"version": 0, "digests": [["bytes", "%s", 1, 0, 0, 0, "wrong"]]}' % str(path).encode()):
        (tmp_path / "digests.json").write_bytes(body)
        hashed = _next_run(monkeypatch, str(tmp_path / "digests.json"))
        assert digests.file_digest(str(path)) == hashlib.sha256(b"x").hexdigest() and hashed == [str(path)]


def test_a_run_that_hashed_nothing_new_leaves_the_kept_digests_as_they_were(tmp_path, monkeypatch):
    path, kept = tmp_path / "f", tmp_path / "digests.json"
    _write(path, b"x", True)
    digests.file_digest(str(path))
    digests.save(str(kept))
    before = os.stat(kept).st_mtime_ns
    hashed = _next_run(monkeypatch, str(kept))
    digests.file_digest(str(path))
    digests.save(str(kept))
    assert hashed == [] and os.stat(kept).st_mtime_ns == before


def test_an_object_store_run_folder_keeps_no_digests(tmp_path, monkeypatch):
    path = tmp_path / "f"
    _write(path, b"x", True)
    digests.file_digest(str(path))
    written = []
    monkeypatch.setattr(digests.fs, "write_bytes", lambda *a: written.append(a))
    digests.save("s3://bucket/run/_state/digests.json")
    digests.load("s3://bucket/run/_state/digests.json")   # (no store is asked: this would fail without one)
    assert written == []


def test_a_worker_takes_in_the_kept_digests_once_as_it_prepares_a_phase(tmp_path, monkeypatch):
    """A Ray worker's process starts with an empty cache: preparing a phase loads what the last run kept, once, so an
    append's tasks that restore a shard's result do not hash its docs and ledgers again."""
    from curate.rundir import RunDir
    from curate.runner.task import Work

    run = RunDir(str(tmp_path / "run"))
    docs = tmp_path / "docs.parquet"
    _write(docs, b"a docs shard", True)
    digests.file_digest(str(docs))
    os.makedirs(os.path.dirname(run.digests_file))
    digests.save(run.digests_file)
    hashed = _next_run(monkeypatch, str(tmp_path / "none.json"))
    loads = []
    real = digests.fs.read_bytes
    monkeypatch.setattr(digests.fs, "read_bytes", lambda path: loads.append(path) or real(path))
    work = Work("st", "ph", len, None, run)
    work.prepare()
    work.prepare()
    assert digests.file_digest(str(docs)) == hashlib.sha256(b"a docs shard").hexdigest() and hashed == []
    assert loads == [run.digests_file], "read once, not again for the next phase while it is as it was"


def test_a_ledger_put_back_by_a_link_is_not_read_as_a_table_again(tmp_path, monkeypatch):
    """Restoring a kept result links the ledger back (its change time moves, so its `stat`-keyed digest no longer
    holds): the next run hashes its bytes and finds its set of ids by them, without reading the table."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    ledger, kept_copy = tmp_path / "ledger.parquet", tmp_path / "kept.ledger"
    pq.write_table(pa.table({"id": ["b", "a", "b"]}), ledger)
    time.sleep(2 * SETTLED_S)
    first = digests.removed_digest(str(ledger))
    kept = str(tmp_path / "digests.json")
    digests.save(kept)
    os.link(ledger, kept_copy)   # as `outcomes.keep` and `restore` do: the same inode, a new change time
    ledger.unlink()
    os.link(kept_copy, ledger)

    _next_run(monkeypatch, kept)
    tables = []
    real = digests.read_table
    monkeypatch.setattr(digests, "read_table", lambda *a, **k: tables.append(a) or real(*a, **k))
    assert digests.removed_digest(str(ledger)) == first and tables == []
    pq.write_table(pa.table({"id": ["c"]}), ledger)   # other ids: read as a table, another set
    assert digests.removed_digest(str(ledger)) != first and len(tables) == 1


def test_a_moved_run_folder_keeps_the_digests_of_its_files(tmp_path, monkeypatch):
    """Files under the run folder are kept relative to it: after `mv` (the same inodes and times) the next run trusts
    them at their new paths; an input outside the run folder stays keyed by its own path."""
    run, moved, outside = tmp_path / "run", tmp_path / "moved", tmp_path / "inputs" / "page.parquet"
    (run / "docs").mkdir(parents=True)
    (run / "_state").mkdir()
    outside.parent.mkdir()
    _write(run / "docs" / "a.parquet", b"a docs shard", True)
    _write(outside, b"an input file", True)
    for path in (run / "docs" / "a.parquet", outside):
        digests.file_digest(str(path))
    digests.save(str(run / "_state" / "digests.json"))
    kept = json.loads((run / "_state" / "digests.json").read_bytes())
    assert [row[1] for row in kept["in_run"]] == ["docs/a.parquet"] and [row[1] for row in kept["digests"]] == [str(outside)]
    os.rename(run, moved)
    hashed = _next_run(monkeypatch, str(moved / "_state" / "digests.json"))
    assert digests.file_digest(str(moved / "docs" / "a.parquet")) == hashlib.sha256(b"a docs shard").hexdigest()
    assert digests.file_digest(str(outside)) == hashlib.sha256(b"an input file").hexdigest() and hashed == []
