"""Benchmark: the GPU half of curate on one GPU machine, every figure in one command (issue 34).

Sections, each printed as it ends and saved to OUT/bench_gpu.json (a failed section prints its error and
the others still run):

1. correct: a DeBERTa-v3-base-size model in NeMo Curator's quality-classifier layout (kind nemo_quality) and a
   BERT-base regression head (kind hf, FineWeb-Edu's shape), random weights from configs with heads spread
   over the texts' features, scored by curate on CPU fp32, on CUDA fp32 and on CUDA under bf16 autocast:
   label agreement and score differences, and the bf16 run again in shuffled order with another batch size.
2. speed: docs/s per GPU at 512 tokens over real-length text cycled to --docs documents, through the classify
   stage's own loop (`scored_batches`: the next batch is tokenized while the GPU runs this one), with the GPU's
   utilisation sampled through NVML, against a plain `transformers` pipeline (bf16 weights) on the same GPU and
   the first --pipe-docs of the same texts; a short torch.profiler table says what the GPU spends its time on.
3. tokenize: `curate run` of ingest -> tokenize -> pack on every core, the tokenize actors declaring a share of
   the GPU (so Ray places them on the GPU node), against HF `tokenizers` encode_batch on the same cores and texts.
4. job: `curate run pipelines/zyda2.yaml` over a generated corpus of --job-docs documents with the DeBERTa-size
   model of section 1 as the quality classifier on the GPU, once per --job-runs CPUS:SHARE (taskset, and the
   model actors' num_gpus): stage times, docs/s, peak memory, MinHash docs/s against NeMo's per-GPU figure.

Texts: the DCLM human-judged pages (../shared/data/dclm/data, 780 real web pages) or --texts DIR of JSONL files with
a `text` field; else the sample corpus's FineWeb-Edu texts. Without CUDA every section runs on the CPU with tiny
models (--size tiny): a smoke run of the same code, not a measurement.

    python bench/bench_gpu.py --out /tmp/gpu [--only correct,speed,tokenize,job] [--docs 50000] [--job-docs 100000]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from inputs import sample_texts, save_tokenizer  # noqa: E402  (bench/inputs.py, beside this script)
DCLM = ROOT.parent / "shared" / "data" / "dclm" / "data"
NEMO_FLOOR = 500  # docs/s per GPU: NeMo Curator's nightly floor for its 512-token DeBERTa classifier
NEMO_MINHASH_PER_GPU = 1.05e9 / 466 / 8  # docs/s per GPU: NeMo Curator's GPU MinHash nightly, 1.05B docs in 466 s on 8 GPUs
LABELS = ["High", "Medium", "Low"]
SIZES = {  # encoder dimensions: the real base size, and a tiny one for smoke runs on a CPU
    "base": {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072},
    "tiny": {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128},
}


def load_texts(folder: str | None) -> tuple[list[str], dict[str, int], str]:
    """(distinct texts, the 0/1 quality label of those that have one (DCLM's human judgements), where from)."""
    files = sorted(glob.glob(os.path.join(folder or str(DCLM), "*.jsonl")))
    rows = [json.loads(line) for f in files for line in open(f, encoding="utf-8")]
    labels = {r["text"]: int(r["label"]) for r in rows if r.get("text") and r.get("label") in (0, 1)}
    texts = [r["text"] for r in rows if r.get("text")]
    if texts:
        return list(dict.fromkeys(texts)), labels, f"{len(files)} JSONL files of {folder or DCLM}"
    from curate.sample import text as T

    rng = random.Random(0)
    junk = [T.junk_page(rng)[0] for _ in range(500)]
    good = sample_texts(4000, "fwe")
    return good + junk, {**dict.fromkeys(good[:500], 1), **dict.fromkeys(junk, 0)}, "the sample corpus's FineWeb-Edu texts and junk pages"


def finetune(kind: str, folder: Path, labels: dict[str, int], steps: int, device: str) -> dict:
    """Train the random model for `steps` steps (batch 16, 256 tokens, AdamW 3e-5, bf16 autocast on CUDA) on the
    texts' 0/1 labels, and save it where it was: a random model's margins are within half precision's rounding, a
    trained one's are not, and it is a trained model's label fidelity that decides the dtype to run in. nemo: label
    1 is High, 0 Low (cross-entropy); hf regression: 4.0 and 1.0 (squared error)."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from curate.models.hf import quiet
    from curate.models.load import load_model

    with quiet():
        tok = AutoTokenizer.from_pretrained(folder)
        if kind == "nemo_quality":
            module = load_model(spec_for(kind, folder, dtype="float32"), device=device).module
            forward = lambda ids, mask: module(ids, mask)
        else:
            module = AutoModelForSequenceClassification.from_pretrained(folder).to(device)
            forward = lambda ids, mask: module(input_ids=ids, attention_mask=mask).logits
    module.train()
    texts = list(labels)
    target = {1: (0, 4.0), 0: (2, 1.0)}   # (class: High / Low, regression target)
    opt = torch.optim.AdamW(module.parameters(), lr=3e-5)
    rng = random.Random(0)
    amp = torch.autocast("cuda", dtype=torch.bfloat16) if device.startswith("cuda") else torch.autocast("cpu", enabled=False)
    losses = []
    for _ in range(steps):
        batch = rng.sample(texts, min(16, len(texts)))
        enc = tok(batch, truncation=True, max_length=256, padding=True, return_tensors="pt").to(device)
        with amp:
            logits = forward(enc["input_ids"], enc["attention_mask"]).float()
        if kind == "nemo_quality":
            y = torch.tensor([target[labels[t]][0] for t in batch], device=device)
            loss = torch.nn.functional.cross_entropy(logits, y)
        else:
            y = torch.tensor([target[labels[t]][1] for t in batch], device=device)
            loss = torch.nn.functional.mse_loss(logits[:, 0], y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    module.eval()
    if kind == "nemo_quality":
        from safetensors.torch import save_file

        save_file({k: v.detach().contiguous().cpu() for k, v in module.state_dict().items()}, str(folder / "model.safetensors"))
    else:
        with quiet():
            module.save_pretrained(folder)
    first, last = np.mean(losses[: max(1, steps // 10)]), np.mean(losses[-max(1, steps // 10):])
    return {"steps": steps, "loss_first_tenth": round(float(first), 4), "loss_last_tenth": round(float(last), 4)}


def cycled(texts: list[str], n: int) -> list[str]:
    return [texts[i % len(texts)] for i in range(n)]


# ---- models ------------------------------------------------------------------------------------------------
def features(encoder, tok, texts: list[str], device: str, first_token: bool):
    """fp32 features of the texts: the first token's last hidden state, or BERT's pooled output."""
    import torch

    out = []
    with torch.inference_mode():
        for i in range(0, len(texts), 16):
            batch = tok(texts[i:i + 16], truncation=True, max_length=512, padding=True, return_tensors="pt").to(device)
            batch.pop("token_type_ids", None)
            o = encoder(**batch)
            out.append(o.last_hidden_state[:, 0] if first_token else o.pooler_output)
    return torch.cat(out).double()


def spread_head(linear, x, offset: float) -> None:
    """Point a random head along the features' main directions, outputs std 1.5 around `offset`: a random
    encoder's features differ little between texts, and a head that ignores that gives every text one label."""
    import torch

    mean = x.mean(0)
    _, s, vt = torch.linalg.svd(x - mean, full_matrices=False)
    w = vt[:linear.out_features] / s[:linear.out_features, None] * (len(x) ** 0.5) * 1.5
    with torch.no_grad():
        linear.weight.copy_(w.float())
        linear.bias.copy_((offset - w @ mean).float())


def build_nemo(texts: list[str], root: Path, size: str, device: str, init: float) -> Path:
    """NeMo's quality-classifier layout: config.json naming a DeBERTa-v3-base-size `base_model` folder, weights
    `model.*` (the encoder) and `fc.*` (the head) in model.safetensors."""
    import torch
    from safetensors.torch import save_file
    from transformers import AutoModel, DebertaV2Config

    ckpt, base = root / "nemo", root / "nemo_base"
    base.mkdir(parents=True, exist_ok=True)   # a second call on the same work folder builds it again
    tok = save_tokenizer(texts, ckpt, unigram=True)
    cfg = DebertaV2Config(vocab_size=128100, max_position_embeddings=512, relative_attention=True, position_buckets=256,
                          norm_rel_ebd="layer_norm", share_att_key=True, pos_att_type=["p2c", "c2p"], layer_norm_eps=1e-7,
                          position_biased_input=False, type_vocab_size=0, pad_token_id=0, max_relative_positions=-1,
                          initializer_range=init, **SIZES[size])
    cfg.save_pretrained(base)
    torch.manual_seed(7)
    encoder = AutoModel.from_config(cfg).to(device).eval()
    fc = torch.nn.Linear(cfg.hidden_size, len(LABELS)).to(device)
    spread_head(fc, features(encoder, tok, texts[:256], device, first_token=True), 0.0)
    state = {f"model.{k}": v.detach().contiguous().cpu() for k, v in encoder.state_dict().items()}
    state.update({"fc.weight": fc.weight.detach().cpu(), "fc.bias": fc.bias.detach().cpu()})
    save_file(state, str(ckpt / "model.safetensors"))
    (ckpt / "config.json").write_text(json.dumps({
        "base_model": str(base), "fc_dropout": 0.2, "max_len": 512,
        "id2label": dict(enumerate(LABELS)), "label2id": {lb: i for i, lb in enumerate(LABELS)}}))
    return ckpt


def build_bert(texts: list[str], root: Path, size: str, device: str, init: float) -> Path:
    """A BERT-base-size regression model (one logit, FineWeb-Edu's classifier shape), scores around 2.5."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    folder = root / "bert"
    tok = save_tokenizer(texts, folder, unigram=False)
    torch.manual_seed(1)
    model = BertForSequenceClassification(BertConfig(num_labels=1, initializer_range=init, **SIZES[size])).to(device).eval()
    spread_head(model.classifier, features(model.bert, tok, texts[:256], device, first_token=False), 2.5)
    model.save_pretrained(folder)
    return folder


# ---- measuring -----------------------------------------------------------------------------------------------
class GpuSampler:
    """The GPU's utilisation (NVML, every 50 ms) while in a `with` block: mean and share of samples above 90%."""

    def __init__(self):
        self.samples: list[int] = []
        self._stop = threading.Event()

    def __enter__(self):
        try:
            import pynvml

            pynvml.nvmlInit()
            handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        except Exception:  # noqa: BLE001 - no NVML (CPU smoke run): no samples
            return self

        def sample():
            while not self._stop.wait(0.05):
                self.samples.append(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu)
        self._thread = threading.Thread(target=sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if hasattr(self, "_thread"):
            self._thread.join()

    def summary(self) -> dict:
        s = np.array(self.samples or [0])
        return {"gpu_util_mean": round(float(s.mean()), 1), "gpu_util_over_90": round(float((s >= 90).mean()), 3)}


def sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def spec_for(kind: str, folder: Path, **extra):
    from curate.models.spec import ModelSpec

    name = "q" if kind == "nemo_quality" else "edu"
    return ModelSpec(name, kind, str(folder), max_tokens=512, **extra)


def labels_of(kind: str, table: pa.Table) -> np.ndarray:
    """nemo: the label; hf regression: FineWeb-Edu's int_score (round(clip(score, 0, 5)))."""
    if kind == "nemo_quality":
        return np.array(table.column("q_label").to_pylist())
    return np.clip(np.round(table.column("edu_score").to_numpy()), 0, 5).astype(int)


def scores_of(kind: str, table: pa.Table) -> np.ndarray:
    cols = [c for c in table.column_names if "_prob_" in c] if kind == "nemo_quality" else ["edu_score"]
    return np.stack([table.column(c).to_numpy(zero_copy_only=False) for c in cols], axis=1)


def compare(kind: str, a: pa.Table, b: pa.Table) -> dict:
    d = np.abs(scores_of(kind, a) - scores_of(kind, b)).max(axis=1)
    return {"docs": a.num_rows, "labels_equal": round(float((labels_of(kind, a) == labels_of(kind, b)).mean()), 5),
            "max_abs_diff": float(d.max()), "p99_abs_diff": float(np.quantile(d, 0.99))}


def section_correct(models: dict, texts: list[str], args, device: str) -> dict:
    from curate.models.load import load_model

    out = {}
    docs = pa.array(cycled(texts, args.agree_docs))
    small = docs.slice(0, args.cpu_docs)
    for kind, folder in models.items():
        t0 = time.perf_counter()
        cpu = load_model(spec_for(kind, folder, dtype="float32"), device="cpu", threads=os.cpu_count()).score(small)
        cpu_s = time.perf_counter() - t0
        fp32 = load_model(spec_for(kind, folder, dtype="float32"), device=device).score(docs)
        bf16_model = load_model(spec_for(kind, folder, dtype="bfloat16"), device=device)
        bf16 = bf16_model.score(docs)
        fp16 = load_model(spec_for(kind, folder, dtype="float16"), device=device).score(docs)
        order = np.random.default_rng(0).permutation(len(docs))
        other = load_model(spec_for(kind, folder, dtype="bfloat16", batch_tokens=bf16_model.batch_tokens // 4), device=device)
        shuffled = other.score(docs.take(pa.array(order)))
        back = shuffled.take(pa.array(np.argsort(order)))
        few = docs.slice(0, args.cpu_docs * 8)   # fp32's order check on fewer documents: fp32 is the slow one
        order_few = np.random.default_rng(1).permutation(len(few))
        fp32_other = load_model(spec_for(kind, folder, dtype="float32", batch_tokens=bf16_model.batch_tokens // 4), device=device)
        fp32_back = fp32_other.score(few.take(pa.array(order_few))).take(pa.array(np.argsort(order_few)))
        out[kind] = {
            "cpu_fp32_vs_device_fp32": compare(kind, cpu, fp32.slice(0, len(small))),
            "cpu_fp32_vs_device_bf16": compare(kind, cpu, bf16.slice(0, len(small))),
            "device_fp32_vs_device_bf16": compare(kind, fp32, bf16),
            "device_fp32_vs_device_fp16": compare(kind, fp32, fp16),
            "bf16_shuffled_and_rebatched": compare(kind, bf16, back),
            "fp32_shuffled_and_rebatched": compare(kind, fp32.slice(0, len(few)), fp32_back),
            "label_shares_fp32": {str(k): round(float(v), 3) for k, v in zip(*np.unique(labels_of(kind, fp32), return_counts=True))},
            "cpu_seconds_wall": round(cpu_s, 1),
        }
        print(f"  {kind}: " + json.dumps(out[kind]), flush=True)
    return out


def section_speed(models: dict, texts: list[str], args, device: str) -> dict:
    import torch

    from curate.models.load import load_model
    from curate.models.overlap import scored_batches

    out = {}
    docs = cycled(texts, args.docs)
    for kind, folder in models.items():
        if kind not in args.speed_models.split(","):
            continue
        model = load_model(spec_for(kind, folder, dtype="bfloat16"), device=device)
        model.score(pa.array(docs[:512]))
        sync()
        model.timings = {"tokenize": 0.0, "infer": 0.0}
        batches = [pa.table({"id": [str(i) for i in range(s, min(s + args.batch_docs, len(docs)))],
                             "text": docs[s:s + args.batch_docs]}) for s in range(0, len(docs), args.batch_docs)]
        with GpuSampler() as gpu:
            t0 = time.perf_counter()
            for _ in scored_batches(model, batches):
                pass
            sync()
            wall = time.perf_counter() - t0
        lengths = model.tokens.encode(docs[:2000])[1]
        row = {"docs": len(docs), "seconds": round(wall, 2), "docs_per_s": round(len(docs) / wall, 1),
               "vs_nemo_floor": round(len(docs) / wall / NEMO_FLOOR, 2), "batch_tokens": model.batch_tokens,
               "batch_docs": args.batch_docs, "tokens_per_doc": round(float(np.minimum(lengths + 2, 512).mean()), 1),
               "tokenize_seconds": round(model.timings["tokenize"], 2), "infer_seconds": round(model.timings["infer"], 2),
               **gpu.summary()}
        sub = docs[:args.pipe_docs]
        ours_sub = warm_seconds(model, sub)
        row["curate_fp16_same_docs_per_s"] = round(len(sub) / warm_seconds(load_model(spec_for(kind, folder, dtype="float16"),
                                                                                       device=device), sub), 1)
        pipe_s = pipeline_seconds(kind, folder, sub, device, args.pipe_batch)
        row.update({"pipe_docs": len(sub), "curate_same_docs_per_s": round(len(sub) / ours_sub, 1),
                    "pipeline_docs_per_s": round(len(sub) / pipe_s, 1), "pipeline_batch": args.pipe_batch,
                    "vs_pipeline": round(pipe_s / ours_sub, 2)})
        if device.startswith("cuda"):
            row["profile"] = profile(model, docs[:4096])
        out[kind] = row
        print(f"  {kind}: " + json.dumps({k: v for k, v in row.items() if k != "profile"}), flush=True)
        print(row.get("profile", ""), flush=True)
        del model
        torch.cuda.empty_cache() if torch.cuda.is_available() else None
    return out


def warm_seconds(model, texts: list[str]) -> float:
    """Seconds for one `score` call over the texts, after a first call over the same texts: every padded shape is then
    one the GPU libraries have planned (a cold pass of new shapes measures cuDNN's planning, not the model)."""
    model.score(pa.array(texts))
    sync()
    t0 = time.perf_counter()
    model.score(pa.array(texts))
    sync()
    return time.perf_counter() - t0


def pipeline_seconds(kind: str, folder: Path, texts: list[str], device: str, batch: int) -> float:
    """A plain transformers pipeline over the texts with bf16 weights (the encoder's computation is the same; the
    NeMo layout is not an AutoModel, so its encoder runs as DebertaV2ForSequenceClassification)."""
    import torch
    from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer, pipeline

    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    if kind == "nemo_quality":
        cfg = AutoConfig.from_pretrained(json.loads((folder / "config.json").read_text())["base_model"], num_labels=3)
        model = AutoModelForSequenceClassification.from_config(cfg).to(dtype)
    else:
        model = AutoModelForSequenceClassification.from_pretrained(folder, dtype=dtype)
    pipe = pipeline("text-classification", model=model.eval(), tokenizer=AutoTokenizer.from_pretrained(folder), device=device)
    pipe(texts, batch_size=batch, truncation=True, max_length=512)   # warm, as `warm_seconds` is
    sync()
    t0 = time.perf_counter()
    pipe(texts, batch_size=batch, truncation=True, max_length=512)
    sync()
    return time.perf_counter() - t0


def profile(model, texts: list[str]) -> str:
    """The top CUDA kernels of one call's batches: what bounds the GPU."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    prepared = model.prepare(pa.array(texts))
    with torch_profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        model.run(prepared)
        sync()
    return prof.key_averages().table(sort_by="cuda_time_total", row_limit=12, max_name_column_width=60)


def section_tokenize(texts: list[str], args, device: str) -> dict:
    """ingest -> tokenize -> pack over --tokenize-docs texts in 64 Parquet files, on every core."""
    import pyarrow.parquet as pq
    import ray

    import curate
    from curate.runner.progress import Progress
    from curate.tokens import load_tokenizer

    cores = len(os.sched_getaffinity(0))
    docs = cycled(texts, args.tokenize_docs)
    direct = load_tokenizer("gpt2", backend="hf").hf
    direct.encode_batch(docs[:1000])
    t0 = time.perf_counter()
    n_tokens = sum(len(e.ids) for e in direct.encode_batch(docs))
    t_direct = time.perf_counter() - t0
    with tempfile.TemporaryDirectory(prefix="bench-gpu-tok-") as tmp:
        files = 64
        for i in range(files):
            part = docs[i::files]
            pq.write_table(pa.table({"id": [f"{i}-{j}" for j in range(len(part))], "text": part}), f"{tmp}/t{i:03d}.parquet")
        gpus = 1 if device.startswith("cuda") else 0
        share = round(1.0 / cores, 4) if gpus else 0
        recipe = Path(tmp) / "p.yaml"
        recipe.write_text(f"name: tok\nsources: {{s: {{format: parquet, paths: '{tmp}/t*.parquet'}}}}\nstages:\n  ingest: {{}}\n"
                          f"  tokenize: {{tokenizer: gpt2, resources: {{num_cpus: 1, num_gpus: {share}}}}}\n"
                          "  pack: {seq_len: 2049, formats: [megatron]}\n")
        ray.init(address="local", num_cpus=cores, num_gpus=gpus, include_dashboard=False, log_to_driver=False)
        try:
            rows = curate.run_pipeline(curate.load_pipeline(str(recipe)), f"{tmp}/run", workers=cores, progress=Progress(quiet=True))
        finally:
            ray.shutdown()
        markers = [json.loads(p.read_text()) for p in Path(f"{tmp}/run/_state").rglob("*.json") if "tokenize" in p.parts]
        placed = sorted({",".join(m.get("gpus", [])) or "-" for m in markers if isinstance(m, dict) and "gpus" in m})
    seconds = {r["stage"]: r["wall_seconds"] for r in rows}
    t_ours = seconds.get("tokenize", 0) + seconds.get("pack", 0)
    out = {"docs": len(docs), "tokens": n_tokens, "cores": cores, "direct_seconds": round(t_direct, 2),
           "direct_mtok_per_s": round(n_tokens / t_direct / 1e6, 2), "tokenize_seconds": seconds.get("tokenize"),
           "pack_seconds": seconds.get("pack"), "curate_mtok_per_s": round(n_tokens / t_ours / 1e6, 2),
           "curate_vs_direct": round(t_direct / t_ours, 2), "tokenize_num_gpus_per_actor": share,
           "tokenize_tasks_gpus": placed}
    print("  " + json.dumps(out), flush=True)
    return out


def section_job(nemo: Path, args, save) -> dict:
    """The zyda2 recipe end to end over a generated corpus, the DeBERTa-size model as its quality classifier, once
    per --job-runs CPUS:SHARE (the cores it is pinned to, the model actors' num_gpus): a share below 1 puts more than
    one model actor on the GPU, so one reads, tokenizes and writes its shard while another's batch runs. Saved after
    every run, so a call cut short keeps the runs it finished."""
    from bench_scale import sampled

    from curate.sample import is_complete, make_sample

    corpus = Path(args.work) / f"sample-{args.job_docs}"
    t0 = time.perf_counter()
    if not is_complete(corpus):
        make_sample(corpus, docs=args.job_docs, seed=0)
    out = {"docs": args.job_docs, "generate_seconds": round(time.perf_counter() - t0, 1), "runs": {}}
    print(f"  generated {args.job_docs:,} documents in {out['generate_seconds']} s", flush=True)
    model = "stages.quality_model.models.zyda2_quality"
    for cpus, share in ((int(c), float(g)) for c, g in (r.split(":") for r in args.job_runs)):
        name = f"{cpus} CPUs, num_gpus {share:g}"
        run = Path(args.work) / f"job-{cpus}-{share:g}"
        subprocess.run(["rm", "-rf", str(run)], check=True)
        pin = ["taskset", "-c", f"0-{cpus - 1}"] if cpus < len(os.sched_getaffinity(0)) else []
        cmd = [*pin, sys.executable, "-m", "curate", "run", str(ROOT / "pipelines" / "zyda2.yaml"),
               "--output", str(run), "--workers", str(cpus), "--set", f"{model}.path={nemo}",
               "--set", f"{model}.standin=null", "--set", f"{model}.max_tokens=512",
               "--set", f"{model}.resources.num_gpus={share:g}"]
        returncode, sampler, total = sampled(cmd, corpus, run / "summary.json")
        if returncode != 0:
            out["runs"][name] = {"failed": "\n".join(sampler.lines[-15:])}
            print(f"  {name}: FAILED\n" + out["runs"][name]["failed"], flush=True)
            continue
        stages = {}
        for row in json.loads((run / "summary.json").read_text()):
            s = stages.setdefault(row["stage"], {"docs": 0, "seconds": row["wall_seconds"]})
            s["docs"] += row["in"]
        for s in stages.values():
            s["docs_per_s"] = round(s["docs"] / s["seconds"], 1) if s["seconds"] else None
        models = json.loads((run / "manifest.json").read_text()).get("models", {})
        minhash = stages.get("minhash", {}).get("docs_per_s") or 0
        out["runs"][name] = {
            "seconds": round(total, 1), "docs_per_s": round(args.job_docs / total, 1),
            "driver_peak_mb": round(sampler.driver_peak), "worker_peak_mb": round(max(sampler.worker.values(), default=0)),
            "cpu_seconds": round(sum(sampler.cpu.values()), 1), "stages": stages, "models": models,
            "minhash_docs_per_s": minhash, "minhash_vs_nemo_per_gpu": round(minhash / NEMO_MINHASH_PER_GPU, 3)}
        print(f"  {name}: " + json.dumps(out["runs"][name]), flush=True)
        save(out)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None, help="folder for bench_gpu.json (default: a temp folder)")
    ap.add_argument("--work", default=None, help="folder for models, corpora and runs (default: a temp folder)")
    ap.add_argument("--only", default="correct,speed,tokenize,job")
    ap.add_argument("--texts", default=None, help="a folder of JSONL files with a `text` field (default: DCLM's sample)")
    ap.add_argument("--size", choices=list(SIZES), default=None, help="encoder size (default: base on CUDA, tiny on CPU)")
    ap.add_argument("--init-range", type=float, default=0.1,
                    help="std of the random weights: at transformers' 0.02 a random encoder's features barely depend on the "
                         "text, so any head's margins are within bf16's rounding (a trained model's are not)")
    ap.add_argument("--finetune-steps", type=int, default=0,
                    help="train each random model this many steps on the texts' quality labels first (a trained model's "
                         "margins, for the bf16 comparison; ~300 on a GPU)")
    ap.add_argument("--docs", type=int, default=50000, help="documents for docs/s (texts cycled)")
    ap.add_argument("--batch-docs", type=int, default=8192, help="documents per stage batch (the classify option batch_docs)")
    ap.add_argument("--speed-models", default="nemo_quality,hf", help="the kinds the speed section measures")
    ap.add_argument("--pipe-docs", type=int, default=8192, help="documents for the pipeline comparison")
    ap.add_argument("--pipe-batch", type=int, default=64)
    ap.add_argument("--agree-docs", type=int, default=10000, help="documents for the fp32 / bf16 comparison")
    ap.add_argument("--cpu-docs", type=int, default=256, help="documents for the CPU fp32 comparison")
    ap.add_argument("--tokenize-docs", type=int, default=200000)
    ap.add_argument("--job-docs", type=int, default=100000)
    ap.add_argument("--job-runs", nargs="*", default=["16:1"],
                    help="one job run per CPUS:SHARE, in this order: the cores it is pinned to and the classifier's "
                         "num_gpus per actor (16:0.25 = 16 cores, four actors sharing the GPU)")
    args = ap.parse_args()

    # transformers' pipeline sets TOKENIZERS_PARALLELISM=false for the rest of the process unless it is set: then
    # every later Rust tokenizer call in this process runs on one core (the first GPU run measured that, not curate)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")
    import torch
    import transformers

    cuda = torch.cuda.is_available()
    device = "cuda:0" if cuda else "cpu"
    size = args.size or ("base" if cuda else "tiny")
    out_dir = Path(args.out or tempfile.mkdtemp(prefix="bench-gpu-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    args.work = args.work or tempfile.mkdtemp(prefix="bench-gpu-work-")
    texts, labels, origin = load_texts(args.texts)
    results = {"gpu": torch.cuda.get_device_name(0) if cuda else None, "torch": torch.__version__,
               "transformers": transformers.__version__, "cores": len(os.sched_getaffinity(0)), "size": size,
               "texts": f"{len(texts)} distinct texts from {origin}", "command": " ".join(sys.argv)}
    print(json.dumps(results), flush=True)

    def save():
        (out_dir / "bench_gpu.json").write_text(json.dumps(results, indent=1, default=str) + "\n")

    t0 = time.perf_counter()
    root = Path(args.work) / "models"
    models = {"nemo_quality": build_nemo(texts, root, size, device, args.init_range),
              "hf": build_bert(texts, root, size, device, args.init_range)}
    if args.finetune_steps:
        results["finetune"] = {kind: finetune(kind, folder, labels, args.finetune_steps, device) for kind, folder in models.items()}
        print("finetune: " + json.dumps(results["finetune"]), flush=True)
    results["build_seconds"] = round(time.perf_counter() - t0, 1)
    random.seed(0)
    for name in args.only.split(","):
        t0 = time.perf_counter()
        print(f"\n== {name}", flush=True)
        try:
            if name == "correct":
                results[name] = section_correct(models, texts, args, device)
            elif name == "speed":
                results[name] = section_speed(models, texts, args, device)
            elif name == "tokenize":
                results[name] = section_tokenize(texts, args, device)
            elif name == "job":
                results[name] = section_job(models["nemo_quality"], args, lambda part: (results.update(job=part), save()))
            else:
                raise SystemExit(f"unknown section {name}")
        except Exception:  # noqa: BLE001 - one failed section must not lose the others' figures
            results[name] = {"error": traceback.format_exc()}
            print(results[name]["error"], flush=True)
        results.setdefault("section_seconds", {})[name] = round(time.perf_counter() - t0, 1)
        save()
    print(f"\nsaved {out_dir / 'bench_gpu.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
