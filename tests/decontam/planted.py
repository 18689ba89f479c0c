"""A tiny corpus with planted eval passages and near-misses, and an independent plain-Python decontaminator.

The reference works on strings: normalised word lists, tuples for n-grams, a dict from gram to items, set
intersections; it shares nothing with curate.decontam but the rules written in its docstrings.
"""

from __future__ import annotations

import json
import random
import unicodedata

import pyarrow as pa
import pyarrow.parquet as pq

RNG = random.Random(7)
VOCAB = ["".join(RNG.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(RNG.randint(3, 9))) for _ in range(3000)]


def filler(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(VOCAB) for _ in range(words)).capitalize() + "."


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(VOCAB) for _ in range(words))


BOILERPLATE = ("This website uses cookies to improve your experience and by continuing to browse the site you agree to "
               "our use of cookies.")


def reformat(text: str) -> str:
    """Case, punctuation and whitespace changed, the words the same."""
    words = text.split()
    out = []
    for i, w in enumerate(words):
        w = w.upper() if i % 3 == 0 else w.capitalize() if i % 3 == 1 else w
        out.append(w + ("," if i % 5 == 4 else "") + ("\n  " if i % 7 == 6 else " "))
    return '"' + "".join(out).strip() + '!"'


def make(tmp) -> tuple[dict, dict]:
    """Eval set files under `tmp` and the documents {source: [{id, text}]}; returns (sets option, docs)."""
    rng = random.Random(11)
    verbatim_q = sentence(rng, 30)
    reformatted_p = sentence(rng, 60)
    partial_p = sentence(rng, 80)
    small_p = sentence(rng, 80)
    short_q = sentence(rng, 10)           # shorter than n: matches only whole
    boiler_item = BOILERPLATE + " " + sentence(rng, 20)
    common = "at the end of the day"      # a common phrase: shorter than min_short_words, never matches
    unseen = sentence(rng, 40)
    qa = [
        {"id": "q-verbatim", "question": verbatim_q, "answer": "yes"},
        {"id": "q-reformatted", "passage": reformatted_p, "question": sentence(rng, 12) + "?", "answer": "no"},
        {"id": "q-partial", "passage": partial_p, "answer": "Paris"},
        {"id": "q-small-part", "passage": small_p, "answer": "yes"},
        {"id": "q-short", "question": short_q, "answer": "yes"},
        {"id": "q-boiler", "question": boiler_item, "answer": "maybe"},
        {"id": "q-common", "question": common, "answer": "yes"},
        {"id": "q-unseen", "question": unseen, "answer": "yes"},
        {"id": "q-yes", "question": "Is it?", "answer": "yes"},
    ]
    mc_question = sentence(rng, 16)
    mc_choices = [sentence(rng, 14), sentence(rng, 14), sentence(rng, 3)]
    mc = [{"meta": {"uid": "mc-1"}, "q": {"text": mc_question}, "opts": mc_choices, "label": 1},
          {"meta": {"uid": "mc-2"}, "q": {"text": sentence(rng, 16)}, "opts": [sentence(rng, 2)], "label": 0}]
    (tmp / "qa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in qa))
    pq.write_table(pa.Table.from_pylist(mc), tmp / "mc.parquet")
    sets = {"qa": {"path": str(tmp / "qa.jsonl"), "fields": {"passage": "passage", "id": "id"}},
            "mc": {"path": str(tmp / "mc.parquet"), "fields": {"question": "q.text", "choices": "opts", "answer": "label", "id": "meta.uid"}}}
    partial_words = partial_p.split()
    small_words = small_p.split()
    short_words = short_q.split()
    planted = {
        "web": [
            filler(rng, 40) + " " + verbatim_q + " " + filler(rng, 30),                     # verbatim -> flagged
            filler(rng, 20) + "\n\n" + reformat(reformatted_p) + "\n" + filler(rng, 10),     # reformatted -> flagged
            filler(rng, 15) + " " + " ".join(partial_words[:52]) + ". " + filler(rng, 15),   # 52 of 80 words -> flagged
            filler(rng, 15) + " " + " ".join(small_words[:20]) + ". " + filler(rng, 15),     # 20 of 80 -> not flagged
            filler(rng, 30) + " " + short_q.upper() + "! " + filler(rng, 10),                # short item whole -> flagged
            filler(rng, 30) + " " + " ".join(short_words[:9]) + " zzz. " + filler(rng, 10),  # short item cut -> never
            filler(rng, 10) + " " + boiler_item + " " + filler(rng, 10),                     # boilerplate + rare -> flagged
            filler(rng, 20) + " Yes! Yes, yes. Paris. It is, at the end of the day, " + filler(rng, 5),  # short answers
            filler(rng, 25) + " " + mc_question + " " + filler(rng, 10),                     # mc question -> flagged
        ],
        "news": [
            filler(rng, 12) + " " + mc_choices[1] + " " + filler(rng, 12),                   # one choice alone: 2 of 8 grams -> not flagged
            filler(rng, 50) + " " + " ".join(partial_words[10:70]) + " " + filler(rng, 5),   # 60 words contiguous -> flagged
        ],
    }
    # boilerplate in many documents of both sources: never flagged for it alone
    for i in range(8):
        planted["web" if i % 2 else "news"].append(filler(rng, 20) + " " + BOILERPLATE + " " + filler(rng, 20))
    planted["news"] += [filler(rng, 60) for _ in range(5)]
    docs = {s: [{"id": f"{s}-{i}", "text": t} for i, t in enumerate(texts)] for s, texts in planted.items()}
    return sets, docs


# ---- the independent reference ------------------------------------------------------------------

UNSPACED_NAMES = ("CJK ", "KANGXI ", "HIRAGANA ", "KATAKANA", "HALFWIDTH KATAKANA", "BOPOMOFO ", "THAI ", "LAO ", "KHMER ",
                  "MYANMAR ", "TIBETAN ", "YI ", "IDEOGRAPHIC ", "HANGZHOU ", "VERTICAL KANA", "VERTICAL IDEOGRAPHIC", "MASU ")


def ref_words(text: str) -> list[str]:
    """The documented rules, on whole strings: split at whitespace; every other character -> NFKD, casefold, NFKD,
    keeping letters, numbers and spacing marks; a character of a script without spaces is a word of its own."""
    words, word = [], ""
    for ch in text:
        if ch.isspace():
            if word:
                words.append(word)
            word = ""
            continue
        for c in unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", ch).casefold()):
            category = unicodedata.category(c)
            if category[0] not in "LN" and category != "Mc":
                continue
            if unicodedata.name(c, "").startswith(UNSPACED_NAMES):
                if word:
                    words.append(word)
                words.append(c)
                word = ""
            else:
                word += c
    return words + ([word] if word else [])


def ref_items(sets: dict) -> list[tuple[str, str, list[str]]]:
    """(set, item id, segments) read with json/pyarrow, fields resolved by hand."""
    out = []
    for r in (json.loads(line) for line in open(sets["qa"]["path"])):
        out.append(("qa", r["id"], [r[k] for k in ("passage", "question", "answer") if r.get(k)]))
    for r in pq.read_table(sets["mc"]["path"]).to_pylist():
        out.append(("mc", r["meta"]["uid"], [r["q"]["text"], r["opts"][r["label"]], *r["opts"]]))
    return out


def reference(sets: dict, docs: dict, n: int, min_short: int, frequent_docs: int, min_overlap: float, min_words: int) -> dict:
    """{(source, id, set, item): (overlap, longest words, flagged)} for every pair with a counting match."""
    items = []
    for s, i, segments in ref_items(sets):
        grams = set()
        for seg in segments:
            w = ref_words(seg)
            if len(w) >= n:
                grams |= {tuple(w[j:j + n]) for j in range(len(w) - n + 1)}
            elif len(w) >= min_short:
                grams.add(tuple(w))
        items.append((s, i, grams))
    lengths = {len(g) for _, _, grams in items for g in grams}
    by_gram: dict[tuple, list[int]] = {}
    for x, (_, _, grams) in enumerate(items):
        for g in grams:
            by_gram.setdefault(g, []).append(x)
    hits, df = {}, {}
    for source, rows in docs.items():
        for r in rows:
            w = ref_words(r["text"])
            found = [(p, k, tuple(w[p:p + k])) for k in lengths for p in range(len(w) - k + 1) if tuple(w[p:p + k]) in by_gram]
            for g in {g for _, _, g in found}:
                df[g] = df.get(g, 0) + 1
            hits[(source, r["id"])] = found
    out = {}
    for (source, doc), found in hits.items():
        for s, i, grams in items:
            mine = sorted((p, -k, g) for p, k, g in found if g in grams)
            runs, run = [], []
            for p, negk, g in mine:
                k = -negk
                if run and k == n and run[-1][1] == n and p == run[-1][0] + 1:
                    run.append((p, k, g))
                else:
                    if run:
                        runs.append(run)
                    run = [(p, k, g)]
            if run:
                runs.append(run)
            runs = [r for r in runs if any(df[g] <= frequent_docs for _, _, g in r)]
            if not runs:
                continue
            matched = {g for r in runs for _, _, g in r}
            longest = max(r[-1][0] - r[0][0] + r[0][1] for r in runs)
            overlap = len(matched) / len(grams)
            out[(source, doc, s, i)] = (round(overlap, 6), longest, overlap >= min_overlap or longest >= min_words)
    return out
