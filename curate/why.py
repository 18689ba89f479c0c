"""`curate why RUN SOURCE ID`: one document's story, from the run directory alone.

Where it came from (input file, docs shard, row), each step in pipeline order with what that step recorded about it
(the ledger's reason and detail: a filter's failing values, a dedup's kept twin and similarity, a decontamination's
item and overlap; the rows of the step's id-keyed tables: classifier scores and label, dual-use terms and score,
the matched passage of an eval item; the spans an editing step replaced; a dedup step's cluster), its mix copies,
and where its tokens are in every packed output (the pack steps' document maps, curate/tokens/docmap.py).

Fast at scale: every table of a run is one file per docs shard, with the same shard names. The document's docs shard
is found from the ingest step's id index (a footer and one row group per shard, curate/rundir/idindex.py), or, in a
run made before it, from the docs files' footers (row-group min/max of `id`; only the row groups that can hold it are
read), then
each step's files of that one shard are read with a filter on `id`; a merged document map says in its footer where
each shard's rows are, so only those row groups are read.
"""

from __future__ import annotations

import json
import os
import shlex

from curate.errors import UsageError
from curate.io import fs

TEXT_COLUMNS = 10   # a keyed table with more columns than this (signals) shows its count in text; --json shows all


def locate(run, source: str, doc_id: str) -> tuple[str, int] | None:
    """(docs shard, row in it) of `doc_id`: from the shards' id indexes (curate/rundir/idindex.py: a footer and one
    row group a shard, the row checked against the docs file), then, in the shards without one (a run made before
    them), from the docs files' `id` column, reading only the row groups whose statistics can hold the id."""
    from curate.rundir.idindex import rows_of

    unindexed = []
    for path in sorted(fs.glob(run.table_glob("docs", source))):
        shard = path.rstrip("/").rsplit("/", 1)[-1][: -len(".parquet")]
        index = run.id_index("ingest", source, shard)
        if not fs.exists(index):
            unindexed.append((shard, path))
            continue
        for row in rows_of(index, doc_id):
            if _id_at(path, row) == doc_id:
                return shard, row
    for shard, path in unindexed:
        if (row := _scan(path, doc_id)) is not None:
            return shard, row
    return None


def _id_at(path: str, row: int) -> str | None:
    """The id of one row of a docs file, reading the `id` column of its row group only."""
    import pyarrow.parquet as pq

    filesystem, stripped = fs.filesystem(path)
    handle = pq.ParquetFile(stripped, filesystem=filesystem)
    first = 0
    for g in range(handle.metadata.num_row_groups):
        rows = handle.metadata.row_group(g).num_rows
        if row < first + rows:
            return handle.read_row_group(g, columns=["id"]).column("id")[row - first].as_py()
        first += rows
    return None


def _scan(path: str, doc_id: str) -> int | None:
    """The row of `doc_id` in a docs file, reading only the row groups whose `id` statistics can hold it."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    filesystem, stripped = fs.filesystem(path)
    handle = pq.ParquetFile(stripped, filesystem=filesystem)
    meta, column = handle.metadata, handle.schema_arrow.get_field_index("id")
    first = 0
    for g in range(meta.num_row_groups):
        stats, rows = meta.row_group(g).column(column).statistics, meta.row_group(g).num_rows
        if stats is None or not stats.has_min_max or stats.min <= doc_id <= stats.max:
            at = pc.index(handle.read_row_group(g, columns=["id"]).column("id"), doc_id).as_py()
            if at >= 0:
                return first + at
        first += rows
    return None


def _rows(path: str, doc_id: str, columns: list[str] | None = None) -> list[dict]:
    """The rows of one table file for `doc_id` (none when the file is absent)."""
    import pyarrow.parquet as pq

    if not fs.exists(path):
        return []
    filesystem, stripped = fs.filesystem(path)
    return pq.read_table(stripped, filesystem=filesystem, filters=[("id", "=", doc_id)], columns=columns).to_pylist()


def steps_of(run) -> list[tuple[str, str, bool]]:
    """(name, use, enabled) of every step in the run's resolved pipeline, in order."""
    import yaml

    resolved = yaml.safe_load(fs.read_bytes(run.pipeline_file)) or {}
    return [(name, (options or {}).get("use", name), (options or {}).get("enabled", True) is not False)
            for name, options in (resolved.get("stages") or {}).items()]


def story(root: str, source: str, doc_id: str) -> dict:
    """Everything the run recorded about one document, as plain data (what `--json` prints)."""
    from curate.rundir import IngestRecord, MixRecord, PackRecord, RunDir

    run = RunDir(root)
    found = locate(run, source, doc_id)
    if found is None:
        sources = run.table_sources("docs")
        hint = f"sources: {', '.join(sources)}" if source not in sources else "curate query RUN \"SELECT id FROM docs\" lists them"
        raise UsageError(f"{root}: no document {doc_id!r} in source {source!r} ({hint})")
    shard, row = found
    ingest = run.find_record("ingest", IngestRecord)
    inputs = {(s["source"], s["shard"]): s["input"] for s in (ingest.shards if ingest else [])}
    out = {"source": source, "id": doc_id, "input": inputs.get((source, shard)), "shard": shard, "row": row,
           "steps": [], "status": "kept", "tokens": []}
    removed, plan = False, None
    for name, use, enabled in steps_of(run):
        step = {"step": name, "use": use, "status": "not reached" if removed else "passed" if enabled else "disabled"}
        if not enabled:
            out["steps"].append(step)
            continue
        for r in _rows(run.ledger(name, source, shard), doc_id, ["stage", "reason", "detail"]):
            step.update(status="removed", reason=r["reason"], detail=r["detail"])
            removed, out["status"] = True, f"removed by {name}"
        evidence = {t["name"]: _rows(run.table(t["path"], source, shard), doc_id) for t in run.tables_of(name)}
        if evidence := {k: [p for p in map(_plain, v) if any(x is not None for x in p.values())] for k, v in evidence.items()}:
            evidence = {k: v for k, v in evidence.items() if v}
        if evidence:
            step["evidence"] = evidence
        if edits := _rows(run.edits(name, source, shard), doc_id):
            step["edits"] = [_plain(e) for e in edits]
            step["status"] = "edited" if step["status"] == "passed" else step["status"]
        if cluster := _rows(run.clusters(name, source, shard), doc_id):
            step["cluster"] = _plain(cluster[0])
        if fs.exists(run.quarantine(name, source, shard)) and _rows(run.quarantine(name, source, shard), doc_id, ["id"]):
            step["quarantined"] = True
        if (tokens := _token_row(run, name, source, shard, doc_id, plan)) is not None:
            step["tokens"] = tokens
        if (mix := run.find_record(name, MixRecord)) is not None:
            plan = mix.plan
            step["plan"] = {k: v for k, v in (mix.plan.get("sources") or {}).get(source, {}).items()
                            if k in ("weight", "epochs", "share")}
        if (pack := run.find_record(name, PackRecord)) is not None and not removed:
            out["tokens"] += where_packed(run, name, pack, source, shard, doc_id)
        out["steps"].append(step)
    return out


def _plain(row: dict) -> dict:
    """A table row without the document's id and source (known) and with JSON-safe values."""
    return {k: (v if isinstance(v, (str, int, float, bool, list, dict, type(None))) else str(v))
            for k, v in row.items() if k not in ("id", "source", "text", "hashes")}


def _token_row(run, step: str, source: str, shard: str, doc_id: str, plan: dict | None) -> dict | None:
    """A tokenize step's count of the document's tokens, and its copies under `plan` (the mix step's before it, as the
    pack step gives them; one without a mix), or None when `step` wrote no token documents."""
    import pyarrow as pa

    from curate.rundir.views import tokenize_steps
    from curate.tokens.mixture import doc_copies

    if step not in tokenize_steps(run):
        return None
    rows = _rows(run.token_docs(step, source, shard), doc_id, ["tokens"])
    if not rows:
        return None
    copies = int(doc_copies(run, plan, source, shard, pa.array([doc_id]))[0]) if plan is not None else 1
    return {"tokens": len(rows[0]["tokens"]), "copies": copies}


def where_packed(run, step: str, pack, source: str, shard: str, doc_id: str) -> list[dict]:
    """The document's chunks in each format's map of `step`'s output of `source`, read from that shard's rows only."""
    from curate.tokens.docmap import shard_rows
    from curate.tokens.formats import get

    found = []
    for name in pack.formats:
        suffix = get(name).map_suffix
        path = run.token_prefix(step, source) + suffix if suffix else ""
        if path and fs.exists(path):
            prefix = f"{step}/{source}"
            found += [{"prefix": prefix, "format": name, **{k: r[k] for k in ("sequence", "chunk", "offset", "token",
                                                                               "length", "doc_offset", "copy")}}
                      for r in shard_rows(path, shard, doc_id)]
    return found


def render(s: dict, run: str = "RUN") -> str:
    where = f"{s['input']} (docs shard {s['shard']}, row {s['row']})" if s["input"] else f"docs shard {s['shard']}, row {s['row']}"
    lines = [f"{s['source']} {s['id']}: {s['status']}", f"  from {where}"]
    quiet: dict = {}   # steps with nothing to say, one line per status
    for step in s["steps"]:
        if set(step) == {"step", "use", "status"}:
            quiet.setdefault(step["status"], []).append(step["step"])
            continue
        lines += [f"  {status}: {', '.join(names)}" for status, names in quiet.items()]
        quiet = {}
        head = f"  {step['step']} ({step['use']}): {step['status']}"
        if step["status"] == "removed":
            head += f": {step['reason']}" + (f" ({step['detail']})" if step.get("detail") else "")
        if "tokens" in step:
            head += f": {step['tokens']['tokens']} tokens x {step['tokens']['copies']} copies"
        if "plan" in step:
            head += f": source weight {step['plan'].get('weight')}, epochs {_num(step['plan'].get('epochs'))}"
        lines.append(head)
        for table, rows in step.get("evidence", {}).items():
            for r in rows:
                shown = ", ".join(f"{k}={_short(v)}" for k, v in r.items() if v is not None) if len(r) <= TEXT_COLUMNS \
                    else f"{len(r)} values (--json shows them)"
                lines.append(f"      {table}: {shown}")
        for e in step.get("edits", []):
            lines.append(f"      replaced {e.get('kind')} at {e.get('start')}-{e.get('end')} with {e.get('placeholder')!r}")
        if c := step.get("cluster"):
            lines.append(f"      cluster {c.get('cluster')}: kept {c.get('rep_id')} ({c.get('rep_source')}), "
                         f"similarity {_num(c.get('similarity'))} ({c.get('method')})")
        if step.get("quarantined"):
            lines.append(f"      set aside whole in quarantine/{step['step']}/")
    lines += [f"  {status}: {', '.join(names)}" for status, names in quiet.items()]
    by_prefix: dict = {}
    for t in s["tokens"]:
        by_prefix.setdefault((t["prefix"], t["format"]), []).append(t)
    for (prefix, name), chunks in by_prefix.items():
        shown = "; ".join(f"sequence {c['sequence']} tokens {c['offset']}-{c['offset'] + c['length']}"
                          f" (doc tokens {c['doc_offset']}-{c['doc_offset'] + c['length']}"
                          + (f", copy {c['copy']}" if c["copy"] else "") + ")" for c in chunks[:6])
        more = f"; {len(chunks) - 6} more" if len(chunks) > 6 else ""
        lines.append(f"  tokens in {prefix} ({name}): {shown}{more}")
        lines.append(f"      curate trace {shlex.quote(run)} {prefix} --sequence {chunks[0]['sequence']}"
                     + (" --format datatrove" if name != "megatron" else ""))
    return "\n".join(lines)


def _num(v):
    return f"{v:.4g}" if isinstance(v, float) else v


def _short(v, chars: int = 80):
    """A value for one line: floats to 4 digits, text cut to `chars` and quoted."""
    if isinstance(v, str):
        return json.dumps(v if len(v) <= chars else v[:chars] + "...", ensure_ascii=False)
    return _num(v)


def command(source: str, doc_id: str, run: str = "RUN") -> str:
    """The command that tells a document's story (the report shows it beside each example)."""
    return f"curate why {shlex.quote(run)} {shlex.quote(source)} {shlex.quote(doc_id)}"


def add_parser(sub):
    import argparse

    w = sub.add_parser("why", help="one document's story: where it came from, each step's decision and evidence, its tokens",
                       description="Tell one document's story from the run directory alone: its input file and record, each\n"
                                   "step it passed or that removed it with that step's evidence, its mix copies and, if kept,\n"
                                   "where its tokens are in every packed output.",
                       epilog="examples:\n  curate why runs/zyda2 dclm '<urn:uuid:0f2daf13-...>'\n"
                              "  curate why runs/zyda2 fwe fwe/CC-MAIN-2024-10/000_00000.parquet/17 --json",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    w.add_argument("run", help="run directory")
    w.add_argument("source", help="the document's source (as the pipeline names it)")
    w.add_argument("id", help="the document's id (curate query's `id` column)")
    w.add_argument("--json", action="store_true", help="JSON for tools")
    w.set_defaults(answer=answer)
    return w


def answer(args) -> str:
    root = args.run if "://" in args.run else os.path.abspath(args.run)
    s = story(root, args.source, args.id)
    return json.dumps(s, indent=1, default=str) if args.json else render(s, args.run)
