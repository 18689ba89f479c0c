"""What a substring_dedup step shows beyond its files (curate/stages/substring_dedup.py): text cut per source in the
summary and summary.json, on top of what every editing step shows."""

from __future__ import annotations

from curate.rundir import EditsRecord
from curate.stages.edit import EditFacets, edit_counts, removal_lines
from curate.stages.facets import Kernel

KERNELS = (Kernel("the substring-dedup word, window and cut kernels", "curate.substring.kernels:warm",
                  ("curate.substring.kernels:words", "curate.substring.kernels:fingerprints",
                   "curate.substring.kernels:windows", "curate.substring.kernels:cuts")),)


def text_counts(markers: list[dict]) -> dict[str, dict]:
    """Per source: characters in, cut, in removed documents, and documents edited and removed (from the markers)."""
    out: dict[str, dict] = {}
    for m in markers:
        row = out.setdefault(m["source"], {"in": 0, "edited": 0, "removed": 0, "chars": 0, "chars_cut": 0, "chars_removed": 0})
        row["in"] += m["in"]
        row["edited"] += m.get("edited", 0)
        row["removed"] += sum(m.get("removed", {}).values())
        for key in ("chars", "chars_cut", "chars_removed"):
            row[key] += m.get(key, 0)
    return out


class SubstringFacets(EditFacets):
    REPORT = ("curate.report.substring_dedup:SECTION",)
    KERNELS = KERNELS

    @classmethod
    def lines(cls, run, step, rows, order):
        """`substring_dedup: cut 8.1% of the text (...) in 345 of 4,000 documents`, then one line per source."""
        if run.find_record(step, EditsRecord) is None:
            return []
        counts = text_counts(run.markers(step))
        total = {k: sum(c[k] for c in counts.values()) for k in ("in", "edited", "chars", "chars_cut", "chars_removed")}
        lines = [f"{step}: cut {_share(total['chars_cut'] + total['chars_removed'], total['chars'])} of the text "
                 f"({total['chars_cut'] + total['chars_removed']:,} of {total['chars']:,} characters) in {total['edited']:,} "
                 f"of {total['in']:,} documents"]
        for source in sorted(counts, key=lambda s: (order.index(s) if s in order else len(order), s)):
            c = counts[source]
            lines.append(f"  {source:10} cut {_share(c['chars_cut'] + c['chars_removed'], c['chars'])}  "
                         f"edited {c['edited']:,} of {c['in']:,}" + (f"  removed {c['removed']:,}" if c["removed"] else ""))
        return lines + removal_lines(step, edit_counts(run.markers(step)))

    @classmethod
    def flags(cls, run, step, sources):
        if run.find_record(step, EditsRecord) is None:
            return {}
        return {s: {"substring_dedup": {"documents": c["edited"], "removed": c["removed"], "chars": c["chars"],
                                        "chars_cut": c["chars_cut"], "chars_removed": c["chars_removed"]}}
                for s, c in text_counts(run.markers(step)).items()}


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.1%}" if whole else "0.0%"
