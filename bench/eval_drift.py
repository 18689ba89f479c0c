"""Sound vs unverified dedup on pages that drift between crawls (the corpus of tests/dedup/test_dedup_sound.py, larger).

Per mode: removals, unsupported removals (no kept document at exact char-25-gram Jaccard >= 0.8), recall on
clear duplicates (Jaccard >= 0.85 with a document of a higher-priority source; and, the part a sound method can
always reach, with a document of the cluster's top source), and the minhash + dedup stage time.

    python bench/eval_drift.py [--scale 4]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from curate.cli import main as curate  # noqa: E402
from test_dedup_sound import SOURCES, jaccard, kept_keys, make_corpus, pipeline, removed_of, shingles  # noqa: E402

MODES = {"unverified": ", mode: unverified", "pair verify 0.8": ", mode: unverified, verify: 0.8", "sound": ", mode: sound"}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        texts = make_corpus(tmp / "corpus", chains=14 * args.scale, groups=24 * args.scale, unrelated=100 * args.scale)
        sets = {k: shingles(v) for k, v in texts.items()}
        family: dict = {}
        for k in sets:
            family.setdefault(k[1].split("-")[0], []).append(k)
        clear, top_clear = set(), set()
        for keys in family.values():
            top = min(SOURCES.index(k[0]) for k in keys)
            for a in keys:
                for b in keys:
                    if SOURCES.index(b[0]) < SOURCES.index(a[0]) and jaccard(sets[a], sets[b]) >= 0.85:
                        clear.add(a)
                        if SOURCES.index(b[0]) == top:
                            top_clear.add(a)
        print(f"{len(texts)} documents; {len(clear)} clear duplicates, {len(top_clear)} of a top-source document\n")
        print(f"{'mode':16} {'removed':>8} {'unsupported':>12} {'recall':>7} {'recall (top)':>13} {'minhash+dedup s':>16}")
        for name, extra in MODES.items():
            out = tmp / name.replace(" ", "-")
            assert curate(["run", str(pipeline(tmp, tmp / "corpus", out.name, extra)), "--output", str(out), "--inline", "-q"]) == 0
            kept = kept_keys(out)
            gone = {(s, i) for s, i, _, _ in removed_of(out)}
            fam = lambda k: k[1].split("-")[0]  # noqa: E731 - pages of different families share no shingle
            bad = [g for g in gone if not any(jaccard(sets[g], sets[k]) >= 0.8 for k in family[fam(g)] if k in kept)]
            stages = {r["stage"]: r["wall_seconds"] for r in json.loads((out / "summary.json").read_text())}
            print(f"{name:16} {len(gone):8d} {len(bad):12d} {len(clear & gone) / len(clear):7.3f} "
                  f"{len(top_clear & gone) / len(top_clear):13.3f} {stages['minhash'] + stages['dedup']:16.2f}")


if __name__ == "__main__":
    main()
