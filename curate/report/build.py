"""`write_report`: gather every section's data from a run, render the page, write one HTML file."""

from __future__ import annotations

import datetime as dt
import logging
from html import escape

from curate.errors import CurateError
from curate.io import fs
from curate.report import (classify, decontam, dedup, dualuse, examples, funnel, languages, mixture, page, pii, removals, sections,
                           signals, timing)
from curate.report.context import RunView, open_run
from curate.report.palette import source_colors

log = logging.getLogger("curate")


def gather(run: RunView) -> dict:
    """Every section's data: small dicts and arrays, all read from the run."""
    return {
        "documents": funnel.documents(run),
        "tokens": funnel.tokens(run),
        "removals": removals.by_reason(run),
        "bad_records": removals.bad_records(run),
        "signals": signals.distributions(run),
        "dedup": dedup.dedup(run),
        "classify": classify.classifiers(run),
        "dual_use": dualuse.dual_uses(run),
        "decontaminate": decontam.gather(run),
        "pii": pii.pii_steps(run),
        "plan": mixture.plan(run),
        "packing": mixture.packing(run),
        "timing": timing.timing(run),
        "examples": examples.removal_examples(run),
        "clusters": [c for stage in run.stages_of(*dedup.DEDUP_KINDS) if stage in run.stage_order
                     for c in examples.cross_source_clusters(run, stage)],
        "languages": languages.language_mix(run),
    }


def render(run: RunView, data: dict) -> str:
    colors = source_colors(run.sources)

    def pending(*kinds: str) -> list[str]:
        return [s for s in run.stages_of(*kinds) if s not in run.stage_order]

    parts = [
        ("overview", "Overview", sections.overview(run, data["documents"], data["timing"], data["removals"], colors)),
        ("funnel", "Funnel", sections.funnel(data["documents"], data["tokens"], colors)),
        ("removals", "Removals", sections.removals(data["removals"], data["bad_records"], run.sources, colors)),
        ("examples", "Removed documents", examples.removal_section(data["examples"], colors)),
        ("signals", "Quality signals", sections.signals(data["signals"])),
        ("languages", "Languages", languages.section(data["languages"])),
        ("dedup", "Deduplication", sections.dedup(data["dedup"], pending("dedup", "exact_dedup"))),
        ("clusters", "Duplicates across sources", examples.clusters_section(data["clusters"], colors)),
        ("classify", "Classifiers", sections.classifiers(data["classify"], pending("classify"))),
        ("dual-use", "Dual-use", sections.dual_use(data["dual_use"], colors, pending("dual_use"))),
        ("decontamination", "Decontamination", decontam.section(data["decontaminate"], colors)),
        ("pii", "PII", pii.section(data["pii"], colors)),
        ("mixture", "Mixture & packing", sections.mixture(data["plan"], data["packing"], colors)),
        ("performance", "Performance", sections.performance(data["timing"])),
    ]
    parts = [p for p in parts if p[2]]
    manifest = run.manifest or {}
    meta = [f"run <code>{escape(run.root)}</code>"]
    if run.pipeline_file:
        meta.append(f"recipe <code>{escape(run.pipeline_file)}</code>")
    if run.pipeline_hash:
        meta.append(f"pipeline hash <code>{escape(run.pipeline_hash[:12])}</code>")
    if manifest.get("created_at"):
        meta.append(f"manifest {escape(manifest['created_at'])} by {escape(str(manifest.get('created_by', '')))}")
    meta.append(f"report {dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M UTC')}")
    meta.append("sources: " + " ".join(f'<span class="swatch" style="background:{c}"></span>{escape(s)}' for s, c in colors.items()))
    title = f"curate report: {run.pipeline.get('name') or 'run'}"
    return page.render(title, " · ".join(meta), parts)


def write_report(run: str, out: str | None = None) -> str:
    """Write the HTML report of run directory `run` (local or fsspec) to `out` (default `RUN/report.html`);
    returns the path written."""
    view = open_run(run)
    html = render(view, gather(view))
    target = out or view.path("report.html")
    try:
        fs.write_bytes(target, html.encode("utf-8"))
    except OSError as exc:  # a read-only run (an archive, another user's): say where else it can go
        raise CurateError(f"cannot write the report to {target}: {exc.strerror or exc}"
                          + ("" if out else "; give --out FILE to write it elsewhere")) from None
    return target
