"""Writing and opening files: a docs shard's text without dictionary or statistics (and the other columns as
before), the local-path short cut giving what fsspec gives, and the atomic writer publishing only whole files."""

from __future__ import annotations

import os

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.io import fs
from curate.io.parquet import DOCS_PLAIN, ParquetSink, read_table, write_table


def _encodings(path) -> dict[str, tuple]:
    meta = pq.ParquetFile(path).metadata.row_group(0)
    return {meta.column(i).path_in_schema: (meta.column(i).encodings, meta.column(i).statistics is not None)
            for i in range(meta.num_columns)}


def test_plain_columns_have_no_dictionary_nor_statistics_and_the_rest_keep_both(tmp_path):
    table = pa.table({"id": ["a", "b", "a"], "text": ["one page", "another page", "one page"], "url": ["u", "u", "v"]})
    write_table(str(tmp_path / "docs.parquet"), table, plain=DOCS_PLAIN)
    write_table(str(tmp_path / "kept.parquet"), table)
    docs, kept = _encodings(tmp_path / "docs.parquet"), _encodings(tmp_path / "kept.parquet")
    assert "RLE_DICTIONARY" not in docs["text"][0] and docs["text"][1] is False
    assert "RLE_DICTIONARY" in docs["id"][0] and docs["id"][1] is True and docs["url"] == kept["url"]
    assert "RLE_DICTIONARY" in kept["text"][0] and kept["text"][1] is True   # outputs other than docs: unchanged
    assert read_table(str(tmp_path / "docs.parquet")).equals(table)
    with ParquetSink(str(tmp_path / "empty.parquet"), table.schema, plain=DOCS_PLAIN):
        pass                                                                # no batch: the schema alone, still plain
    assert pq.read_schema(tmp_path / "empty.parquet").names == ["id", "text", "url"]


@pytest.mark.parametrize("path", ["/tmp/a", "/tmp/a/", "/tmp//a/./b", "/", "/tmp/a b/c.parquet", "/tmp/a::memory://b"])
def test_an_absolute_local_path_gives_what_fsspec_gives(path):
    ours, theirs = fs.filesystem(path), fsspec.core.url_to_fs(path)
    assert type(ours[0]) is type(theirs[0]) and ours[1] == theirs[1]


def test_the_atomic_writer_makes_folders_and_publishes_only_a_whole_file(tmp_path):
    target = tmp_path / "new" / "deeper" / "f.bin"
    fs.write_bytes(str(target), b"whole")
    assert target.read_bytes() == b"whole"
    with pytest.raises(RuntimeError):
        with fs.AtomicWriter(str(tmp_path / "new" / "g.bin")) as handle:
            handle.write(b"half")
            raise RuntimeError("killed mid-write")
    assert sorted(os.listdir(tmp_path / "new")) == ["deeper"], "neither the file nor its temporary is left"


def test_a_large_file_replaces_another_by_moving_it_aside_and_a_small_one_in_one_rename(tmp_path, monkeypatch):
    """A file of ASIDE_BYTES or more is installed without renaming over the old one (the old one is moved to a
    temporary name, then removed); a small one is renamed over it. Either way the path ends with the new bytes, a new
    file (the old one's other links keep the old bytes), and no temporary is left."""
    renames = []
    real_rename = os.rename
    monkeypatch.setattr(os, "rename", lambda a, b: (renames.append(os.path.basename(b)), real_rename(a, b))[1])
    big, small = tmp_path / "big.bin", tmp_path / "small.json"
    big.write_bytes(b"old" * fs.ASIDE_BYTES)
    small.write_bytes(b"{}")
    os.link(big, tmp_path / "kept-link.bin")
    fs.write_bytes(str(big), b"new" * fs.ASIDE_BYTES)
    fs.write_bytes(str(small), b'{"new": 1}')
    assert big.read_bytes() == b"new" * fs.ASIDE_BYTES and small.read_bytes() == b'{"new": 1}'
    assert (tmp_path / "kept-link.bin").read_bytes() == b"old" * fs.ASIDE_BYTES
    assert len(renames) == 1 and renames[0].startswith("big.bin.tmp-"), "only the large file's old one moved aside"
    assert sorted(os.listdir(tmp_path)) == ["big.bin", "kept-link.bin", "small.json"]
    fs.write_bytes(str(tmp_path / "fresh.bin"), b"x" * fs.ASIDE_BYTES)   # nothing to move aside
    assert (tmp_path / "fresh.bin").stat().st_size == fs.ASIDE_BYTES and fs.remove_temporaries(str(tmp_path)) == 0


def test_a_kill_between_moving_aside_and_renaming_in_leaves_only_temporaries(tmp_path, monkeypatch):
    """Killed after the old file moved aside and before the new one is renamed in: no file at the path, and the
    resume's `remove_temporaries` clears both (the task that was writing runs again)."""
    path = tmp_path / "big.bin"
    path.write_bytes(b"old" * fs.ASIDE_BYTES)
    monkeypatch.setattr(os, "replace", lambda a, b: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        fs.write_bytes(str(path), b"new" * fs.ASIDE_BYTES)
    assert not path.exists() and len(os.listdir(tmp_path)) == 2
    assert fs.remove_temporaries(str(tmp_path)) == 2 and os.listdir(tmp_path) == []


def test_remove_takes_files_folders_and_links_by_their_literal_names(tmp_path):
    """`fs.remove` on a local path: a file, a folder with what is in it, a link (not what it points to), a name with
    glob characters (only that file), and nothing at all; `exists` and `read_bytes` agree."""
    (tmp_path / "dir" / "sub").mkdir(parents=True)
    (tmp_path / "dir" / "sub" / "f.json").write_bytes(b"{}")
    (tmp_path / "target").mkdir()
    (tmp_path / "target" / "kept.txt").write_bytes(b"kept")
    (tmp_path / "link").symlink_to(tmp_path / "target")
    (tmp_path / "a[1].parquet").write_bytes(b"x")
    (tmp_path / "a1.parquet").write_bytes(b"y")
    assert fs.read_bytes(str(tmp_path / "a[1].parquet")) == b"x"
    for name in ("dir", "link", "a[1].parquet", "missing"):
        fs.remove(str(tmp_path / name))
        assert not fs.exists(str(tmp_path / name)) and not (tmp_path / name).is_symlink()
    assert (tmp_path / "target" / "kept.txt").read_bytes() == b"kept" and (tmp_path / "a1.parquet").exists()


@pytest.mark.skipif(not hasattr(os, "posix_fadvise"), reason="no posix_fadvise on this platform")
def test_prefetch_asks_for_local_files_that_exist_up_to_its_budget(tmp_path, monkeypatch):
    asked = []
    monkeypatch.setattr(os, "posix_fadvise", lambda fd, offset, length, advice: asked.append(os.fstat(fd).st_size))
    for name, size in (("a", 10), ("b", 20), ("c", 30)):
        (tmp_path / name).write_bytes(b"x" * size)
    paths = [str(tmp_path / n) for n in ("a", "gone", "b", "c")]
    assert fs.prefetch(paths) == 3 and asked == [10, 20, 30]
    asked.clear()
    assert fs.prefetch(paths, budget=35) == 2 and asked == [10, 20]   # the first files that fit
    assert fs.prefetch(["memory://bucket/a"]) == 0                     # not local: nothing asked
