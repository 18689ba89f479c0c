"""A small demonstration eval set made from the sample, for the decontaminate step (`evals/demo.jsonl`).

Items are cut deterministically from a few of the sample's DCLM articles (ungrouped, so no dedup step removes
them and no quality step of `zyda2.yaml` reads DCLM): passages copied verbatim, passages reformatted (case,
punctuation and whitespace changed, the words the same), a passage only partly copied, and a question that is
one exact sentence. Beside them, a near-miss (a few copied words, matched but not flagged) and items that must
not match: fresh text from the same generators, short answers
("yes", "Paris") and a common phrase. `evals/demo_truth.json` says, per item, the document it was cut from and
whether the step should flag it. The sample's documents are untouched: the items come from their own random
stream, after every document is written.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from . import text as T

WINDOW = 60


def make_evals(dest: Path, plan: dict, seed: int) -> dict:
    """Write `evals/demo.jsonl` and `evals/demo_truth.json` under `dest`; returns the truth."""
    rng = random.Random(f"curate-sample:{seed}:evals")
    grouped = {id(m.doc) for g in plan["groups"] for m in g.members}
    pool = [d for d in plan["dclm"] if d.readable and d.lang == "en" and not d.junk and not d.topic and id(d) not in grouped
            and len(d.text.split()) >= 3 * WINDOW]
    docs = rng.sample(pool, min(7, len(pool)))
    items, truth = [], {}

    def add(item: dict, doc, flag: bool) -> None:
        item = {"id": f"demo-{len(items):02d}", **item}
        items.append(item)
        truth[item["id"]] = {"source": "dclm" if doc else None, "doc": doc.id if doc else None, "flag": flag}

    def window(doc, words: int = WINDOW) -> str:
        w = doc.text.split()
        start = rng.randrange(0, len(w) - words)
        return " ".join(w[start:start + words])

    for doc in docs[:2]:
        add({"passage": window(doc), "question": "Which statement does the passage support?", "answer": "yes"}, doc, True)
    for doc in docs[2:4]:
        add({"passage": _reformat(window(doc)), "question": "What is the main point of the passage?", "answer": "no"}, doc, True)
    if len(docs) > 4:   # 48 copied words + 30 new: 36 of 66 13-grams (0.55), longest match 48 words
        fresh = T.english_article(rng, 200).split()
        add({"passage": window(docs[4], 48) + " " + " ".join(fresh[40:70]), "answer": "maybe"}, docs[4], True)
    if len(docs) > 5:   # shorter than 13 words: matches only whole
        add({"question": window(docs[5], 11), "answer": "true"}, docs[5], True)
    if len(docs) > 6:   # a near-miss: 20 copied words + 40 new, 8 of 48 13-grams
        fresh = T.english_article(rng, 200).split()
        add({"passage": window(docs[6], 20) + " " + " ".join(fresh[40:80]), "answer": "no"}, docs[6], False)
    for _ in range(3):
        add({"passage": " ".join(T.english_article(rng, 200).split()[20:20 + WINDOW]), "answer": "yes"}, None, False)
    add({"question": "Is the sky blue?", "answer": "yes"}, None, False)
    add({"question": "What is the capital of France?", "answer": "Paris"}, None, False)
    add({"question": "for more information please visit our website", "answer": "no"}, None, False)
    out = dest / "evals"
    out.mkdir(parents=True, exist_ok=True)
    (out / "demo.jsonl").write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items), encoding="utf-8")
    (out / "demo_truth.json").write_text(json.dumps(truth, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return truth


def _reformat(text: str) -> str:
    """Case, punctuation and whitespace changed; the words the same once normalised."""
    out = []
    for i, word in enumerate(text.split()):
        word = word.upper() if i % 4 == 0 else word.lower()
        word = word.strip(".,;:!?") + ("," if i % 6 == 5 else "")
        out.append(word + ("\n" if i % 9 == 8 else "  " if i % 5 == 0 else " "))
    return "".join(out).strip() + "."
