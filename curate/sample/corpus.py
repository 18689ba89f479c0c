"""Deterministic sample corpus in the native layouts of four web datasets.

The quickstart and the tests need real-looking input without downloads:
FineWeb-Edu parquet, DCLM-baseline ``.jsonl.zst``, Zyda parquet and Dolma
``.json.gz`` files, with planted duplicates, junk and bad records whose ground
truth is written next to the data:

* ``expected.json``: per source, the files, records, good records and bad
  records by kind that a correct reader reports;
* ``truth.json``: planted duplicate groups, each document's language and the
  junk pages, with ids exactly as the readers report them;
* ``_SUCCESS``: an empty marker written last, so a half-written sample is
  recognisable and gets regenerated.

The output is byte-identical for the same ``(docs, seed)``: every random
choice comes from ``random.Random`` seeded with strings, compressors run with
fixed settings and no timestamps, and JSON that must be stable is key-sorted.
"""

from __future__ import annotations

import itertools
import json
import random
import shutil
from dataclasses import dataclass, field
from pathlib import Path


from . import text as T
from .evals import make_evals
from .models import make_models
from .topic import topic_page
from .writers import Doc, write_dclm, write_dolma, write_fwe, write_zyda

SOURCES = ("fwe", "dclm", "zyda", "dolma_cc")
SHARE = {"fwe": 0.3, "dclm": 0.3, "zyda": 0.2, "dolma_cc": 0.2}
# (non-English fraction, junk fraction): FineWeb-Edu is already clean English
# prose; the broader crawls carry more of both.
MIX = {"fwe": (0.0, 0.03), "dclm": (0.10, 0.16), "zyda": (0.10, 0.10),
       "dolma_cc": (0.14, 0.18)}
# Pages of the planted demonstration topic (beekeeping, for the dual_use stage), as a share of each
# source, split across the kinds howto / story / mention.
TOPIC = {"fwe": 0.01, "dclm": 0.03, "zyda": 0.03, "dolma_cc": 0.03}
TOPIC_SPLIT = {"howto": 0.4, "story": 0.4, "mention": 0.2}

# Planted duplicate groups at docs=4000; scaled linearly for other sizes.
EXACT_WITHIN_PER_SOURCE = 3
EXACT_CROSS = 8
NEAR_WITHIN = {"fwe": 2, "dclm": 6, "zyda": 2, "dolma_cc": 6}
NEAR_CROSS = 30
LOOSE = 6
NEAR_KINDS = ("boilerplate", "linebreaks", "truncated", "edit")
NEAR_MIN_JACCARD = 0.85

MARKER = "_SUCCESS"
SCALED_FROM = 20_000  # more documents than this: the corpus is made in parts (scaled.py)
_OUTPUTS = (MARKER, *SOURCES, "models", "evals", "expected.json", "truth.json")  # marker first

@dataclass
class Member:
    doc: Doc
    source: str
    variant: str
    jaccard: float = 1.0


@dataclass
class Group:
    kind: str  # "exact" | "near"
    members: list[Member] = field(default_factory=list)


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------

def is_complete(dest) -> bool:
    """True when ``dest`` holds a fully written sample."""
    return (Path(dest) / MARKER).exists()


def make_corpus(dest, docs: int = 4000, seed: int = 0) -> dict:
    """Write the sample corpus under ``dest`` in one process and return the expected counts (see
    ``make_sample``, which makes corpora above SCALED_FROM documents in parts instead)."""
    dest = Path(dest)
    _clear(dest)
    plan = _Planner(docs, seed).plan()
    expected = {
        "fwe": write_fwe(dest / "fwe", plan["fwe"], _rng(seed, "fwe")),
        "dclm": write_dclm(dest / "dclm", plan["dclm"], _rng(seed, "dclm")),
        "zyda": write_zyda(dest / "zyda", plan["zyda"], _rng(seed, "zyda")),
        "dolma_cc": write_dolma(dest / "dolma_cc", plan["dolma_cc"],
                                 plan["dolma_cc_truncated"], _rng(seed, "dolma_cc")),
    }
    make_models(dest, seed)
    make_evals(dest, plan, seed)
    _write_json(dest / "expected.json", expected)
    _write_json(dest / "truth.json", _truth(plan))
    (dest / MARKER).write_bytes(b"")
    return expected


# --------------------------------------------------------------------------
# Planning: which documents go to which source, and the planted groups.
# --------------------------------------------------------------------------

def _rng(seed: int, name: str) -> random.Random:
    """Independent stream per purpose (string seeds hash with SHA-512)."""
    return random.Random(f"curate-sample:{seed}:{name}")


def _scaled(n: int, scale: float, minimum: int = 1) -> int:
    return max(minimum, round(n * scale))


class _Planner:
    """Builds per-source document lists with planted groups mixed in."""

    def __init__(self, docs: int, seed: int):
        self.rng = _rng(seed, "plan")
        self.scale = docs / 4000
        rest = docs - sum(round(docs * SHARE[s]) for s in SOURCES[:-1])
        self.counts = {s: round(docs * SHARE[s]) for s in SOURCES[:-1]}
        self.counts["dolma_cc"] = rest
        self.seen: set[str] = set()
        self.pool: dict[str, list[Doc]] = {s: [] for s in SOURCES}
        self.groups: list[Group] = []
        self._kinds = itertools.cycle(NEAR_KINDS)

    # -- documents --------------------------------------------------------
    def _unique(self, make) -> str:
        """Call ``make`` until it returns text not used before."""
        while True:
            text = make()
            if text not in self.seen:
                self.seen.add(text)
                return text

    def article(self, min_words: int = 150) -> Doc:
        text = self._unique(lambda: T.english_article(self.rng, min_words))
        return Doc(text, url=T.make_url(self.rng))

    def foreign(self) -> Doc:
        lang = self.rng.choice(T.FOREIGN_LANGS)
        return Doc(self._unique(lambda: T.foreign_page(self.rng, lang)), lang,
                   url=T.make_url(self.rng))

    def junk(self) -> Doc:
        kind = self.rng.choice(T.JUNK_KINDS)
        text = self._unique(lambda: T.junk_page(self.rng, kind)[0])
        return Doc(text, T.JUNK_LANGUAGE[kind], junk=kind, url=T.make_url(self.rng))

    def topic(self, kind: str) -> Doc:
        return Doc(self._unique(lambda: topic_page(self.rng, kind)), topic=kind, url=T.make_url(self.rng))

    def fresh(self, source: str) -> list[Doc]:
        """Ungrouped documents filling the source's language/junk/topic mix."""
        n = self.counts[source]
        nonen, junk = (round(n * f) for f in MIX[source])
        topic = [k for k, share in TOPIC_SPLIT.items() for _ in range(round(n * TOPIC[source] * share))]
        grouped = len(self.pool[source])
        n_en = max(0, n - nonen - junk - grouped - len(topic))
        return ([self.article() for _ in range(n_en)]
                + [self.foreign() for _ in range(nonen)]
                + [self.junk() for _ in range(junk)]
                + [self.topic(k) for k in topic])

    def _add(self, group: Group, doc: Doc, source: str, variant: str, jac: float = 1.0):
        group.members.append(Member(doc, source, variant, round(jac, 4)))
        self.pool[source].append(doc)

    # -- groups -----------------------------------------------------------
    def exact_group(self, sources: list[str]) -> None:
        """The same text in every listed source (repeats mean a re-crawl)."""
        group, base = Group("exact"), self.article()
        for i, src in enumerate(sources):
            if i == 0:
                self._add(group, base, src, "original")
                continue
            url = base.url if src != sources[0] else T.make_url(self.rng)
            self._add(group, Doc(base.text, url=url), src, "exact")
        self.groups.append(group)

    def near_group(self, sources: list[str], loose: bool = False) -> None:
        """A base article in sources[0] and one variant in each other entry."""
        group, base = Group("near"), self.article(min_words=350)
        self._add(group, base, sources[0], "original")
        variants = [next(self._kinds) for _ in sources[1:]]
        if loose:
            variants[-1] = "loose"
        for src, kind in zip(sources[1:], variants):
            text, jac = self._variant(base.text, kind)
            url = base.url if src != sources[0] else T.make_url(self.rng)
            self._add(group, Doc(text, url=url), src, kind, jac)
        self.groups.append(group)

    def _variant(self, base: str, kind: str) -> tuple[str, float]:
        """A variant of ``kind``; gentler retries until Jaccard >= 0.85
        (or, for "loose", until it lands in 0.5-0.72)."""
        best = None
        for attempt in range(8):
            strength = 0.75 ** attempt
            text = self._unique(lambda strength=strength: self._transform(base, kind, strength))
            jac = T.jaccard_char25(base, text)
            ok = 0.5 <= jac <= 0.72 if kind == "loose" else jac >= NEAR_MIN_JACCARD
            best = (text, jac)
            if ok:
                break
            self.seen.discard(text)
        self.seen.add(best[0])
        return best

    def _transform(self, base: str, kind: str, strength: float) -> str:
        r = self.rng
        if kind == "boilerplate":
            return T.add_boilerplate(r, base, strength)
        if kind == "linebreaks":
            return T.change_linebreaks(r, base, strength)
        if kind == "truncated":
            return T.truncate(r, base, 1 - r.uniform(0.08, 0.14) * strength)
        if kind == "edit":
            return T.edit_words(r, base, strength)
        if kind == "loose":
            cut = T.truncate(r, base, r.uniform(0.6, 0.75))
            return T.add_boilerplate(r, T.change_linebreaks(r, cut), 1.0)
        raise ValueError(kind)

    def _source_sets(self, sizes: tuple[int, ...]) -> list[list[str]]:
        """All source combinations of the given sizes, in a shuffled order
        and with a random first (original) source."""
        combos = [list(c) for k in sizes for c in itertools.combinations(SOURCES, k)]
        self.rng.shuffle(combos)
        for c in combos:
            self.rng.shuffle(c)
        return combos

    def plan(self) -> dict[str, list[Doc]]:
        r, s = self.rng, self.scale
        for src in SOURCES:
            for i in range(_scaled(EXACT_WITHIN_PER_SOURCE, s)):
                self.exact_group([src] * (3 if i == 0 else 2))
        cross = itertools.cycle(self._source_sets((2, 3)))
        for _ in range(_scaled(EXACT_CROSS, s)):
            self.exact_group(next(cross))
        for src, n in NEAR_WITHIN.items():
            for _ in range(_scaled(n, s, minimum=1 if n > 2 else 0)):
                self.near_group([src] * r.randint(2, 4))
        cross = itertools.cycle(self._source_sets((2, 3, 4)))
        n_loose = _scaled(LOOSE, s)
        for i in range(_scaled(NEAR_CROSS, s)):
            srcs = next(cross)
            if r.random() < 0.2:  # a second copy inside the original's source
                srcs = srcs + [srcs[0]]
            self.near_group(srcs, loose=i < n_loose)

        plan: dict[str, list[Doc]] = {}
        for src in SOURCES:
            fresh = self.fresh(src)
            r.shuffle(fresh)
            if src == "dolma_cc":  # the truncated file holds only ungrouped docs
                n_trunc = min(60, max(5, self.counts[src] // 8))
                plan["dolma_cc_truncated"], fresh = fresh[:n_trunc], fresh[n_trunc:]
            docs = self.pool[src] + fresh
            r.shuffle(docs)
            plan[src] = docs
        plan["groups"] = self.groups
        return plan


# --------------------------------------------------------------------------
# Ground truth and helpers.
# --------------------------------------------------------------------------

def _truth(plan: dict) -> dict:
    groups = []
    for g in plan["groups"]:
        sources = {m.source for m in g.members}
        groups.append({
            "kind": g.kind,
            "scope": "within" if len(sources) == 1 else "cross",
            "variants": sorted({m.variant for m in g.members} - {"original"}),
            "members": [{"source": m.source, "id": m.doc.id, "variant": m.variant,
                         "jaccard_char25": m.jaccard} for m in g.members],
        })
    languages, junk, junk_kinds, topic = {}, {}, {}, {}
    for src in SOURCES:
        docs = plan[src] + plan.get(f"{src}_truncated", [])
        docs = [d for d in docs if d.readable]
        languages[src] = {d.id: d.lang for d in docs}
        junk[src] = sorted(d.id for d in docs if d.junk)
        junk_kinds[src] = {d.id: d.junk for d in docs if d.junk}
        topic[src] = {d.id: d.topic for d in docs if d.topic}
    return {"groups": groups, "languages": languages, "junk": junk,
            "junk_kinds": junk_kinds, "topic": topic}


def _write_json(path: Path, obj) -> None:
    path.write_text(json.dumps(obj, sort_keys=True, indent=1, ensure_ascii=False) + "\n",
                    encoding="utf-8")


def _clear(dest: Path) -> None:
    """Remove a previous sample (finished or partial): marker first, so an
    interrupted clean-up still reads as incomplete."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in _OUTPUTS:
        p = dest / name
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()
