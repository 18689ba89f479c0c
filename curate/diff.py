"""`curate diff RUN_A RUN_B`: what differs between two runs of the same inputs, and why.

- decisions: per step and reason, the documents whose fate changed (kept to removed, removed to kept, removed by
  another step), with examples carrying both runs' evidence (the ledger's detail); apart from them, documents the same
  step removed in both runs under a reason that reads differently (`restated`: a filter's rule text with its new
  threshold, a dedup's kept twin from another source), and documents in the docs of only one run (the inputs differ)
- the resolved pipelines, key by key, leaving out where a run ran (`WHERE_IT_RAN`: its output path, workers, ...)
- the resume fingerprints' named parts, per step and source (what each step's results were computed from)
- the code versions the manifests recorded, and the tokens each pack step wrote per source

Two runs that differ only in where they ran (inline or Ray, worker count, output path) diff as identical. The decisions
are one DuckDB join over the two ledgers and docs tables (ids only), so it scales with the run like `curate query`.
"""

from __future__ import annotations

import json
import os

from curate.io import fs

WHERE_IT_RAN = ("output", "execution.workers", "execution.shared_fs", "execution.env", "execution.task_memory_mb",
                "execution.retries")
"""Keys of the resolved pipeline that say where and how a run ran, never what it computes."""
EXAMPLES = 3   # documents shown per change


def _flat(value, prefix: str = "") -> dict:
    if isinstance(value, dict) and value:
        return {k: v for key, sub in value.items() for k, v in _flat(sub, f"{prefix}{key}.").items()}
    return {prefix[:-1]: value}


def _resolved(run) -> dict:
    import yaml

    return yaml.safe_load(fs.read_bytes(run.pipeline_file)) or {}


def pipeline_changes(a, b) -> list[dict]:
    fa, fb = _flat(_resolved(a)), _flat(_resolved(b))
    return [{"key": k, "a": fa.get(k), "b": fb.get(k)} for k in sorted(set(fa) | set(fb))
            if fa.get(k) != fb.get(k) and not any(k == w or k.startswith(w + ".") for w in WHERE_IT_RAN)]


def fingerprint_changes(a, b) -> list[dict]:
    """Named parts of the resume fingerprints that differ, per step and source."""
    out = []
    steps = sorted({p.rstrip("/").rsplit("/", 2)[-2] for r in (a, b) for p in fs.glob(r.path("_state", "*", "stage.json"))})
    for step in steps:
        sa = ((a.read_json(a.stage_file(step)) or {}).get("sources") or {})
        sb = ((b.read_json(b.stage_file(step)) or {}).get("sources") or {})
        for source in sorted(set(sa) | set(sb)):
            pa_, pb_ = (sa.get(source) or {}).get("parts") or {}, (sb.get(source) or {}).get("parts") or {}
            parts = sorted(k for k in set(pa_) | set(pb_) if pa_.get(k) != pb_.get(k))
            if parts:
                own = [p for p in parts if p != "upstream" and not p.startswith("upstream.")]
                out.append({"step": step, "source": source, "parts": parts, "own": own})
    return out


def version_changes(a, b) -> list[dict]:
    va = (a.read_json(a.manifest_file) or {}).get("versions") or {}
    vb = (b.read_json(b.manifest_file) or {}).get("versions") or {}
    return [{"package": k, "a": va.get(k), "b": vb.get(k)} for k in sorted(set(va) | set(vb)) if va.get(k) != vb.get(k)]


def token_counts(a, b) -> list[dict]:
    """Tokens written per pack step and source in each run (every pair, changed or not)."""
    from curate.rundir import PackRecord

    out = []
    steps = sorted({p.rstrip("/").rsplit("/", 2)[-2] for r in (a, b) for p in fs.glob(r.path("_state", "*", "record.json"))})
    for step in steps:
        ra, rb = a.find_record(step, PackRecord), b.find_record(step, PackRecord)
        if ra is None and rb is None:
            continue
        oa, ob = (ra.outputs if ra else {}), (rb.outputs if rb else {})
        for source in sorted(set(oa) | set(ob)):
            out.append({"step": step, "source": source, "a": (oa.get(source) or {}).get("tokens"),
                        "b": (ob.get(source) or {}).get("tokens")})
    return out


def decision_changes(a, b, examples: int = EXAMPLES) -> tuple[list[dict], dict]:
    """Documents whose decision changed, grouped by (change, step and reason in each run), with examples; and the
    counts of documents in the docs of only one run."""
    from curate.sql import connect, quote, read_parquet

    con = connect(threads=None, readable=(a.root, b.root))

    def ledger(run) -> str:
        files = fs.glob(run.ledger_glob())
        if not files:
            return "(SELECT NULL::VARCHAR AS source, NULL::VARCHAR AS id, NULL::VARCHAR AS stage, NULL::VARCHAR AS reason, " \
                   "NULL::VARCHAR AS detail WHERE false)"
        return f"(SELECT source, id, first(stage) AS stage, first(reason) AS reason, first(detail) AS detail " \
               f"FROM {read_parquet(con, run.ledger_glob())} GROUP BY source, id)"

    def docs(run) -> str:
        parts = [f"SELECT {quote(s)} AS source, id FROM {read_parquet(con, run.table_glob('docs', s))}"
                 for s in run.table_sources("docs")]
        return "(" + (" UNION ALL ".join(parts) or "SELECT NULL::VARCHAR AS source, NULL::VARCHAR AS id WHERE false") + ")"

    con.execute(f"CREATE TEMP TABLE la AS SELECT * FROM {ledger(a)}")
    con.execute(f"CREATE TEMP TABLE lb AS SELECT * FROM {ledger(b)}")
    con.execute(f"CREATE TEMP TABLE da AS SELECT * FROM {docs(a)}")
    con.execute(f"CREATE TEMP TABLE db AS SELECT * FROM {docs(b)}")
    only = {"a": con.sql("SELECT count(*) FROM da ANTI JOIN db USING (source, id)").fetchall()[0][0],
            "b": con.sql("SELECT count(*) FROM db ANTI JOIN da USING (source, id)").fetchall()[0][0]}
    rows = con.sql("""
        WITH both_docs AS (SELECT source, id FROM da SEMI JOIN db USING (source, id)),
        moved AS (
            SELECT d.source, d.id, la.stage AS a_stage, la.reason AS a_reason, la.detail AS a_detail,
                   lb.stage AS b_stage, lb.reason AS b_reason, lb.detail AS b_detail
            FROM both_docs d LEFT JOIN la USING (source, id) LEFT JOIN lb USING (source, id)
            WHERE la.reason IS DISTINCT FROM lb.reason OR la.stage IS DISTINCT FROM lb.stage),
        ranked AS (SELECT *, row_number() OVER (PARTITION BY a_stage, a_reason, b_stage, b_reason ORDER BY source, id) AS n,
                          count(*) OVER (PARTITION BY a_stage, a_reason, b_stage, b_reason) AS total FROM moved)
        SELECT * FROM ranked WHERE n <= ? ORDER BY total DESC, a_stage NULLS FIRST, a_reason, b_stage, b_reason, n
    """, params=[examples]).fetchall()
    groups: dict = {}
    for source, doc, a_stage, a_reason, a_detail, b_stage, b_reason, b_detail, _, total in rows:
        change = "kept -> removed" if a_stage is None else "removed -> kept" if b_stage is None else \
            "step changed" if a_stage != b_stage else "reason restated"
        key = (change, a_stage, a_reason, b_stage, b_reason)
        group = groups.setdefault(key, {"change": change, "a": {"step": a_stage, "reason": a_reason},
                                        "b": {"step": b_stage, "reason": b_reason}, "count": total, "examples": []})
        group["examples"].append({"source": source, "id": doc, "a": a_detail, "b": b_detail})
    con.close()
    return list(groups.values()), only


def _moved(groups: list[dict]) -> list[dict]:
    return [g for g in groups if g["change"] != "reason restated"]


def diff(root_a: str, root_b: str, examples: int = EXAMPLES) -> dict:
    from curate.rundir import RunDir

    a, b = RunDir(root_a), RunDir(root_b)
    groups, only = decision_changes(a, b, examples)
    decisions, restated = _moved(groups), [g for g in groups if g["change"] == "reason restated"]
    tokens = token_counts(a, b)
    pipeline = pipeline_changes(a, b)
    fingerprints = fingerprint_changes(a, b)
    if not pipeline:   # the part that is the resolved pipeline whole (its output path too), compared key by key above
        fingerprints = [f for f in fingerprints if [p for p in f["parts"] if p != "pipeline.resolved"]]
    out = {"a": root_a, "b": root_b, "decisions": decisions, "restated": restated, "documents_only_in": only,
           "pipeline": pipeline, "fingerprints": fingerprints,
           "versions": version_changes(a, b), "tokens": tokens}
    out["identical"] = not (decisions or restated or only["a"] or only["b"] or out["pipeline"] or out["fingerprints"] or out["versions"]
                            or any(t["a"] != t["b"] for t in tokens))
    return out


def render(d: dict) -> str:
    if d["identical"]:
        return f"{d['a']} and {d['b']}: identical (same decisions, pipeline, fingerprints, versions and tokens)"
    lines = [f"{d['a']} (a) -> {d['b']} (b)"]
    moved = sum(g["count"] for g in d["decisions"])
    lines.append(f"decisions: {moved:,} document{'s' if moved != 1 else ''} changed")
    for g in d["decisions"]:
        what = {"kept -> removed": f"removed by {g['b']['step']} ({g['b']['reason']})",
                "removed -> kept": f"kept (was removed by {g['a']['step']}: {g['a']['reason']})"}.get(
            g["change"], f"{g['a']['step']} ({g['a']['reason']}) -> {g['b']['step']} ({g['b']['reason']})")
        lines.append(f"  {g['count']:,} {g['change']}: {what}")
        for e in g["examples"]:
            lines.append(f"      {e['source']} {e['id']}" + (f"\n        a: {e['a']}" if e["a"] else "")
                         + (f"\n        b: {e['b']}" if e["b"] else ""))
    for g in d["restated"]:
        lines.append(f"  {g['count']:,} removed by {g['a']['step']} in both, the reason restated: "
                     f"{g['a']['reason']} -> {g['b']['reason']}")
    for side in ("a", "b"):
        if d["documents_only_in"][side]:
            lines.append(f"  {d['documents_only_in'][side]:,} documents only in {side}'s docs (the inputs differ)")
    if d["pipeline"]:
        lines.append("pipeline:")
        lines += [f"  {c['key']}: {json.dumps(c['a'])} -> {json.dumps(c['b'])}" for c in d["pipeline"]]
    if d["fingerprints"]:
        lines.append("fingerprints (what each step's results were computed from):")
        lines += [f"  {f['step']} {f['source']}: {', '.join(f['own'])}" for f in d["fingerprints"] if f["own"]]
        if through := sorted({f["step"] for f in d["fingerprints"] if not f["own"]}):
            lines.append(f"  only through the steps before them: {', '.join(through)}")
    if d["versions"]:
        lines.append("versions:")
        lines += [f"  {v['package']}: {v['a']} -> {v['b']}" for v in d["versions"]]
    changed = [t for t in d["tokens"] if t["a"] != t["b"]]
    if changed:
        lines.append("tokens:")
        lines += [f"  {t['step']}/{t['source']}: {_n(t['a'])} -> {_n(t['b'])}" for t in changed]
    return "\n".join(lines)


def _n(v) -> str:
    return "-" if v is None else f"{v:,}"


def add_parser(sub):
    import argparse

    d = sub.add_parser("diff", help="compare two runs: decisions changed, pipeline, fingerprints, versions, tokens",
                       description="Compare two runs of the same inputs: per step and reason, the documents whose decision\n"
                                   "changed (with examples and both runs' evidence), the resolved pipelines, the fingerprints'\n"
                                   "named parts, the code versions and the tokens per source. Where a run ran (inline or Ray,\n"
                                   "workers, output path) is no difference. Exit 0 either way; --json says \"identical\".",
                       epilog="examples:\n  curate diff runs/zyda2 runs/zyda2-strict\n  curate diff runs/a runs/b --json",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    d.add_argument("run", help="run directory a")
    d.add_argument("other", help="run directory b")
    d.add_argument("--examples", type=int, default=EXAMPLES, metavar="N", help=f"documents shown per change (default {EXAMPLES})")
    d.add_argument("--json", action="store_true", help="JSON for CI")
    d.set_defaults(answer=answer)
    return d


def answer(args) -> str:
    absolute = [r if "://" in r else os.path.abspath(r) for r in (args.run, args.other)]
    d = diff(*absolute, examples=args.examples)
    d["a"], d["b"] = args.run, args.other
    return json.dumps(d, indent=1, default=str) if args.json else render(d)
