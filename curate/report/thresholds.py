"""Thresholds a recipe states, read from its SQL: `column OP number` and `column BETWEEN a AND b`.

A keep predicate is split on its top-level ANDs; each conjunct that compares a column (or plain
arithmetic over columns, `a / b`) with a number is a threshold that every kept document meets, so it
can be drawn on that column's distribution. Anything else (OR at the top level, functions, strings
other than a label equality) is skipped: the report draws only what it can state exactly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from curate.errors import CurateError
from curate.recipes import load_recipe
from curate.report.context import RunView

NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
IDENT = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
OPERAND = rf"(?:{IDENT}|{NUMBER})"
EXPR = rf"{IDENT}(?:\s*[-+*/]\s*{OPERAND})*"
OPS = r"<=|>=|<>|!=|==|=|<|>"
COMPARE = re.compile(rf"^\s*(?P<lhs>{EXPR})\s*(?P<op>{OPS})\s*(?P<num>{NUMBER})\s*$")
REVERSED = re.compile(rf"^\s*(?P<num>{NUMBER})\s*(?P<op>{OPS})\s*(?P<lhs>{EXPR})\s*$")
BETWEEN = re.compile(rf"^\s*(?P<lhs>{EXPR})\s+BETWEEN\s+(?P<a>{NUMBER})\s+AND\s+(?P<b>{NUMBER})\s*$", re.I)
LABEL = re.compile(rf"^\s*(?P<col>{IDENT})\s*(?P<op>=|==|!=|<>)\s*'(?P<value>[^']*)'\s*$")
FLIP = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "=": "=", "!=": "!="}
KEYWORDS = {"and", "or", "not", "between", "is", "null", "in", "like", "case", "when", "then", "else", "end", "true", "false"}


@dataclass(frozen=True)
class Threshold:
    expr: str       # the column (or arithmetic over columns) the rule compares, as SQL
    op: str         # <, <=, >, >=, =, !=  (the side a kept document is on)
    value: float
    rule: str       # the ledger reason of the rule: `gopher_quality.word_count`, `where:int_score >= 3`, `keep`
    scope: str      # the source the rule applies to, or "all"

    @property
    def text(self) -> str:
        return f"{self.op} {self.value:g}"


@dataclass(frozen=True)
class LabelRule:
    column: str
    op: str         # = or !=
    value: str
    scope: str


def split_and(sql: str) -> list[str] | None:
    """Top-level conjuncts (BETWEEN's AND stays inside its conjunct); None when the top level has an OR."""
    parts, depth, start, i, quote = [], 0, 0, 0, False
    pending_between = False
    lower = sql.lower()
    while i < len(sql):
        c = sql[i]
        if c == "'":
            quote = not quote
        elif not quote and c == "(":
            depth += 1
        elif not quote and c == ")":
            depth -= 1
        elif not quote and depth == 0 and (i == 0 or not (sql[i - 1].isalnum() or sql[i - 1] == "_")):
            word = re.match(r"[a-z_]+", lower[i:])
            w = word.group(0) if word else ""
            if w == "or":
                return None
            if w == "between":
                pending_between = True
            elif w == "and":
                if pending_between:
                    pending_between = False
                else:
                    parts.append(sql[start:i])
                    start = i + 3
            if w:
                i += len(w)
                continue
        i += 1
    parts.append(sql[start:])
    return [p.strip() for p in parts if p.strip()]


def _strip_parens(s: str) -> str:
    s = s.strip()
    while s.startswith("(") and s.endswith(")") and split_and(s[1:-1]) is not None and _balanced(s[1:-1]):
        s = s[1:-1].strip()
    return s


def _balanced(s: str) -> bool:
    depth = 0
    for c in s:
        depth += c == "("
        depth -= c == ")"
        if depth < 0:
            return False
    return depth == 0


def _is_column_expr(expr: str) -> bool:
    names = re.findall(IDENT, expr)
    return bool(names) and not any(n.lower() in KEYWORDS for n in names)


def parse(sql: str) -> tuple[list[tuple[str, str, float]], list[tuple[str, str, str]]]:
    """(thresholds as (expr, op, value), label rules as (column, op, value)) stated by a keep predicate."""
    conjuncts = split_and(_strip_parens(sql))
    if conjuncts is None:
        return [], []
    found, labels = [], []
    for part in conjuncts:
        part = _strip_parens(part)
        if m := BETWEEN.match(part):
            if _is_column_expr(m["lhs"]):
                found += [(_norm(m["lhs"]), ">=", float(m["a"])), (_norm(m["lhs"]), "<=", float(m["b"]))]
        elif m := COMPARE.match(part):
            if _is_column_expr(m["lhs"]):
                found.append((_norm(m["lhs"]), _op(m["op"]), float(m["num"])))
        elif m := REVERSED.match(part):
            if _is_column_expr(m["lhs"]):
                found.append((_norm(m["lhs"]), FLIP[_op(m["op"])], float(m["num"])))
        elif m := LABEL.match(part):
            labels.append((m["col"], "=" if m["op"] in ("=", "==") else "!=", m["value"]))
    return found, labels


def _op(op: str) -> str:
    return {"==": "=", "<>": "!="}.get(op, op)


def _norm(expr: str) -> str:
    return re.sub(r"\s+", " ", expr.strip())


# ---- the run's rules ----------------------------------------------------------------------------

def filter_thresholds(run: RunView) -> tuple[list[Threshold], list[str]]:
    """Thresholds of every filter step's recipes and `where` predicates, with notes on what was skipped."""
    out, notes = [], []
    for stage in run.stages_of("filter"):
        options = run.options(stage)
        for who, names in (options.get("recipes") or {}).items():
            for name in names or []:
                try:
                    rules = load_recipe(name, run.pipeline_file or run.dir.pipeline_file, f"stages.{stage}.recipes.{who}")
                except CurateError as exc:
                    notes.append(f"filter recipe '{name}' could not be read here ({exc}); its thresholds are not drawn.")
                    continue
                for rule in rules:
                    for expr, op, value in parse(rule.predicate)[0]:
                        out.append(Threshold(expr, op, value, rule.name, who))
        for who, predicate in (options.get("where") or {}).items():
            for expr, op, value in parse(predicate)[0]:
                out.append(Threshold(expr, op, value, f"where:{predicate}", who))
    return out, notes


def keep_rules(run: RunView, stage: str) -> tuple[list[Threshold], list[LabelRule]]:
    """Thresholds and label equalities of a classify step's `keep` predicates."""
    thresholds, labels = [], []
    for who, predicate in (run.options(stage).get("keep") or {}).items():
        found, lab = parse(predicate)
        thresholds += [Threshold(e, o, v, f"keep: {predicate}", who) for e, o, v in found]
        labels += [LabelRule(c, o, v, who) for c, o, v in lab]
    return thresholds, labels
