"""`curate report RUN`: one self-contained HTML page (inline SVG, no script, no network) that shows a run
to the person who decides about the data: the funnel per source in documents and tokens, removals by
stage and reason, quality signals of kept against removed documents with the recipe's thresholds,
duplicate clusters and which source gave way to which, classifier scores, the dual-use funnel, the
mixture plan against tokens written, packing, and time per stage.

Every number comes from the run's files (summary, ledger, tables, records, markers, token indexes);
large tables are sampled (and the captions say how), missing pieces are left out with a note.
"""

import importlib

__all__ = ["write_report", "gather", "render", "open_run", "RunView"]
_HOME = {"write_report": "build", "gather": "build", "render": "build", "open_run": "context", "RunView": "context"}


def __getattr__(name: str):
    """Loaded on first use, so that `curate run`'s argument parser (which registers `curate report`) imports
    no report code: `build` pulls in every section and DuckDB (~0.3 s of every run's start)."""
    if name in _HOME:
        return getattr(importlib.import_module(f"curate.report.{_HOME[name]}"), name)
    raise AttributeError(f"module 'curate.report' has no attribute {name!r}")
