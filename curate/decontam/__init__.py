"""Benchmark decontamination: eval sets -> an n-gram index -> matches in training text -> attributed flags.

    evalsets.py   load eval sets (JSONL / Parquet, local or remote; fields by name or dotted path)
    normalize.py  NFKD- and case-folded, marks and punctuation dropped, whitespace-split words (characters in
                  scripts without spaces), hashed in one compiled pass
    ngrams.py     word n-gram hashes, combined from word hashes with numpy
    index.py      the eval sets' grams and the lookup of training texts in them (the scan)
    decide.py     stored matches -> per (document, item) overlap, longest run, flag (precision rules)
"""
