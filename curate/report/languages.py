"""The language mix (the signals step's fastText `lang`) of the documents kept and of those removed.

Documents with signals are those that reached the signals step; each is counted as kept (in kept/ at the
end), removed by a quality step after it (filter, classify, dual_use) or down-sampled by the mix. Read from
whole shards spread over the run (at most `BUDGET` rows per source) and scaled to each source's size.
"""

from __future__ import annotations

from curate.report import page, svg
from curate.report.section import Section
from curate.report.context import RunView, files_sql
from curate.report.palette import ESTIMATE, KEPT, REMOVED
from curate.report.sampling import pick_shards, shard_files
from curate.report.svg import Series

BUDGET = 200_000
TOP = 10
GROUPS = ("kept", "removed", "downsampled")
QUALITY_KINDS = ("filter", "classify", "dual_use")


def language_mix(run: RunView) -> dict | None:
    """{"languages": [...], "counts": {group: [documents per language]}, "sampled": bool} or None without `lang`."""
    signals_steps = run.stages_of("signals")
    if not signals_steps or not run.glob("signals", "*", "*.parquet"):
        return None
    after = run.after(signals_steps[0])
    quality = [s for s in after if run.kind(s) in QUALITY_KINDS]
    mixing = [s for s in after if run.kind(s) == "mix"]
    totals: dict[str, dict[str, float]] = {}
    sampled = False
    for source in run.sources:
        sample = pick_shards(run, "signals", source, BUDGET)
        if sample is None:
            continue
        files = shard_files(run, ("signals",), sample)
        if "lang" not in run.columns_of(files[0]):
            return None
        sampled |= not sample.complete
        gone = " UNION ALL ".join(f"SELECT id, '{grp}' AS grp FROM read_parquet({files_sql(group)}, union_by_name=true)" for grp, steps in
                                  (("removed", quality), ("downsampled", mixing))
                                  if (group := [f for s in steps for f in shard_files(run, ("ledger", s), sample)])
                                  ) or "SELECT NULL AS id, NULL AS grp WHERE false"   # one scan per group, not per file
        rows = run.sql(f"""
            SELECT coalesce(s.lang, 'unknown'), coalesce(g.grp, 'kept'), count(*)
            FROM read_parquet({files_sql(files)}) s LEFT JOIN ({gone}) g USING (id) GROUP BY ALL""")
        scale = (run.rows("signals").get(source, {}).get("in") or sample.rows) / max(sample.rows, 1)
        for lang, grp, n in rows:
            totals.setdefault(lang, dict.fromkeys(GROUPS, 0.0))[grp] += n * scale
    if not totals:
        return None
    ranked = sorted(totals, key=lambda lang: (-sum(totals[lang].values()), lang))
    shown, rest = ranked[:TOP], ranked[TOP:]
    counts = {g: [round(totals[lang][g]) for lang in shown] for g in GROUPS}
    if rest:
        shown = shown + [f"other ({len(rest)})"]
        for g in GROUPS:
            counts[g].append(round(sum(totals[lang][g] for lang in rest)))
    return {"languages": shown, "counts": counts, "sampled": sampled}


def section(data: dict | None) -> str:
    if data is None:
        return ""
    langs, counts = data["languages"], data["counts"]
    series = [Series("kept", KEPT, counts["kept"]), Series("removed by a quality step", REMOVED, counts["removed"])]
    if any(counts["downsampled"]):
        series.append(Series("down-sampled by the mix", ESTIMATE, counts["downsampled"]))
    chart = svg.bars(langs, series, value_label="documents", stacked=True, label="language mix kept and removed")
    total = {g: sum(v) for g, v in counts.items()}
    rows = [[lang] + [f"{counts[g][i]:,}" for g in GROUPS] + [f"{100 * counts['kept'][i] / (total['kept'] or 1):.1f}%",
                                                                f"{100 * counts['removed'][i] / (total['removed'] or 1):.1f}%"]
            for i, lang in enumerate(langs)]
    table = page.table(["language", "kept", "removed", "down-sampled", "share of kept", "share of removed"], rows, {1, 2, 3, 4, 5})
    caption = ("Documents that reached the signals step, by the language fastText's lid.176 found, split by what became of "
               "them." + (" Estimated from shards spread over the run, scaled to each source's size." if data["sampled"] else ""))
    return page.section("languages", "Languages", "The language mix of what was kept and of what was removed.",
                        '<div class="grid">' + page.figure("Languages kept and removed", chart, caption) + "</div>" + table)


SECTION = Section("languages", "Languages", language_mix, lambda run, data, colors: section(data))
