"""`curate report RUN`: one self-contained HTML page (inline SVG, no script, no network) that shows a run
to the person who decides about the data: the funnel per source in documents and tokens, removals by
stage and reason, quality signals of kept against removed documents with the recipe's thresholds,
duplicate clusters and which source gave way to which, classifier scores, the dual-use funnel, the
mixture plan against tokens written, packing, and time per stage.

Every number comes from the run's files (summary, ledger, tables, records, markers, token indexes);
large tables are sampled (and the captions say how), missing pieces are left out with a note.
"""

from curate.report.build import gather, render, write_report
from curate.report.context import RunView, open_run

__all__ = ["write_report", "gather", "render", "open_run", "RunView"]
