"""The columns a rule reads must exist: checked at load, and again once ingest has planned, before any work.

A rule (a filter predicate, `Stage.predicates`) reads the documents of its source joined with the id-keyed
tables of the steps before it (`Stage.keyed_columns`). At load the documents' columns are known where the
format fixes them (JSON Lines, RPv2) or a Parquet source projects `columns:`; once ingest has planned, each
Parquet file's footer names its own (`ReadTask.columns`), so a column that one file of the source lacks is
named with that file before a record is read. Without this, each of these failed in DuckDB's binder after
the expensive steps: a typo (`rps_doc_word_cont`), `lang` with language id switched off, a column missing
in one input file. Column references come from DuckDB's own parse tree, so string literals, function names
and lambda parameters are never mistaken for columns; names compare case-insensitively, as DuckDB binds them.
"""

from __future__ import annotations

import difflib
import fnmatch
from functools import lru_cache
from typing import Mapping

from curate.common.schema import check_mapping
from curate.errors import ConfigError

Files = list[tuple[str | None, list[str] | None]]   # (a file of the source, or None at load; its columns, None: unknown)


@lru_cache(maxsize=1024)
def column_refs(predicate: str) -> tuple[str, ...]:
    """The columns `predicate` names (a struct field's column for `s.field`; `docs.x` is x), in order, once each."""
    from curate.common.sql_guard import _parse

    tree = _parse(f"SELECT (\n{predicate}\n)")
    out: dict[str, None] = {}
    for statement in tree.get("statements") or []:
        _walk(statement.get("node", {}).get("select_list", []), frozenset(), out)
    return tuple(out)


def _walk(node, bound: frozenset, out: dict) -> None:
    if isinstance(node, list):
        for item in node:
            _walk(item, bound, out)
        return
    if not isinstance(node, dict):
        return
    kind = node.get("class")
    if kind == "SUBQUERY":   # its columns are its own tables'
        return
    if kind == "COLUMN_REF":
        names = node.get("column_names") or []
        name = names[1] if len(names) > 1 and names[0].lower() == "docs" else names[0] if names else None
        if name is not None and name.lower() not in bound:
            out.setdefault(name)
        return
    if kind == "LAMBDA":
        params: dict[str, None] = {}
        _walk(node.get("lhs"), frozenset(), params)
        _walk(node.get("expr"), bound | {p.lower() for p in params}, out)
        return
    for value in node.values():
        if isinstance(value, (dict, list)):
            _walk(value, bound, out)


def source_columns(source) -> list[str] | None:
    """The document columns of a source as far as its format and options tell, without reading a file."""
    from curate.readers import FORMATS, READERS

    fmt = FORMATS[source.format].with_fields(source.fields)
    return READERS[fmt.kind].columns(fmt, source.columns, None)


def check_rule_columns(steps: list, registry: Mapping[str, type], file: str, docs: Mapping[str, Files]) -> None:
    """Every column each step's rules read, for each source, is written by an earlier step or is in every file of
    the source (`docs`: source -> its files' columns); else one ConfigError naming the rule, the column, the file
    and close matches."""
    writers = None   # (pattern, kind) of the columns only one kind of step writes, gathered when a rule is seen
    shapes = {source: _shapes(files) for source, files in docs.items()}
    for i, step in enumerate(steps):
        cls, key = registry[step.kind], f"stages.{step.name}"
        earlier = [s for s in steps[:i] if registry[s.kind].VIEW]
        written = [p.lower() for s in earlier for p in registry[s.kind].keyed_columns(s.options)]
        for source, files in shapes.items():
            for label, predicate in cls.source_predicates(step.options, file, key, source):
                for column in column_refs(predicate):
                    name = column.lower()
                    if any(fnmatch.fnmatchcase(name, p) for p in written):
                        continue
                    if writers is None:
                        writers = [(p.lower(), kind) for kind in registry for p in registry[kind].keyed_columns(None)]
                    if kinds := sorted({kind for p, kind in writers if fnmatch.fnmatchcase(name, p)}):
                        mine = [s.name for s in earlier if s.kind in kinds]
                        fix = (f"step '{mine[-1]}' does not write it" if mine else
                               f"add a {' or '.join(f'`{k}`' for k in kinds)} step before '{step.name}'")
                        raise ConfigError(file, key, f"rule {label} reads column {column}, which no earlier step writes; {fix}"
                                                     + _close(column, written))
                    lacking = [(f, cols) for f, cols, lowered in files if lowered is not None and name not in lowered]
                    if not lacking:
                        continue
                    having = [f for f, cols, lowered in files if lowered is not None and name in lowered]
                    where, cols = lacking[0]
                    if having and where is not None:
                        raise ConfigError(file, key, f"rule {label} reads column {column}, which file {where} of source "
                                                     f"'{source}' lacks (file {having[0]} has it): every file of a source "
                                                     "needs the columns its rules read")
                    raise ConfigError(file, key, f"rule {label} reads column {column}, which neither the documents of source "
                                                 f"'{source}'{' (file ' + where + ')' if where else ''} nor an earlier step has"
                                                 + _close(column, written + [c.lower() for c in cols])
                                                 + _default_writers(name, registry, earlier, step.name))


def _shapes(files: Files) -> list[tuple[str | None, list[str] | None, set[str] | None]]:
    """The distinct column lists of a source's files, each with the first file that has it (thousands of files
    usually share a few shapes) and its names in lower case."""
    first: dict = {}
    for f, cols in files:
        first.setdefault(None if cols is None else tuple(cols), f)
    return [(f, None if cols is None else list(cols), None if cols is None else {c.lower() for c in cols})
            for cols, f in first.items()]


def _close(column: str, names: list[str]) -> str:
    close = difflib.get_close_matches(column.lower(), list(dict.fromkeys(n for n in names if "*" not in n)), n=3, cutoff=0.75)
    return f"; close matches: {', '.join(close)}" if close else ""


def _default_writers(name: str, registry: Mapping[str, type], earlier: list, step: str) -> str:
    """`; a step of kind K writes it with its default options`: the hint for `lang` when language id is off."""
    kinds = []
    for kind in registry:
        cls = registry[kind]
        if not cls.VIEW:
            continue
        try:
            defaults = check_mapping({}, cls.OPTIONS, "", "")
        except ConfigError:   # a kind with required options has no default columns
            continue
        if any(fnmatch.fnmatchcase(name, p.lower()) for p in cls.keyed_columns(defaults)):
            kinds.append(kind)
    if not kinds:
        return ""
    mine = [(s.name, s.kind) for s in earlier if s.kind in kinds]
    if mine:
        return f"; step '{mine[-1][0]}' does not write it with its options (a `{mine[-1][1]}` step's defaults do)"
    return f"; a {' or '.join(f'`{k}`' for k in kinds)} step before '{step}' writes it"
