"""`write_report`: gather every section's data from a run, render the page, write one HTML file.

The sections of the run as a whole are named here; a stage's own sections are named by the stage
(`Facets.REPORT`, see `curate/stages/facets.py`), so no stage kind is named here."""

from __future__ import annotations

import datetime as dt
import importlib
import logging
from html import escape

from curate.errors import CurateError
from curate.io import fs
from curate.report import examples, funnel, page, removals, sections, timing
from curate.report.context import RunView, open_run
from curate.report.palette import source_colors
from curate.report.section import Section
from curate.stages import STAGES

log = logging.getLogger("curate")


def stage_sections(run: RunView) -> list[Section]:
    """The sections the run's steps name (`Facets.REPORT`), each once, where the first step naming it stands."""
    out: dict[str, Section] = {}
    for _, kind in run.steps:
        if kind not in STAGES:   # a step whose stage this process does not know (a plugin not imported)
            continue
        for ref in STAGES[kind].FACETS.REPORT:
            if ref not in out:
                module, name = ref.split(":")
                out[ref] = getattr(importlib.import_module(module), name)
    return list(out.values())


def gather(run: RunView) -> dict:
    """Every section's data: small dicts and arrays, all read from the run."""
    data = {
        "documents": funnel.documents(run),
        "tokens": funnel.tokens(run),
        "removals": removals.by_reason(run),
        "bad_records": removals.bad_records(run),
        "timing": timing.timing(run),
        "examples": examples.removal_examples(run),
    }
    for section in stage_sections(run):
        data[section.anchor] = section.gather(run)
    return data


def render(run: RunView, data: dict) -> str:
    colors = source_colors(run.sources)
    parts = [
        ("overview", "Overview", sections.overview(run, data["documents"], data["timing"], data["removals"], colors)),
        ("funnel", "Funnel", sections.funnel(data["documents"], data["tokens"], colors)),
        ("removals", "Removals", sections.removals(data["removals"], data["bad_records"], run.sources, colors)),
        ("examples", "Removed documents", examples.removal_section(data["examples"], colors)),
        *((s.anchor, s.title, s.render(run, data[s.anchor], colors)) for s in stage_sections(run) if s.anchor in data),
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
