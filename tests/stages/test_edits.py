"""The text-edit contract: an editing stage writes only `edit(batch) -> spans`; the template records, counts and
shows them, later steps see the edited text, and the `edits` view names the step of each span so that the
edits of several steps re-apply to an original (issue 28 item 5)."""

import json

import duckdb
import pyarrow as pa
import pytest

from curate.rundir.edits import apply_spans, apply_steps
from curate.rundir.views import connect
from curate.stages.edit import EditStage, spans

from conftest import run_cli


class Shout(EditStage):
    """A test's own editing stage: every word `cat` becomes `CAT!`, nothing else."""

    KIND = "shout"

    def edit_kinds(self):
        return ["cat"]

    def edit(self, batch):
        found = [(row, i, i + 3) for row, text in enumerate(batch.column("text").to_pylist())
                 for i in range(len(text)) if text.startswith("cat", i)]
        return spans([r for r, _, _ in found], ["cat"] * len(found), [s for _, s, _ in found], [e for _, _, e in found],
                      ["CAT!"] * len(found))


def test_an_editing_stage_writes_only_edit(run_stage):
    done = run_stage(Shout, docs={"web": ["a cat and a cat", "no animal", "cat"]}, before=[])
    edits = done.table("edits", "shout").sort_by([("id", "ascending"), ("start", "ascending")])
    assert edits.column_names == ["source", "id", "kind", "start", "end", "placeholder", "original_sha256"]
    assert edits.select(["id", "start", "end", "placeholder"]).to_pylist() == [
        {"id": "web-0", "start": 2, "end": 5, "placeholder": "CAT!"}, {"id": "web-0", "start": 12, "end": 15, "placeholder": "CAT!"},
        {"id": "web-2", "start": 0, "end": 3, "placeholder": "CAT!"}]
    assert [(c["in"], c["kept"], c["edited"], c["spans:cat"]) for c in done.counts] == [(3, 3, 2, 3)]
    assert done.run.read_json(done.run.path("_state", "shout", "record.json"))["kinds"] == ["cat"]


TWO_STEPS = """name: two
sources:
  web: {{format: jsonl, paths: '{src}'}}
stages:
  ingest: {{}}
  mail:
    use: pii
    kinds: [email]
    placeholders: {{email: '<E>'}}
  tickets:
    use: pii
    kinds: []
    patterns: {{tk: 'TICKET-[0-9]{{6}}'}}
    placeholders: {{tk: '<T>'}}
"""
TEXTS = ["Write to jane@mail.example-shop.com about TICKET-123456 today.", "TICKET-654321 only", "nothing here"]


def test_two_editing_steps_name_their_step_and_re_apply_in_order(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(TEXTS)))
    (tmp_path / "p.yaml").write_text(TWO_STEPS.format(src=src))
    assert run_cli(tmp_path / "p.yaml", "--output", tmp_path / "run", "--inline", "-q") == 0
    kept = dict(duckdb.sql(f"SELECT split_part(id, '/', -1), text FROM read_parquet('{tmp_path}/run/kept/*/*.parquet')").fetchall())
    kept = {f"d{i}": text for i, text in kept.items()}   # the reader's ids: <source>/<file>/<line>
    assert kept["d0"] == "Write to <E> about <T> today."
    con = connect(str(tmp_path / "run"))
    rows = con.sql("SELECT step, start, \"end\", placeholder FROM edits WHERE id LIKE '%/0' ORDER BY step, start").fetchall()
    assert [r[0] for r in rows] == ["mail", "tickets"], "each span names the step that recorded it"
    with pytest.raises(ValueError, match="overlaps"):   # the steps' offsets are into different texts: never one set
        apply_spans(TEXTS[0], [r[1:] for r in rows])
    for i, text in enumerate(TEXTS):
        mine = con.sql(f"SELECT step, start, \"end\", placeholder FROM edits WHERE id LIKE '%/{i}'").fetchall()
        assert apply_steps(text, mine, ["mail", "tickets"]) == kept[f"d{i}"]
    assert con.sql("SELECT DISTINCT step FROM edits ORDER BY 1").fetchall() == [("mail",), ("tickets",)]
    with pytest.raises(ValueError, match="give every editing step"):
        apply_steps(TEXTS[0], rows, ["mail"])


def test_every_combined_view_names_the_step(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(TEXTS)))
    (tmp_path / "p.yaml").write_text(f"name: s\nsources:\n  web: {{format: jsonl, paths: '{src}'}}\nstages:\n  ingest: {{}}\n"
                                     "  signals: {langid: false}\n  more: {use: signals, langid: false}\n")
    assert run_cli(tmp_path / "p.yaml", "--output", tmp_path / "run", "--inline", "-q") == 0
    con = connect(str(tmp_path / "run"))
    assert con.sql("SELECT step, count(*) FROM signals GROUP BY step ORDER BY step").fetchall() == [("more", 3), ("signals", 3)]
    assert "step" not in [c for (c, *_) in con.sql("DESCRIBE more").fetchall()], "a step's own view needs no step column"
    assert pa.types.is_string(con.sql("SELECT step FROM signals").to_arrow_table().schema.field("step").type)
