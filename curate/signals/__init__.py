"""RedPajama-V2 quality signals over Arrow batches, fast and exact.

``compute_signals(texts, urls=None, *, stop_words=None, ...) -> pyarrow.Table``
returns one row per text with every RPv2 document-level signal that needs no
external model (``rps_doc_*`` as int64/float64 scalars, null where RPv2 gives
None) and the line-level signals (``rps_lines_*`` as ``list<double>``, one value
per line, so DuckDB ``list_*`` functions can aggregate them). Values are rounded
to 8 decimals like RPv2. Names follow RPv2 exactly (see :mod:`.names`).

``datatrove_word_stats(texts) -> pyarrow.StructArray`` is apart from the RPv2
signals: the word counts datatrove's Gopher / FineWeb filters take from spaCy's
English tokens (the ``dt_words`` column the filter recipes ``gopher_quality``,
``gopher_repetition`` and ``fineweb`` read; see :mod:`.dtwords`).

Specification: shared/reference/rpv2-signals.md (RPv2 ``app/src/core``).
Not computed here: ``rps_doc_ut1_blacklist`` unless a UT1 mapping is passed,
the fastText ``rps_doc_ml_*`` scores, the DSIR ``*_importance`` weights and the
``ccnet_*`` metadata copies.
"""

from .compute import compute_signals, rpv2_normalize
from .dtwords import datatrove_word_stats, datatrove_words
from .names import DOC_SIGNALS, LINE_SIGNALS, UT1_SIGNAL, signals_schema
from .wordlists import ldnoobw_words, stop_words

__all__ = [
    "compute_signals",
    "rpv2_normalize",
    "datatrove_word_stats",
    "datatrove_words",
    "signals_schema",
    "DOC_SIGNALS",
    "LINE_SIGNALS",
    "UT1_SIGNAL",
    "stop_words",
    "ldnoobw_words",
]
