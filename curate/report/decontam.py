"""The decontaminate steps: per eval set, what was indexed, which documents were flagged, and each flagged
document's matched passage side by side with the eval item it matched (from `RUN/<step>/`, the `contamination`
view), plus the near-misses that matched without reaching a threshold. Counts are exact (the whole table and the
step's task markers); examples are the strongest matches (overlap, then longest match, then id)."""

from __future__ import annotations

from html import escape

from curate.report import page
from curate.report.section import Section
from curate.report.context import RunView, files_sql

EXAMPLES = 4   # flagged documents shown per set


def gather(run: RunView) -> list[dict]:
    from curate.decontam.record import DecontaminateRecord

    out = []
    for stage in [s for s in run.stages_of("decontaminate") if s in run.stage_order]:
        record = run.dir.find_record(stage, DecontaminateRecord)
        files = run.glob(stage, "*", "*.parquet")
        per_set, examples = {}, {}
        if files:
            scan = f"read_parquet({files_sql(files)})"
            for name, docs, items, near in run.sql(f"""SELECT set, count(DISTINCT (source, id)) FILTER (WHERE flagged),
                    count(DISTINCT item) FILTER (WHERE flagged), count(*) FILTER (WHERE NOT flagged) FROM {scan} GROUP BY 1"""):
                per_set[name] = {"flagged_docs": docs, "items_hit": items, "near_misses": near}
            for row in run.sql(f"""SELECT set, source, id, item, overlap, grams, item_grams, longest_words, passage, eval_text FROM (
                    SELECT *, row_number() OVER (PARTITION BY set ORDER BY overlap DESC, longest_words DESC, source, id, item) AS n
                    FROM {scan} WHERE flagged) WHERE n <= {EXAMPLES} ORDER BY set, n"""):
                keys = ("source", "id", "item", "overlap", "grams", "item_grams", "longest_words", "passage", "eval_text")
                examples.setdefault(row[0], []).append(dict(zip(keys, row[1:])))
        counts = {}
        for m in run.dir.markers(stage):
            c = counts.setdefault(m["source"], {"in": 0, "matched": 0, "flagged": 0, "removed": 0})
            for k in ("in", "matched", "flagged"):
                c[k] += int(m.get(k) or 0)
            c["removed"] += sum(m.get("removed", {}).values())
        out.append({"stage": stage, "action": run.options(stage).get("action", "remove"), "record": record.to_json() if record else None,
                    "sets": per_set, "examples": examples, "counts": {s: counts[s] for s in run.sources if s in counts}})
    return out


def section(data: list[dict], colors: dict) -> str:
    if not data:
        return ""
    body = []
    for d in data:
        rows = [[page.source_cell(s, colors), f"{c['in']:,}", f"{c['matched']:,}",
                 f"{c['flagged']:,}", f"{c['removed']:,}"] for s, c in d["counts"].items()]
        parts = [f"<h3>Step <code>{escape(d['stage'])}</code> (action <code>{escape(str(d['action']))}</code>)</h3>",
                 page.table(["source", "documents scanned", "matched an item", "flagged", "removed"], rows, {1, 2, 3, 4}, raw=True)]
        record = d["record"] or {"sets": {}, "n": "?", "frequent_grams": 0}
        for name, info in record["sets"].items():
            found = d["sets"].get(name, {"flagged_docs": 0, "items_hit": 0, "near_misses": 0})
            parts.append(f"<h3>Eval set <code>{escape(name)}</code> <span class=\"muted\">{escape(str(info.get('path', '')))}</span></h3>")
            parts.append(page.cards([("items", f"{info['items']:,}"), ("skipped (too short)", f"{info['skipped']:,}"),
                                     (f"{record['n']}-grams and whole short fields", f"{info['grams']:,}"),
                                     ("documents flagged", f"{found['flagged_docs']:,}"), ("items matched", f"{found['items_hit']:,}"),
                                     ("near-misses (matched, not flagged)", f"{found['near_misses']:,}")]))
            for e in d["examples"].get(name, []):
                stats = (f"overlap {e['overlap']:.2f} ({e['grams']}/{e['item_grams']} grams), longest match {e['longest_words']} words")
                left = (f'<div class="doc"><div class="doc-head"><b>training document</b> {escape(e["source"])} '
                        f'<span class="id">{escape(e["id"])}</span></div><div class="detail">{escape(stats)}</div>'
                        f'<div class="snippet">{escape(e["passage"] or "")}</div></div>')
                right = (f'<div class="doc"><div class="doc-head"><b>eval item</b> <code>{escape(name)}</code> '
                         f'<span class="id">{escape(e["item"])}</span></div><div class="snippet">{escape(e["eval_text"] or "")}</div></div>')
                parts.append(f'<div class="side">{left}{right}</div>')
            if not d["examples"].get(name):
                parts.append(page.note(f"No document was flagged for {name}."))
        if record.get("frequent_grams"):
            parts.append(f'<p class="muted">{record["frequent_grams"]:,} grams were found in so many training documents that they count '
                         "only beside a rarer gram (boilerplate, common phrases).</p>")
        body.append("".join(parts))
    return page.section("decontamination", "Benchmark decontamination",
                        "Training documents that hold evaluation text: per eval set, the documents flagged, and for the strongest "
                        "matches the matched passage (left, as written in the document) beside the eval item (right). "
                        "<code>curate query RUN \"SELECT * FROM contamination\"</code> lists every match.", "".join(body))


SECTION = Section("decontamination", "Decontamination", gather, lambda run, data, colors: section(data, colors))
