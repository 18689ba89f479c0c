"""Your own pii patterns (`stages.pii.patterns`): checked when the pipeline loads, prefiltered only by a literal
every match must contain, and run with a time budget per document.

- Refused at load: a pattern Python's `re` does not take, and one that can match the empty string somewhere
  (`a*`, `\\b`, `(?=a)` alone: it would edit nothing, so it is surely a mistake).
- Prefilter: the longest run of literal characters that every match contains, read from the pattern's parse tree
  (`re._parser`): outside any alternative, optional repeat, look-around or case-insensitive part, in sequence. A
  document without it cannot hold a match, so the prefilter is never stricter than the pattern (RE2 reading the
  pattern itself is: its `$` does not match before a final newline, its `{,3}` is literal). A pattern with no such
  literal runs on every document.
- Budget: Python's `re` cannot be stopped, so a pattern runs in the `regex` package (its `re`-compatible mode,
  the same syntax; the braces and brackets `re` reads as literal text are escaped first, so `regex` reads no fuzzy
  match or POSIX class into them) with `timeout` seconds per document. A document that runs past it is removed
  to the ledger (reason `pii_timeout`, the pattern in `detail`) and a warning names it: keeping it unredacted could
  leak what the pattern was written to find. The budget is wall time, so which document hits it can differ
  between machines; it is meant for runaway patterns (catastrophic backtracking), far above an ordinary scan.
"""

from __future__ import annotations

import re
import time
from re import _constants as sre
from re import _parser

import regex

from curate.pii.kind import Kind

_REPEAT = re.compile(r"\{(?:\d+(?:,\d*)?|,\d*)\}")   # what `re` reads as a repeat; any other `{` is a literal


class PatternTimeout(Exception):
    """A pattern of yours ran past its time budget on one document."""

    def __init__(self, kind: str, seconds: float):
        super().__init__(f"pattern '{kind}' ran past its {seconds:g} s budget")
        self.kind, self.seconds = kind, seconds


def problem(pattern: str) -> str | None:
    """Why `pattern` cannot be a pii pattern (one line), or None."""
    try:
        tree = _parser.parse(pattern)
        re.compile(pattern)
    except re.error as exc:
        return f"not a regular expression: {exc}"
    if tree.getwidth()[0] == 0:
        return (f"{pattern!r} matches the empty string (somewhere it needs no text, as `\\b` or a lookahead alone "
                "does): give a pattern that needs text")
    try:
        regex.compile(for_regex(pattern), regex.V0)
    except regex.error as exc:
        return f"the regex package cannot run it: {exc}"
    return None


def for_regex(pattern: str) -> str:
    """`pattern` with each `{` that `re` reads as a literal (not a repeat) and each `[` inside a set escaped: `regex`
    would read them as a fuzzy match (`(?:abc){e<=1}`) or a POSIX class (`[[:digit:]]`). Comments of verbose
    patterns are copied as they are."""
    out, i, n, in_set = [], 0, len(pattern), False
    verbose = bool(re.compile(pattern).flags & re.VERBOSE)
    while i < n:
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if in_set:
            out.append("\\[" if c == "[" else c)
            in_set = c != "]"
        elif c == "[":
            out.append(c)
            in_set = True
            if pattern.startswith("^", i + 1):
                out.append("^")
                i += 1
            if pattern.startswith("]", i + 1):   # a `]` first in a set is itself a member
                out.append("\\]")
                i += 1
        elif c == "{" and not _REPEAT.match(pattern, i):
            out.append("\\{")
        elif c == "#" and verbose:
            end = pattern.find("\n", i)
            end = n if end < 0 else end
            out.append(pattern[i:end])
            i = end
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def required_literal(pattern: str) -> str:
    """The longest run of characters that every match of `pattern` contains ("" when there is none)."""
    try:
        tree = _parser.parse(pattern)
    except re.error:
        return ""
    runs, run = [], []

    def end_run():
        if run:
            runs.append("".join(run))
            run.clear()

    def walk(items, ignore_case: bool) -> None:
        for op, av in items:
            if op is sre.LITERAL and not ignore_case and not 0xD800 <= av < 0xE000:
                run.append(chr(av))
            elif op is sre.SUBPATTERN:   # a group: its text is part of the sequence
                _, add, remove, sub = av
                walk(sub.data, bool((ignore_case or add & re.IGNORECASE) and not remove & re.IGNORECASE))
            elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT) and av[0] >= 1:
                end_run()   # its body is there at least once, apart from what is around it
                walk(av[2].data, ignore_case)
                end_run()
            elif op is sre.ATOMIC_GROUP:
                walk(av.data, ignore_case)
            else:   # an alternative, a set, an optional repeat, a look-around, an anchor: no literal run through it
                end_run()

    walk(tree.data, bool(tree.state.flags & re.IGNORECASE))
    end_run()
    return max(runs, key=len, default="")


def prefilter(pattern: str) -> str | None:
    """An RE2 pattern for the literal every match contains, each character as `\\x{..}` (None: no literal)."""
    literal = required_literal(pattern)
    return "".join(f"\\x{{{ord(c):x}}}" for c in literal) if literal else None


def user_kind(name: str, pattern: str, placeholders: tuple[str, ...], timeout: float):

    return Kind(name, regex.compile(for_regex(pattern), regex.V0), prefilter(pattern), placeholders, timeout=timeout)


def within_budget(kind, text: str):
    """The matches of a pattern of yours in `text`, as `finditer` gives them; PatternTimeout past `kind.timeout`
    seconds in all."""
    deadline, pos = time.perf_counter() + kind.timeout, 0
    while pos <= len(text):
        left = deadline - time.perf_counter()
        try:
            if left <= 0:
                raise TimeoutError
            m = kind.pattern.search(text, pos, timeout=left)
        except TimeoutError:
            raise PatternTimeout(kind.name, kind.timeout) from None
        if m is None:
            return
        yield m
        pos = m.end() if m.end() > m.start() else m.end() + 1
