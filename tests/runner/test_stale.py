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
