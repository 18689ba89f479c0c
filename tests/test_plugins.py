"""Outside code from the CLI: a pipeline's `plugins:` and installed packages' entry points (`curate/plugins.py`).

The stage here is docs/architecture.md's "Writing a stage", taken from the page as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import ROOT, env_with, run_cli
from curate import plugins
from curate.readers import FORMATS, READERS
from curate.stages import STAGES

TEXTS = ["a quiet line of text", "ALL OF THIS IS SHOUTED", "Mixed Case Is Fine", "SHOUTING AGAIN, LOUDLY"]


def _docs_blocks() -> tuple[str, str]:
    """The Python and YAML blocks of docs/architecture.md's "Writing a stage"."""
    page = (ROOT / "docs" / "architecture.md").read_text()
    section = page.split("## Writing a stage", 1)[1].split("\n## ", 1)[0]
    python = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    yaml = re.search(r"```yaml\n(.*?)```", section, re.S).group(1)
    return python, yaml


def _project(tmp_path: Path, module: str, code: str, yaml_body: str) -> Path:
    """A folder holding `<module>.py`, one Parquet source and `pipeline.yaml` (name, sources, then `yaml_body`)."""
    folder = tmp_path / "project"
    (folder / "in").mkdir(parents=True)
    (folder / f"{module}.py").write_text(code)
    pq.write_table(pa.table({"id": [f"d{i}" for i in range(len(TEXTS))], "text": TEXTS}), folder / "in" / "web.parquet")
    pipeline = folder / "pipeline.yaml"
    pipeline.write_text(f"name: plugin\nsources:\n  web: {{format: parquet, paths: {folder}/in/*.parquet, fields: {{id: id}}}}\n" + yaml_body)
    return pipeline


@pytest.fixture
def forget(monkeypatch):
    """Undo what importing plugin modules did to this process (modules, registered stages, sys.path)."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(plugins, "IMPORTED", [])
    monkeypatch.setattr(plugins, "_loaded", {})
    names = []
    yield names
    for name in names:
        sys.modules.pop(name, None)
        STAGES._classes.pop(name, None)


def _removed(run: Path, step: str) -> list[tuple[str, str]]:
    ledger = pa.concat_tables(pq.read_table(f) for f in sorted((run / "ledger" / step).rglob("*.parquet")))
    return sorted(zip(ledger.column("id").to_pylist(), ledger.column("reason").to_pylist()))


SHOUTED = [("d1", "lowercase_check:shouting"), ("d3", "lowercase_check:shouting")]


def test_the_architecture_pages_stage_runs_from_the_cli_as_a_plugin(tmp_path, forget):
    forget.append("lowercase_check")
    python, yaml = _docs_blocks()
    pipeline = _project(tmp_path, "lowercase_check", python, yaml)
    assert "lowercase_check" not in STAGES
    assert run_cli(pipeline, "--output", tmp_path / "run", "--inline", "-q") == 0
    assert _removed(tmp_path / "run", "lowercase_check") == SHOUTED
    kept = pq.read_table(next((tmp_path / "run" / "kept").rglob("*.parquet")))
    assert sorted(kept.column("text").to_pylist()) == sorted([TEXTS[0], TEXTS[2]])
    assert "plugins:\n- lowercase_check" in (tmp_path / "run" / "pipeline.yaml").read_text()


def test_on_ray_the_plugins_code_travels_with_its_tasks(tmp_path):
    """The embedded Ray cluster, its workers started elsewhere than the pipeline's folder: they run the stage
    without importing its module (it is pickled by value)."""
    python, yaml = _docs_blocks()
    pipeline = _project(tmp_path, "lowercase_check", python, yaml)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = subprocess.run([sys.executable, "-m", "curate", "run", str(pipeline), "--output", str(tmp_path / "run"),
                           "--workers", "2", "-q"], cwd=elsewhere, capture_output=True, text=True, timeout=300,
                          env=env_with(PYTHONPATH=ROOT))
    assert done.returncode == 0, done.stderr[-3000:]
    assert _removed(tmp_path / "run", "lowercase_check") == SHOUTED


def test_a_plugin_that_fails_to_import_is_one_line_naming_it(tmp_path, forget, capsys):
    forget.append("broken_stage")
    pipeline = _project(tmp_path, "broken_stage", "import no_such_module_anywhere\n",
                        "plugins: [broken_stage]\nstages:\n  ingest: {}\n")
    assert run_cli(pipeline, "--output", tmp_path / "run", "--inline", "-q") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert f"{pipeline}: plugins[0]: cannot import module 'broken_stage': ModuleNotFoundError" in err
    assert not (tmp_path / "run").exists()


def _installed(site: Path, package: str, entry_points: str, code: str) -> None:
    """A package installed into `site` as pip would: its module and a dist-info with entry points."""
    (site / f"{package}.py").write_text(code)
    info = site / f"{package}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(entry_points)


PLUGIN_PACKAGE = '''
import pyarrow as pa
from curate.readers import Format, Reader
from curate.stages.shard import Output, ShardStage

class Keep(ShardStage):          # no @stage: the entry point's name registers it
    COLUMNS = ["id"]

    def process(self, batch, shard):
        return Output()

class Lines(Reader):             # no register(): the entry point does
    kind = "lines_plugin"
    formats = (Format("lines_plugin", "lines_plugin"),)

    def read(self, task, fmt, handle, options, bad, stats):
        yield pa.table({"id": ["x"], "text": ["y"]})
'''


def test_installed_packages_register_stages_and_readers_through_entry_points(tmp_path, forget, monkeypatch):
    forget.append("keep_plugin")
    monkeypatch.syspath_prepend(str(tmp_path))
    _installed(tmp_path, "curate_extra", "[curate.stages]\nkeep_plugin = curate_extra:Keep\n\n"
                                        "[curate.readers]\nlines_plugin = curate_extra:Lines\n", PLUGIN_PACKAGE)
    try:
        assert "keep_plugin" in STAGES and STAGES["keep_plugin"].__name__ == "Keep" and STAGES["keep_plugin"].KIND == "keep_plugin"
        assert FORMATS["lines_plugin"].kind == "lines_plugin" and type(READERS["lines_plugin"]).__name__ == "Lines"
    finally:
        for registry in (FORMATS, READERS):
            dict.pop(registry, "lines_plugin", None)
        sys.modules.pop("curate_extra", None)


def test_a_broken_entry_point_is_one_line_naming_it_and_its_package(tmp_path, forget, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    _installed(tmp_path, "curate_broken", "[curate.stages]\nbroken = curate_broken:Missing\n", "x = 1\n")
    try:
        with pytest.raises(plugins.PluginError) as caught:
            STAGES["some_stage_nobody_has"]
        message = str(caught.value)
        assert message.startswith("plugin 'broken' (curate.stages entry point curate_broken:Missing of package curate_broken) "
                                  "cannot be imported: AttributeError") and "\n" not in message
        assert caught.value.exit_code == 2
    finally:
        sys.modules.pop("curate_broken", None)
