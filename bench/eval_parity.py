"""Parity of the `gopher_quality`, `gopher_repetition` and `fineweb` recipes with datatrove's filters, per corpus.

Runs both sides (bench/parity.py: our recipe SQL through the filter stage's `reason_sql`; datatrove's
`GopherQualityFilter`, `GopherRepetitionFilter`, `FineWebQualityFilter` with default arguments) over every
corpus of ../shared/data that holds document text, each apart, and over curate's own sample corpus
(`make_sample(dir, docs=2000, seed=0)`). Prints the corpus x recipe agreement (keep/remove) table, how often
our first failed rule is datatrove's reason, and the disagreements by class (docs/parity.md explains each).

Usage: python bench/eval_parity.py [--corpora dolma_cc,enwiki,...] [--sample-docs 2000] [--no-sample]
                                   [--workers 4] [--list] [--json out.json] [--filters DIR]
       python bench/eval_parity.py --cost [--corpora dolma_cc] [--filters DIR]
Takes ~1-3 minutes on 2 cores (datatrove's spaCy tokenizer is most of it). `--filters DIR` measures the
recipes in DIR (e.g. an earlier version: `git show <rev>:filters/gopher_quality.yaml > DIR/...`) instead of
filters/. `--cost` measures instead the documents per CPU second of compute_signals, datatrove_word_stats
and the filter stage's query per recipe (one core; no datatrove needed).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import parity as P  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(P.SHARED_DATA), help="the shared sample data folder")
    ap.add_argument("--corpora", default="", help="comma-separated corpus names (default: all present)")
    ap.add_argument("--sample-docs", type=int, default=2000, help="documents of curate's sample corpus")
    ap.add_argument("--no-sample", action="store_true", help="leave curate's sample corpus out")
    ap.add_argument("--workers", type=int, default=0, help="datatrove interpreters (default: min(4, cores))")
    ap.add_argument("--list", action="store_true", help="print every disagreement")
    ap.add_argument("--json", default="", help="write the table and the disagreements here")
    ap.add_argument("--filters", default="", help="take the recipes from this folder instead of filters/")
    ap.add_argument("--cost", action="store_true", help="measure the cost of our side instead (default corpus dolma_cc)")
    args = ap.parse_args()
    filters = Path(args.filters) if args.filters else None

    names = set(filter(None, args.corpora.split(","))) or None
    if args.cost:
        corpora = P.real_corpora(Path(args.data), names=names or {"dolma_cc"})
        if names and "curate_sample" in names:
            with tempfile.TemporaryDirectory(prefix="eval-parity-") as tmp:
                corpora["curate_sample"] = P.sample_corpus(Path(tmp) / "sample", docs=args.sample_docs)
        texts = [t for docs in corpora.values() for _, t in docs]
        if not texts:
            print(f"no corpora under {args.data}", file=sys.stderr)
            return 1
        print(f"{len(texts)} documents ({', '.join(corpora)}), {sum(map(len, texts)) / 1e6:.2f} M characters; "
              f"recipes from {filters or P.ROOT / 'filters'}; one core, best of 3, CPU time")
        for part, rate in P.cost(texts, filters).items():
            print(f"  {part:24} {rate:10,.0f} docs/s")
        return 0
    corpora = P.real_corpora(Path(args.data), names=names)
    with tempfile.TemporaryDirectory(prefix="eval-parity-") as tmp:
        if not args.no_sample and (names is None or "curate_sample" in names):
            corpora["curate_sample"] = P.sample_corpus(Path(tmp) / "sample", docs=args.sample_docs)
        if not corpora:
            print(f"no corpora under {args.data}", file=sys.stderr)
            return 1
        for name, docs in corpora.items():
            what = P.CORPORA[name][0] if name in P.CORPORA else f"curate.sample make_sample(docs={args.sample_docs}, seed=0)"
            print(f"{name:18} {len(docs):5} docs {sum(len(t) for _, t in docs) / 1e6:6.2f} MB  {what}")
        for folder, why in P.SKIPPED.items():
            print(f"skipped {folder}: {why}")
        scratch = Path(tmp) / "dt"
        scratch.mkdir()
        result = P.run_parity(corpora, scratch, workers=args.workers or None, filters=filters)
    print()
    print(P.report(result))
    by_class = Counter((name, ds, cls) for name, ds, _id, _o, _t, cls in result["disagreements"])
    print("\ndisagreements by corpus and class:")
    for (name, ds, cls), n in sorted(by_class.items()):
        print(f"  {name:18} {ds:18} {cls:14} {n}")
    if args.list:
        print("\nevery disagreement (recipe, corpus, id, ours, datatrove's, class):")
        for d in result["disagreements"]:
            print("  " + " | ".join(str(x) for x in d))
    if args.json:
        table = P.agreement_table(result)
        Path(args.json).write_text(json.dumps({
            "agreement": {f"{r}|{d}": list(v) for (r, d), v in table.items()},
            "first_reason": P.first_reason_table(result),
            "disagreements": result["disagreements"],
        }, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
