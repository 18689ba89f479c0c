"""Run manifests: write, verify, publish (local and S3 via a loopback moto server), manifest written last."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import struct
from pathlib import Path

import numpy as np
import pytest

from curate.errors import CurateError
from curate.io.fs import filesystem
from curate.manifest import SCHEMA, publish, store, verify, write_manifest
from curate.manifest.schema import export, problems

jsonschema = pytest.importorskip("jsonschema")

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = ROOT / "manifests" / "manifest.schema.json"
EXAMPLE = ROOT / "manifests" / "example.manifest.json"
SOURCES = ("fwe", "dclm")


# ---------------------------------------------------------------- a small fake run


def megatron_bytes(docs: list[list[int]]) -> tuple[bytes, bytes]:
    """(.bin, .idx) of a Megatron indexed dataset: uint16 ids, one sequence per document."""
    lengths = np.array([len(d) for d in docs], np.int32)
    pointers = np.concatenate([[0], np.cumsum(lengths[:-1].astype(np.int64) * 2)]).astype("<i8")
    doc_index = np.arange(len(docs) + 1, dtype="<i8")
    idx = (b"MMIDIDX\x00\x00" + struct.pack("<QBQQ", 1, 8, len(docs), len(doc_index))
           + lengths.astype("<i4").tobytes() + pointers.tobytes() + doc_index.tobytes())
    return np.concatenate([np.asarray(d, "<u2") for d in docs]).tobytes(), idx


def make_run(root: Path) -> list[str]:
    """Outputs of a two-source run; returns the paths a manifest lists."""
    rng = np.random.default_rng(0)
    files = []
    for i, source in enumerate(SOURCES):
        docs = [rng.integers(0, 50257, rng.integers(5, 40)).tolist() + [50256] for _ in range(20 + 10 * i)]
        binary, index = megatron_bytes(docs)
        (root / "tokens").mkdir(parents=True, exist_ok=True)
        (root / "tokens" / f"{source}.bin").write_bytes(binary)
        (root / "tokens" / f"{source}.idx").write_bytes(index)
        kept = root / "kept" / source
        kept.mkdir(parents=True)
        (kept / "00000.parquet").write_bytes(b"PAR1" + rng.bytes(3000) + b"PAR1")
        files += [f"tokens/{source}.bin", f"tokens/{source}.idx", f"kept/{source}/00000.parquet"]
    (root / "ledger" / "dedup" / "fwe").mkdir(parents=True)
    (root / "ledger" / "dedup" / "fwe" / "00000.parquet").write_bytes(b"PAR1" + rng.bytes(500) + b"PAR1")
    (root / "pipeline.yaml").write_text("name: tiny\nstages:\n  ingest: {}\n")
    (root / "summary.json").write_text(json.dumps([{"stage": "ingest", "source": "fwe", "in": 20, "kept": 20}]))
    return files + ["ledger/dedup/fwe/00000.parquet", "summary.json"]  # pipeline.yaml: publish copies it anyway


def body() -> dict:
    sources = {s: {"weight": 0.5, "available_tokens": 1000, "chosen_tokens": 1000, "epochs": 1.0, "documents": 20,
                   "tokens": 1000} for s in SOURCES}
    return {  # no format_version: write_manifest fills it in
        "pipeline": {"name": "tiny", "hash": hashlib.sha256(b"tiny").hexdigest(), "resolved": {"name": "tiny"}},
        "tokenizer": {"name": "gpt2", "identity": "gpt2@sha256:" + "ab" * 32, "vocab_size": 50257, "eos_id": 50256,
                      "bos_id": None},
        "seq_len": 64,
        "packing": {"method": "best_fit", "density": 0.98, "split_share": 0.01, "sequences": 40},
        "mixture": {"mode": "weights", "seed": 0, "total_tokens": 2000, "sources": sources},
        "megatron_data_path": " ".join(f"0.5 tokens/{s}" for s in SOURCES),
        "outputs": {s: {"prefix": f"tokens/{s}", "documents": 20, "tokens": 1000, "sequences": 20} for s in SOURCES},
        "accounting": [{"stage": "dedup", "source": "fwe", "in": 25, "kept": 20, "removed": {"duplicate": 5}}],
    }


@pytest.fixture
def run(tmp_path) -> Path:
    root = tmp_path / "run"
    write_manifest(str(root), body(), make_run(root))
    return root


def flip_byte(path: Path, offset: int = 7) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


# ---------------------------------------------------------------- schema


def test_schema_file_is_the_exported_module_schema():
    assert SCHEMA_FILE.read_text() == export()
    assert json.loads(SCHEMA_FILE.read_text()) == SCHEMA
    jsonschema.Draft202012Validator.check_schema(json.loads(SCHEMA_FILE.read_text()))


def test_example_manifest_validates():
    example = json.loads(EXAMPLE.read_text())
    jsonschema.validate(example, json.loads(SCHEMA_FILE.read_text()), cls=jsonschema.Draft202012Validator)
    assert problems(example) == []


@pytest.mark.parametrize("path", ["/abs", "../up", "a/../b", "./a", "a//b", "a\\b", "dir/", "manifest.json"])
def test_schema_rejects_paths_outside_the_run(path):
    example = json.loads(EXAMPLE.read_text())
    example["files"][0]["path"] = path
    assert any(p.startswith("$.files[0].path") for p in problems(example))


# ---------------------------------------------------------------- write + verify


def test_write_manifest_hashes_validates_and_verifies(run):
    raw = (run / "manifest.json").read_bytes()
    manifest = json.loads(raw)
    jsonschema.validate(manifest, json.loads(SCHEMA_FILE.read_text()), cls=jsonschema.Draft202012Validator)
    assert raw.decode() == json.dumps(manifest, indent=1, sort_keys=True) + "\n"
    paths = [f["path"] for f in manifest["files"]]
    assert paths == sorted(paths) and "tokens/fwe.bin" in paths
    for entry in manifest["files"]:
        data = (run / entry["path"]).read_bytes()
        assert entry["bytes"] == len(data) and entry["sha256"] == hashlib.sha256(data).hexdigest()
    assert manifest["created_by"].startswith("curate ") and manifest["format_version"] == 1
    assert {"curate", "pyarrow", "numpy"} <= set(manifest["versions"])
    assert verify(str(run)) == []
    assert not list(run.glob("*.tmp-*"))


def test_known_digests_are_not_read_to_write_and_a_wrong_one_fails_the_verify(tmp_path, monkeypatch):
    """`known`: the digests a caller vouches for (a run's kept digests) are taken as they are, the other files hashed;
    the verify after writing still reads every file, so a wrong known digest is an error, never a manifest."""
    import curate.manifest.build as build
    from curate.manifest.body import write_and_verify

    root = tmp_path / "run"
    files = make_run(root)
    hashed = []
    real = build.hash_files
    monkeypatch.setattr(build, "hash_files", lambda run, paths, *a, **kw: hashed.extend(paths) or real(run, paths, *a, **kw))
    right = {p: ((root / p).stat().st_size, hashlib.sha256((root / p).read_bytes()).hexdigest()) for p in files[:2]}
    manifest = write_and_verify(str(root), body(), files, known=right)
    assert sorted(hashed) == sorted(files[2:])
    assert {f["path"]: (f["bytes"], f["sha256"]) for f in manifest["files"]} == {
        p: ((root / p).stat().st_size, hashlib.sha256((root / p).read_bytes()).hexdigest()) for p in files}
    wrong = {files[0]: (right[files[0]][0], "0" * 64)}
    with pytest.raises(CurateError, match=f"changed: {files[0]}"):
        write_and_verify(str(root), body(), files, known=wrong)


def test_flipped_byte_is_reported_as_changed(run):
    flip_byte(run / "tokens" / "fwe.bin")
    found = verify(str(run))
    assert len(found) == 1
    assert found[0].startswith("changed: tokens/fwe.bin (sha256 ") and " != " in found[0]


def test_size_change_is_reported_without_hashing(run):
    idx = run / "tokens" / "dclm.idx"
    size = idx.stat().st_size
    idx.write_bytes(idx.read_bytes() + b"\0")
    assert verify(str(run)) == [f"changed: tokens/dclm.idx (size {size + 1} != {size})"]


def test_missing_file_is_reported(run):
    (run / "tokens" / "fwe.idx").unlink()
    assert verify(str(run)) == ["missing: tokens/fwe.idx"]


def test_missing_or_broken_manifest(tmp_path, run):
    assert verify(str(tmp_path / "nothing")) == ["missing: manifest.json"]
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["tokenizer"]["vocab_size"] = "50257"
    (run / "manifest.json").write_text(json.dumps(manifest))
    found = verify(str(run))
    assert len(found) == 1 and found[0].startswith("schema: $.tokenizer.vocab_size: ")


def test_write_manifest_names_the_json_path_of_a_bad_body(tmp_path):
    root = tmp_path / "run"
    files = make_run(root)
    bad = body()
    bad["packing"]["density"] = 1.5
    with pytest.raises(CurateError, match=r"\$\.packing\.density"):
        write_manifest(str(root), bad, files)
    assert not (root / "manifest.json").exists()
    with pytest.raises(CurateError, match=r"\$\.outputs\.fwe\.prefix: 'tokens/fwe\.idx' is not listed"):
        write_manifest(str(root), body(), [f for f in files if f != "tokens/fwe.idx"])
    with pytest.raises(CurateError, match="missing"):
        write_manifest(str(root), body(), files + ["tokens/nope.bin"])
    with pytest.raises(CurateError, match="inside the run"):
        write_manifest(str(root), body(), files + ["../secret"])
    with pytest.raises(CurateError, match="created_at"):
        write_manifest(str(root), {**body(), "created_at": "2020-01-01T00:00:00Z"}, files)
    with pytest.raises(CurateError, match="cannot be written as JSON"):
        nan = {**body(), "pipeline": {**body()["pipeline"], "resolved": {"x": float("nan")}}}
        write_manifest(str(root), nan, files)
    assert not (root / "manifest.json").exists()


# ---------------------------------------------------------------- publish (local)


def test_publish_to_a_local_dir(run, tmp_path, caplog):
    dest = tmp_path / "published" / "tiny"
    with caplog.at_level(logging.INFO, logger="curate"):
        report = publish(str(run), str(dest))
    listed = json.loads((run / "manifest.json").read_text())["files"]
    assert report["files"] == len(listed) + 1  # + pipeline.yaml
    assert report["bytes"] == sum(f["bytes"] for f in listed) + (run / "pipeline.yaml").stat().st_size
    assert report["seconds"] >= 0
    assert (dest / "manifest.json").read_bytes() == (run / "manifest.json").read_bytes()
    assert (dest / "pipeline.yaml").read_text() == (run / "pipeline.yaml").read_text()
    assert verify(str(dest)) == []
    assert any("published" in r.getMessage() for r in caplog.records)
    assert not list(dest.rglob("*.tmp-*"))


def test_publish_refuses_a_corrupted_run(run, tmp_path):
    flip_byte(run / "tokens" / "dclm.bin")
    dest = tmp_path / "dest"
    with pytest.raises(CurateError, match=r"changed: tokens/dclm\.bin"):
        publish(str(run), str(dest))
    assert not (dest / "manifest.json").exists()


def test_publish_refuses_onto_itself(run):
    with pytest.raises(CurateError, match="onto itself"):
        publish(str(run), str(run))


def test_manifest_is_written_last(run, tmp_path, monkeypatch):
    dest = tmp_path / "dest"
    order = []
    real_copy, real_write = store.copy_file, store.write_atomic

    def copy(src_fs, src, dst_fs, dst, ticker=None):
        result = real_copy(src_fs, src, dst_fs, dst, ticker)
        order.append(os.path.relpath(dst, dest))
        return result

    def write(filesystem, path, data):
        order.append(os.path.relpath(path, dest))
        real_write(filesystem, path, data)

    monkeypatch.setattr(store, "copy_file", copy)
    monkeypatch.setattr(store, "write_atomic", write)
    publish(str(run), str(dest), workers=3)
    assert order[-1] == "manifest.json" and order.count("manifest.json") == 1
    assert len(order) == len(json.loads((run / "manifest.json").read_text())["files"]) + 2


def test_failed_copy_leaves_no_manifest_at_dest(run, tmp_path, monkeypatch):
    dest = tmp_path / "dest"
    publish(str(run), str(dest))  # a previous publish: its manifest must come down before files are replaced
    assert (dest / "manifest.json").exists()
    real_copy = store.copy_file

    def failing_copy(src_fs, src, dst_fs, dst, ticker=None):
        if src.endswith("tokens/fwe.bin"):
            with open(dst, "wb") as f:  # half a file under the final name, then the network drops
                f.write(b"\0" * 10)
            raise OSError("connection reset mid-way")
        return real_copy(src_fs, src, dst_fs, dst, ticker)

    monkeypatch.setattr(store, "copy_file", failing_copy)
    with pytest.raises(CurateError, match=r"failed on tokens/fwe\.bin: connection reset"):
        publish(str(run), str(dest), workers=1)
    assert not (dest / "manifest.json").exists()
    monkeypatch.setattr(store, "copy_file", real_copy)
    publish(str(run), str(dest))  # a retry repairs it
    assert verify(str(dest)) == []


def test_atomic_open_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "a" / "b.bin"
    fs_local, _ = filesystem(str(tmp_path))
    with pytest.raises(RuntimeError):
        with store.atomic_open(fs_local, str(target)) as f:
            f.write(b"partial")
            raise RuntimeError("boom")
    assert not target.exists() and list(target.parent.iterdir()) == []


# ---------------------------------------------------------------- publish (S3 on a loopback moto server)


@pytest.fixture(scope="module")
def s3():
    """A moto S3 server on 127.0.0.1 with bucket 'pub'; yields the storage_options that reach it."""
    pytest.importorskip("moto.server")
    s3fs = pytest.importorskip("s3fs")
    from moto.server import ThreadedMotoServer

    with pytest.MonkeyPatch.context() as mp:
        for key in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
            mp.delenv(key, raising=False)
        mp.setenv("AWS_ACCESS_KEY_ID", "testing")
        mp.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        mp.setenv("AWS_DEFAULT_REGION", "us-east-1")
        mp.setenv("AWS_EC2_METADATA_DISABLED", "true")
        mp.setenv("AWS_CONFIG_FILE", os.devnull)
        mp.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
        for key in ("NO_PROXY", "no_proxy"):
            mp.setenv(key, ",".join(filter(None, [os.environ.get(key), "127.0.0.1", "localhost"])))
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        try:
            host, port = server.get_host_and_port()
            options = {"client_kwargs": {"endpoint_url": f"http://{host}:{port}"},
                       "skip_instance_cache": True}
            fs3 = s3fs.S3FileSystem(**options)
            fs3.mkdir("pub")
            yield options, fs3
        finally:
            server.stop()


def test_publish_to_s3_and_verify_there(run, s3):
    options, fs3 = s3
    dest = "s3://pub/runs/tiny"
    report = publish(str(run), dest, storage_options=options)
    assert report["files"] == len(json.loads((run / "manifest.json").read_text())["files"]) + 1
    assert fs3.cat("pub/runs/tiny/manifest.json") == (run / "manifest.json").read_bytes()
    assert fs3.cat("pub/runs/tiny/tokens/fwe.bin") == (run / "tokens" / "fwe.bin").read_bytes()
    assert fs3.exists("pub/runs/tiny/pipeline.yaml")
    assert verify(dest, storage_options=options) == []

    data = bytearray(fs3.cat("pub/runs/tiny/tokens/dclm.idx"))
    data[40] ^= 0xFF
    fs3.pipe("pub/runs/tiny/tokens/dclm.idx", bytes(data))
    found = verify(dest, storage_options=options)
    assert len(found) == 1 and found[0].startswith("changed: tokens/dclm.idx (sha256 ")


def test_failed_upload_to_s3_is_not_committed(s3):
    options, fs3 = s3
    fs3.invalidate_cache()
    with pytest.raises(RuntimeError):
        with store.atomic_open(fs3, "pub/partial/x.bin") as f:
            f.write(b"\1" * 1000)
            raise RuntimeError("boom")
    fs3.invalidate_cache()
    assert not fs3.exists("pub/partial/x.bin")


def test_loopback_only(s3):
    """The moto server listens on 127.0.0.1 only."""
    options, _ = s3
    url = options["client_kwargs"]["endpoint_url"]
    assert url.startswith("http://127.0.0.1:")
    with socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1])), timeout=2):
        pass


def test_progress_logs_every_n_files_not_every_block(caplog):
    from curate.manifest.progress import Ticker

    ticker = Ticker("publish", files=5, total_bytes=5 << 20, every=2, seconds=3600)
    with caplog.at_level(logging.INFO, logger="curate"):
        for _ in range(5):
            ticker.add(1 << 19)
            ticker.add(1 << 19, file_done=True)
        ticker.finish()
    lines = [r.getMessage() for r in caplog.records]
    assert [line.split("  ")[0] for line in lines] == [f"[publish] {n}/5 files" for n in (2, 4, 5)]
