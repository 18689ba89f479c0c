"""The dt_words tokenizer's tables (spaCy's blank-English rules, datatrove's sets), shipped as package data.

``data/dtwords_tables.json`` is written by ``python -m curate.signals.dtwords_build`` (do not edit it);
spaCy 3.8.18 (MIT, Explosion AI), datatrove 0.10.1 (Apache-2.0). Keys: ``versions``, ``classes`` (name ->
inclusive code point ranges), ``multi_prefix``, ``suffix_literals`` ((literal, look-behind) pairs),
``specials`` and ``matcher`` (string -> its tokens), ``stop_words``.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

PATH = Path(__file__).with_name("data") / "dtwords_tables.json"


@lru_cache(maxsize=1)
def load_tables() -> dict:
    """The tables as :func:`curate.signals.dtwords_build.build` returns them (pairs as tuples)."""
    data = json.loads(PATH.read_text(encoding="utf-8"))
    data["classes"] = {name: [tuple(r) for r in ranges] for name, ranges in data["classes"].items()}
    data["suffix_literals"] = [tuple(x) for x in data["suffix_literals"]]
    return data
