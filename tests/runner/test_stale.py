"""What no step of the pipeline writes any more goes before the run starts, quarantine parts included."""

from pathlib import Path

from curate import load_pipeline
from curate.rundir import RunDir
from curate.runner.stale import remove_stale
from curate.stages import STAGES


def pipeline(tmp_path: Path, steps: str):
    (tmp_path / "in.jsonl").write_text('{"text": "one"}\n')
    f = tmp_path / "p.yaml"
    f.write_text(f"name: p\nsources:\n  web: {{format: jsonl, paths: '{tmp_path}/in.jsonl'}}\nstages:\n  ingest: {{}}\n{steps}")
    return load_pipeline(f)


def touch(run: RunDir, *parts: str) -> Path:
    path = Path(run.path(*parts))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x")
    return path


def test_a_quarantine_part_stays_with_its_step_and_goes_without_it(tmp_path):
    run = RunDir(str(tmp_path / "run"))
    mine = touch(run, "quarantine", "screen", "web", "000000.parquet")
    gone = touch(run, "quarantine", "old_screen", "web", "000000.parquet")
    legacy = touch(run, "quarantine", "web", "000000.parquet")   # before parts by step: RUN/quarantine/<source>/
    remove_stale(run, pipeline(tmp_path, "  screen: {use: dual_use, terms: demo}\n"), STAGES)
    assert mine.exists() and not gone.parent.parent.exists() and not legacy.parent.exists()
    remove_stale(run, pipeline(tmp_path, ""), STAGES)
    assert not (tmp_path / "run" / "quarantine").exists()


def test_switching_the_only_editing_step_off_leaves_no_edits_folder(tmp_path):
    run = RunDir(str(tmp_path / "run"))
    touch(run, "edits", "pii", "web", "000000.parquet")
    touch(run, "_state", "pii", "record.json")
    remove_stale(run, pipeline(tmp_path, "  pii: {}\n"), STAGES)
    assert (tmp_path / "run" / "edits" / "pii" / "web").exists()
    remove_stale(run, pipeline(tmp_path, ""), STAGES)   # pii switched off (or taken out)
    assert not (tmp_path / "run" / "edits").exists(), "an empty edits/ was left behind"


class Looked(dict):
    """The stage registry, noting which kinds are looked up (each lookup of a built-in kind imports its module)."""

    def __init__(self):
        super().__init__()
        self.names: set[str] = set()

    def __getitem__(self, name):
        self.names.add(name)
        return STAGES[name]

    def __contains__(self, name):
        return name in STAGES


def test_run_level_files_and_earlier_table_folders_go_with_the_kinds_that_wrote_them(tmp_path):
    run = RunDir(str(tmp_path / "run"))
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "pipeline.yaml").write_text("# resolved\nname: p\nstages:\n  ingest: {}\n  quality: {use: classify}\n"
                                                    "  manifest: {enabled: false}\n  mine: {use: not_a_kind_any_more}\n")
    manifest, scores = touch(run, "manifest.json"), touch(run, "scores", "web", "000000.parquet")
    looked = Looked()
    remove_stale(run, pipeline(tmp_path, ""), looked)
    assert not manifest.exists(), "the manifest of a pipeline that has no manifest step any more was left"
    assert not scores.parent.parent.exists(), "the table folder an earlier version's classify step wrote was left"
    assert looked.names == {"ingest", "classify", "manifest"}   # the kinds the pipelines named: no other module loaded


def test_a_folder_of_a_step_named_like_an_earlier_table_stays(tmp_path):
    run = RunDir(str(tmp_path / "run"))
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "pipeline.yaml").write_text("stages:\n  ingest: {}\n  signals: {}\n")
    mine = touch(run, "signals", "web", "000000.parquet")
    remove_stale(run, pipeline(tmp_path, "  signals: {}\n"), STAGES)
    assert mine.exists()
