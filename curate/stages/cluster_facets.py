"""What the report and summary.json say of a dedup step (dedup, exact_dedup): its sections, each source's share removed
and largest clusters, and its alarms (`curate.rundir.DedupRecord`)."""

from __future__ import annotations

from curate.rundir import DedupRecord
from curate.stages.facets import Facets


class ClusterFacets(Facets):
    """Dedup's sections (clusters, who gave way to whom), and a dedup step's share removed and alarms (its record)."""

    REPORT = ("curate.report.dedup:SECTION", "curate.report.examples:CLUSTERS_SECTION")

    @classmethod
    def lines(cls, run, step, rows, order):
        """Per source: the share removed and the largest clusters; then each alarm."""
        record = run.find_record(step, DedupRecord)
        if record is None:
            return []
        shares = ", ".join(f"{s} {v['share']:.1%}" + (f" (largest clusters {', '.join(map(str, v['largest_clusters']))})"
                                                      if v["largest_clusters"] else "") for s, v in record.sources.items())
        frozen = [] if not record.frozen else [
            f"{step}: frozen {record.frozen['from']}: {record.frozen['found']:,} of its {record.frozen['documents']:,} kept documents "
            f"found; {record.frozen['removed_for_frozen']:,} new documents removed as duplicates of frozen ones"]
        return [f"{step}: removed {shares}"] + frozen + [f"WARNING: {line}" for line in record.alarms]

    @classmethod
    def flags(cls, run, step, sources):
        """`dedup` in summary.json: each source's share removed, largest clusters and alarm."""
        record = run.find_record(step, DedupRecord)
        return {s: {"dedup": {"removed_share": v["share"], "largest_clusters": v["largest_clusters"], "alarm": v["alarm"]}}
                for s, v in (record.sources if record is not None else {}).items()}
