"""One kind of span a pii step replaces: the built-in kinds (patterns.py) and the user's own (user.py) are both
`Kind`s, which find.py runs over a batch."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Kind:
    """One kind of span: how to find it (precise and prefilter) and which matches are exceptions."""

    name: str
    pattern: re.Pattern
    prefilter: str | None               # None: every document is a candidate
    placeholders: tuple[str, ...]
    accept: Callable[[str, re.Match], bool] | None = None
    anchor: re.Pattern | None = None    # matches are looked for only around this pattern's hits (see ANCHORS)
    before: int = 0                     # how far before its anchor a match may start
    after: int = 0                      # how far after the anchor's start the pattern may read
    own_pass: bool = True               # after the batch's RE2 pass for all kinds, one of its own on the candidates
    invisible: re.Pattern | None = None  # characters skipped inside a match (e-mail: zero-width ones), and
    run: re.Pattern | None = None       # a run of what a match with them can be made of (the window around a hit)
    lead: re.Pattern | None = None      # where a match around an anchor hit starts: the leftmost place this pattern
                                        # runs from up to the hit (e-mail: its local part); None: search the window
    timeout: float | None = None        # seconds a document may take (your own patterns, run by `regex`)
