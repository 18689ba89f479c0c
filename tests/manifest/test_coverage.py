"""What `manifest verify` covers: the pii steps' span files (edits/) and no file beside the listed ones in the
folders it lists files in; where `manifest publish` may write."""

import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.cli import main
from curate.errors import CurateError
from curate.manifest.verify import verify
from curate.rundir.edits import apply_edits, read_spans
from curate.rundir import RunDir
from curate.stages.reads import stable_name

from conftest import run_cli

SHARD = f"{stable_name('a.jsonl')}-0000"   # the docs shard of a.jsonl


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A run of three documents through pii, tokenize, pack and manifest (two of them with a span)."""
    d = tmp_path_factory.mktemp("cover")
    (d / "a.jsonl").write_text('{"text": "mail me at robert.smith@gmail.com please, a fine document"}\n'
                               '{"text": "another doc with 8.8.8.8 in it and words"}\n{"text": "plain text here"}\n')
    (d / "p.yaml").write_text(f"name: t\nsources:\n  web: {{format: jsonl, paths: '{d}/a.jsonl'}}\nstages:\n"
                              "  ingest: {}\n  pii: {kinds: [email, ipv4]}\n  tokenize: {tokenizer: gpt2}\n"
                              "  pack: {seq_len: 64}\n  manifest: {}\n")
    assert run_cli(d / "p.yaml", "--output", d / "run", "--inline", "-q") == 0
    return d / "run"


@pytest.fixture
def run(built, tmp_path):
    return shutil.copytree(built, tmp_path / "run")


def tamper_span_end(path, end: int = 1000) -> None:
    table = pq.read_table(path)
    rows = table.to_pydict()
    rows["end"][0] = end
    pq.write_table(pa.table(rows, schema=table.schema), path)


def test_the_manifest_lists_the_span_files_and_verify_names_a_changed_one(run):
    span_file = run / "edits" / "pii" / "web" / f"{SHARD}.parquet"
    assert pq.read_table(span_file).num_rows == 2
    assert verify(str(run)) == []   # the pack step's _shards/ and the tokenize step's folder are the run's work, not reported
    tamper_span_end(span_file)
    found = verify(str(run))
    assert len(found) == 1 and found[0].startswith(f"changed: edits/pii/web/{SHARD}.parquet (")


def test_verify_names_files_the_manifest_does_not_list_in_the_folders_it_covers(run):
    for extra in ("pack/evil.bin", "kept/evil/x.parquet", "kept/web/extra.parquet", f"edits/pii/web/{SHARD}b.parquet",
                  "ledger/ingest/web/more.parquet"):
        (run / extra).parent.mkdir(parents=True, exist_ok=True)
        (run / extra).write_bytes(b"x")
    (run / "notes.txt").write_text("outside the covered folders")
    assert verify(str(run)) == [f"unlisted: edits/pii/web/{SHARD}b.parquet", "unlisted: kept/evil/x.parquet",
                                "unlisted: kept/web/extra.parquet", "unlisted: ledger/ingest/web/more.parquet",
                                "unlisted: pack/evil.bin"]
    assert main(["manifest", "verify", str(run)]) == 1


def test_a_changed_span_file_is_named_where_a_later_step_applies_it(run):
    tamper_span_end(run / "edits" / "pii" / "web" / f"{SHARD}.parquet")
    spans = read_spans(RunDir(str(run)), "pii", "web", SHARD)
    docs = pq.read_table(run / "docs" / "web" / f"{SHARD}.parquet", columns=["id", "text"])
    with pytest.raises(CurateError, match=rf"edits/pii/web/{SHARD}\.parquet: document web/a\.jsonl/0: span 11:1000 .*"
                                          "curate manifest verify"):
        apply_edits(docs, spans)
    (run / "edits" / "pii" / "web" / f"{SHARD}.parquet").write_bytes(b"not parquet")
    with pytest.raises(CurateError, match=rf"edits/pii/web/{SHARD}\.parquet: not the spans file step 'pii' wrote"):
        read_spans(RunDir(str(run)), "pii", "web", SHARD)


@pytest.mark.parametrize("dest", ["{run}", "{run}/pub", "{run}/kept/../pub", "{other}/pub", "{link}/pub"])
def test_publish_refuses_a_destination_inside_a_run(run, tmp_path, dest, capsys):
    other = shutil.copytree(run, tmp_path / "other")
    (tmp_path / "link").symlink_to(run / "kept")
    target = dest.format(run=run, other=other, link=tmp_path / "link")
    assert main(["manifest", "publish", str(run), target]) == 2
    err = capsys.readouterr().err
    assert ("inside the run directory" in err or "into its own folder" in err) and len(err.strip().splitlines()) == 1
    assert not (run / "pub").exists() and not (other / "pub").exists()


def test_publish_may_finish_into_its_own_published_copy(run, tmp_path):
    assert main(["manifest", "publish", str(run), str(tmp_path / "dest")]) == 0
    assert main(["manifest", "publish", str(run), str(tmp_path / "dest")]) == 0   # a retry: DEST is this run's copy
    assert verify(str(tmp_path / "dest")) == [] and (tmp_path / "dest" / "edits" / "pii" / "web" / f"{SHARD}.parquet").exists()


def test_publish_refuses_span_files_that_keep_the_replaced_originals(tmp_path, capsys):
    """keep_original: true stores each replaced e-mail in edits/: publishing that would publish the PII itself."""
    d = tmp_path
    (d / "a.jsonl").write_text('{"text": "mail me at robert.smith@gmail.com please, a fine document"}\n')
    (d / "p.yaml").write_text(f"name: t\nsources:\n  web: {{format: jsonl, paths: '{d}/a.jsonl'}}\nstages:\n"
                              "  ingest: {}\n  pii: {kinds: [email], keep_original: true}\n  tokenize: {tokenizer: gpt2}\n"
                              "  pack: {seq_len: 64}\n  manifest: {}\n")
    assert run_cli(d / "p.yaml", "--output", d / "run", "--inline", "-q") == 0
    spans = pq.read_table(d / "run" / "edits" / "pii" / "web" / f"{SHARD}.parquet")
    assert spans.column("original").to_pylist() == ["robert.smith@gmail.com"]
    assert main(["manifest", "publish", str(d / "run"), str(d / "dest")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "keep the original text each edit replaced" in err[0] and "--allow-originals" in err[0]
    assert not (d / "dest").exists()
    assert main(["manifest", "publish", str(d / "run"), str(d / "dest"), "--allow-originals"]) == 0
    assert verify(str(d / "dest")) == []
