"""What a dual_use step shows beyond its files (curate/stages/dual_use.py): its funnel lines in the summary, its
classifier and cost in the manifest, and the blocklist kernel to warm before its tasks."""

from __future__ import annotations

import pyarrow as pa

from curate.dualuse import Blocklist
from curate.rundir import DualUseRecord
from curate.stages.facets import WARM_TEXT, Facets, Kernel


def warm_blocklist() -> None:
    Blocklist(["warm-up term", "numbers"]).scan(pa.array([WARM_TEXT, "x"]))


BLOCKLIST = Kernel("the blocklist scan kernel", "curate.stages.dual_use_facets:warm_blocklist", ("curate.dualuse.kernel:scan_kernel",))


class DualUseFacets(Facets):
    REPORT = ("curate.report.dualuse:SECTION",)

    @classmethod
    def lines(cls, run, step, rows, order):
        """Per source: scanned, escalated, flagged, errors, backfilled; the step's share of the run's compute."""
        record = run.find_record(step, DualUseRecord)
        if record is None:
            return []
        costs, funnel = record.costs, {}
        for m in sorted(run.markers(step), key=lambda m: order.index(m["source"]) if m["source"] in order else len(order)):
            counts = funnel.setdefault(m["source"], dict.fromkeys(("scanned", "escalated", "flagged", "errors", "backfilled"), 0))
            for k in counts:
                counts[k] += m.get(k, 0)
        compute = {r["stage"]: r.get("stage_compute_seconds", 0.0) for r in rows}
        share = compute.get(step, 0.0) / (sum(compute.values()) or 1.0)
        lines = [f"{step}: funnel, {share:.1%} of the run's task time (blocklist {costs['scan_seconds']:.1f}s, "
                 f"classifier {costs['classifier_seconds']:.1f}s on {costs['classifier_documents']:,} new docs)"]
        for source, f in funnel.items():
            lines.append(f"  {source:10} scanned {f['scanned']:,}  escalated {f['escalated']:,}  flagged {f['flagged']:,}  "
                         f"errors {f['errors']:,}  backfilled {f['backfilled']:,}")
        if costs.get("model") and costs["model"].get("standin"):
            lines.append(f"NOTE: {step}'s classifier is the sample's stand-in ({costs['model']['path']})")
        return lines

    @classmethod
    def manifest(cls, run, step):
        """Its classifier, with what it cost."""
        record = run.find_record(step, DualUseRecord)
        if record is None or not record.costs["model"]:
            return {}
        docs, seconds = record.costs["classifier_documents"], record.costs["classifier_seconds"]
        per_doc = seconds / docs if docs else 0.0
        return {"models": {step: {"stage": step, **record.costs["model"], "documents": docs, "seconds": seconds,
                                  "device": record.costs["device"], "seconds_per_1000": round(per_doc * 1000, 4),
                                  "hours_per_billion": round(per_doc * 1e9 / 3600, 1)}}}
