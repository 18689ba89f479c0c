"""Documents, not counts: a few example documents of every removal reason, and duplicate clusters that span
sources shown side by side.

Examples are read from the ledger (spread over its files, picked by a hash of the id so they are the same on
every report of the run) and their text from the docs shard of the same name (the ledger, clusters and docs
tables of a stage share shard names). A bad record never became a document: its example is the ledger
detail alone (file and line). Snippets are the first `SNIPPET` characters, whitespace collapsed. Every example
document shows the `curate why` command that tells its whole story (curate/why.py).
"""

from __future__ import annotations

from html import escape

from curate.rundir.edits import apply_spans, read_spans
from curate.report import page
from curate.report.section import Section
from curate.report.context import RunView, files_sql
from curate.report.sampling import shard_name, spread
from curate.why import command

PER_REASON = 3
MAX_FILES = 400      # ledger or cluster files read per stage (spread over the run)
SNIPPET = 320
CLUSTERS = 2
MEMBERS = 4          # documents shown per cluster


def _texts(run: RunView, wanted: dict[tuple[str, str], set[str]]) -> dict[tuple[str, str], str]:
    """(source, id) -> text for ids grouped by (source, docs shard)."""
    out = {}
    for (source, shard), ids in wanted.items():
        path = run.dir.docs(source, shard)
        if not run.exists("docs", source, f"{shard}.parquet"):
            continue
        rows = dict(run.sql(f"SELECT id, text FROM read_parquet({files_sql([path])}) WHERE id IN (SELECT unnest(?))", [sorted(ids)]))
        for step in run.stages_of("pii"):   # the text as later steps saw it: a pii step's spans, never the originals
            spans = read_spans(run.dir, step, source, shard)
            rows = {i: apply_spans(text, spans[i]) if i in spans else text for i, text in rows.items()}
        out.update({(source, i): text for i, text in rows.items()})
    return out


def snippet(text: str | None, chars: int = SNIPPET) -> str:
    if text is None:
        return ""
    flat = " ".join(text.split())
    return flat if len(flat) <= chars else flat[:chars].rstrip() + " …"


def removal_examples(run: RunView) -> list[dict]:
    """Per (stage, reason) that removed something, in run order: up to PER_REASON documents
    {source, id, detail, snippet}."""
    reasons = [(stage, reason) for stage in run.stage_order for row in run.rows(stage).values() for reason in row["removed"]]
    reasons = list(dict.fromkeys(reasons))
    out, picked = [], {}
    for stage in dict.fromkeys(s for s, _ in reasons):
        files = run.glob("ledger", stage, "*", "*.parquet")
        files = [files[i] for i in sorted(spread(len(files))[:MAX_FILES])]
        if not files:
            continue
        rows = run.sql(f"""
            SELECT reason, source, id, detail, filename FROM (
                SELECT *, row_number() OVER (PARTITION BY reason ORDER BY hash(id), id) AS n
                FROM read_parquet({files_sql(files)}, filename=true)) WHERE n <= {PER_REASON} ORDER BY reason, source, id""")
        for reason, source, i, detail, filename in rows:
            picked.setdefault((stage, reason), []).append({"source": source, "id": i, "detail": detail or "",
                                                          "shard": shard_name(filename)})
    wanted: dict[tuple[str, str], set[str]] = {}
    for (_, reason), docs in picked.items():
        if not reason.startswith("bad_record:"):
            for d in docs:
                wanted.setdefault((d["source"], d["shard"]), set()).add(d["id"])
    texts = _texts(run, wanted)
    for stage, reason in reasons:
        docs = picked.get((stage, reason), [])
        for d in docs:
            d["snippet"] = snippet(texts.get((d["source"], d["id"])))
            if not reason.startswith("bad_record:"):   # a bad record never became a document: no story to tell
                d["why"] = command(d["source"], d["id"], run.root)
        out.append({"stage": stage, "reason": reason, "examples": docs})
    return out


def cross_source_clusters(run: RunView, stage: str) -> list[dict]:
    """Up to CLUSTERS duplicate clusters of a dedup step that span sources, each with up to MEMBERS documents
    {source, id, kept, snippet}, the kept copy first."""
    files = run.glob(stage, "clusters", "*", "*.parquet")
    files = [files[i] for i in sorted(spread(len(files))[:MAX_FILES])]
    if not files:
        return []
    scan = f"read_parquet({files_sql(files)}, filename=true, union_by_name=true)"
    chosen = [c for (c,) in run.sql(f"""
        SELECT cluster FROM {scan} GROUP BY cluster HAVING count(DISTINCT source) > 1
        ORDER BY count(DISTINCT source) DESC, hash(cluster) LIMIT {CLUSTERS}""")]
    if not chosen:
        return []
    rows = run.sql(f"""
        SELECT cluster, source, id, kept, filename FROM (
            SELECT *, row_number() OVER (PARTITION BY cluster ORDER BY kept DESC, source, id) AS n FROM {scan}
            WHERE cluster IN (SELECT unnest(?))) WHERE n <= {MEMBERS} ORDER BY cluster, n""", [chosen])
    wanted: dict[tuple[str, str], set[str]] = {}
    for _, source, i, _, filename in rows:
        wanted.setdefault((source, shard_name(filename)), set()).add(i)
    texts = _texts(run, wanted)
    sizes = dict(run.sql(f"SELECT cluster, count(*) FROM {scan} WHERE cluster IN (SELECT unnest(?)) GROUP BY 1", [chosen]))
    out = []
    for c in chosen:
        members = [{"source": s, "id": i, "kept": bool(k), "snippet": snippet(texts.get((s, i)), 600), "why": command(s, i, run.root)}
                   for cl, s, i, k, _ in rows if cl == c]
        out.append({"stage": stage, "cluster": c, "size": sizes.get(c, len(members)), "members": members})
    return out


# ---- rendering ------------------------------------------------------------------------------------

def _doc(source: str, ident: str, colors: dict, body: str, extra: str = "", reason: str = "", why: str = "") -> str:
    color = colors.get(source, "#7b8794")
    tag = f' data-reason="{escape(reason)}"' if reason else ""
    story = f'<div class="why">its story: <code>{escape(why)}</code></div>' if why else ""
    return (f'<div class="doc"{tag}><div class="doc-head"><span class="swatch" style="background:{color}"></span>'
            f'<b>{escape(source)}</b> <code class="id">{escape(ident)}</code>{extra}</div>{body}{story}</div>')


def removal_section(data: list[dict], colors: dict) -> str:
    """Per reason, its example documents: source, id, the ledger detail and a snippet of the text. Bad records
    (a detail, no text) share one grid, each card naming its kind."""
    if not data:
        return ""
    blocks, bad = [], []
    for r in data:
        docs = []
        is_bad = r["reason"].startswith("bad_record:")
        for d in r["examples"]:
            detail = f'<div class="detail">{escape(d["detail"])}</div>' if d["detail"] else ""
            text = f'<div class="snippet">{escape(d["snippet"])}</div>' if d["snippet"] else ""
            kind = f' <code class="reason">{escape(r["reason"].split(":", 1)[1])}</code>' if is_bad else ""
            docs.append(_doc(d["source"], d["id"], colors, detail + text, kind, f'{r["stage"]}/{r["reason"]}', d.get("why", "")))
        if is_bad:
            bad += docs
            continue
        blocks.append(f'<div class="reason"><h3><code>{escape(r["stage"])}</code> · <code>{escape(r["reason"])}</code></h3>'
                      f'<div class="docs">{"".join(docs)}</div></div>')
    if bad:
        blocks.insert(0, f'<div class="reason"><h3>bad records (<code>bad_record:&lt;kind&gt;</code>): the ledger detail '
                         f'names the file and line</h3><div class="docs">{"".join(bad)}</div></div>')
    return page.section("examples", "Removed documents", "A few documents of every reason that removed something (picked by a "
                        "hash of the id, so every report of the run shows the same ones): source, id, the ledger's detail "
                        "(the values the rule failed on, the kept copy, the file and line) and the start of the text.",
                        "".join(blocks))


def clusters_section(data: list[dict], colors: dict) -> str:
    """Duplicate clusters that span sources, their documents side by side (the kept copy first)."""
    if not data:
        return ""
    blocks = []
    for c in data:
        docs = [_doc(m["source"], m["id"], colors, f'<div class="snippet">{escape(m["snippet"])}</div>',
                     ' <span class="tag kept">kept by dedup</span>' if m["kept"] else ' <span class="tag gone">removed</span>',
                     why=m.get("why", ""))
                for m in c["members"]]
        more = f" ({c['size'] - len(c['members'])} more not shown)" if c["size"] > len(c["members"]) else ""
        blocks.append(f'<h3>{escape(c["stage"])} cluster <code>{escape(str(c["cluster"]))}</code>: {c["size"]} documents{more}</h3>'
                      f'<div class="side">{"".join(docs)}</div>')
    return page.section("clusters", "Duplicates across sources", "Clusters of near-duplicates that span sources, their texts side "
                        "by side: the copy in the best source (priority) is kept, the others are removed as duplicates of it.",
                        "".join(blocks))


def _clusters(run: RunView) -> list[dict]:
    return [c for stage in run.stages_of("dedup", "exact_dedup") if stage in run.stage_order for c in cross_source_clusters(run, stage)]


CLUSTERS_SECTION = Section("clusters", "Duplicates across sources", _clusters, lambda run, data, colors: clusters_section(data, colors))
