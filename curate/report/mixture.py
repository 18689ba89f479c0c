"""The mixture and the packed outputs: the plan (available, chosen tokens, epochs) against the tokens
written, packing density, and how full the packed sequences are.

Plan and outputs come from the manifest (else the mix and pack records). Sequence fill is read from the
Megatron `.idx` files alone (never the `.bin`): with the `chunks` layout a Megatron document is one packed
sequence, so its length is the sum of its chunks. A large index is read in a few windows spread over
the file (at most `MAX_SEQUENCES` sequences per source).
"""

from __future__ import annotations

from html import escape

from curate.report import page, svg
from curate.report.palette import ESTIMATE
from curate.report.section import Section
from curate.report.sections import num, pct, swatch
from curate.report.svg import Mark, Series, compact

import struct

import numpy as np

from curate.io import fs
from curate.report.context import RunView
from curate.rundir import MixRecord, PackRecord
from curate.tokens.megatron import MAGIC, VERSION

MAX_SEQUENCES = 200_000
WINDOWS = 4
HEADER = len(MAGIC) + 8 + 1 + 8 + 8   # magic, version, dtype code, sequences, document indices


def plan(run: RunView) -> dict | None:
    manifest = run.manifest or {}
    if manifest.get("mixture", {}).get("sources"):
        m = manifest["mixture"]
        return {"mode": m.get("mode"), "total_tokens": m.get("total_tokens"), "sources": m["sources"], "from": "manifest"}
    for stage in run.stages_of("mix"):
        record = run.dir.find_record(stage, MixRecord)
        if record is None:
            continue
        written = {}
        for pstage in run.stages_of("pack"):
            pack = run.dir.find_record(pstage, PackRecord)
            if pack is not None:
                written = pack.outputs
        sources = {s: {**p, **({"tokens": written[s]["tokens"], "documents": written[s]["documents"]} if s in written else {})}
                   for s, p in record.plan.get("sources", {}).items()}
        return {"mode": record.plan.get("mode"), "total_tokens": record.plan.get("total_tokens"), "sources": sources,
                "from": "mix record"}
    return None


def packing(run: RunView) -> dict | None:
    pack = None
    for stage in run.stages_of("pack"):
        pack = run.dir.find_record(stage, PackRecord) or pack
    if pack is None:
        return None
    info = dict((run.manifest or {}).get("packing") or {})
    outputs = pack.outputs
    if not info:
        tokens = sum(o["tokens"] for o in outputs.values())
        sequences = sum(o["sequences"] for o in outputs.values())
        info = {"method": pack.method, "sequences": sequences,
                "density": tokens / (sequences * pack.seq_len) if sequences else 0.0}
    fill = {}
    if "megatron" in pack.formats:
        for source, out in outputs.items():
            prefix = run.path(out["prefix"])
            if out.get("sequences") and fs.exists(prefix + ".idx"):
                fill[source] = sequence_lengths(prefix, pack.method)
    return {**info, "seq_len": pack.seq_len, "method": pack.method, "formats": pack.formats, "outputs": outputs, "fill": fill}


def sequence_lengths(prefix: str, method: str, limit: int = MAX_SEQUENCES) -> dict:
    """Token lengths of packed sequences from `prefix.idx`: all of them, or `WINDOWS` spread windows."""
    filesystem, path = fs.filesystem(prefix + ".idx")
    with filesystem.open(path + "", "rb") as f:
        head = f.read(HEADER)
        if head[: len(MAGIC)] != MAGIC or struct.unpack_from("<Q", head, len(MAGIC))[0] != VERSION:
            raise ValueError(f"{prefix}.idx is not a Megatron index")
        n, d = struct.unpack_from("<QQ", head, len(MAGIC) + 9)
        lengths_at, docs_at = HEADER, HEADER + 12 * n
        if method == "none":  # one Megatron sequence per document: its length is what there is
            ranges = _windows(n, limit)
            out = [np.frombuffer(_read(f, lengths_at + 4 * a, 4 * (b - a)), "<i4") for a, b in ranges]
            return {"lengths": np.concatenate(out).astype(np.int64), "total": int(n)}
        sequences = d - 1
        out = []
        for a, b in _windows(sequences, limit):
            bounds = np.frombuffer(_read(f, docs_at + 8 * a, 8 * (b - a + 1)), "<i8")
            lo, hi = int(bounds[0]), int(bounds[-1])
            chunk = np.frombuffer(_read(f, lengths_at + 4 * lo, 4 * (hi - lo)), "<i4").astype(np.int64)
            starts = bounds[:-1] - lo
            sums = np.add.reduceat(chunk, starts) if len(chunk) else np.zeros(len(starts), np.int64)
            sums[np.diff(bounds) == 0] = 0
            out.append(sums)
        return {"lengths": np.concatenate(out) if out else np.zeros(0, np.int64), "total": int(sequences)}


def _windows(n: int, limit: int) -> list[tuple[int, int]]:
    if n <= limit:
        return [(0, n)] if n else []
    size = limit // WINDOWS
    starts = [int(i * (n - size) / (WINDOWS - 1)) for i in range(WINDOWS)]
    return [(s, s + size) for s in starts]


def _read(f, offset: int, size: int) -> bytes:
    f.seek(offset)
    data = f.read(size)
    if len(data) != size:
        raise ValueError("a Megatron index is shorter than its header says")
    return data


# ---- mixture and packing --------------------------------------------------------------------------

def section(plan: dict | None, packing: dict | None, colors: dict) -> str:
    if plan is None and packing is None:
        return page.section("mixture", "Mixture and packing", "", page.note("The run has no mixture plan or packed output yet."))
    figs, tables = [], []
    if plan is not None:
        src = [s for s in colors if s in plan["sources"]]
        p = plan["sources"]
        series = [Series("available (estimated)", ESTIMATE, [p[s].get("available_tokens") for s in src]),
                  Series("planned", "#4e79a7", [p[s].get("chosen_tokens") for s in src])]
        if any("tokens" in p[s] for s in src):
            series.append(Series("written", "#102a43", [p[s].get("tokens") for s in src]))
        figs.append(page.figure("Mixture: plan against tokens written", svg.bars(src, series, value_label="tokens", horizontal=False,
                                                                                 label="mixture plan vs written"),
                                f"Per source: tokens available after the filters (estimated by the mix step from characters), "
                                f"the plan's tokens (mode <code>{escape(str(plan['mode']))}</code>) and the tokens written to "
                                "<code>tokens/</code> (EOS and repeated documents included)."))
        ep = Series("epochs", "#4e79a7", [p[s].get("epochs") for s in src])
        figs.append(page.figure("Epochs per source", svg.bars(src, [ep], value_label="epochs (planned)", horizontal=False,
                                                              marks=[Mark(1.0, "1 epoch")], fmt=lambda v: f"{v:.3g}", label="epochs"),
                                "How many times each source's available tokens are used: below 1 down-samples "
                                "(mix:downsampled in the ledger), above 1 repeats documents whole."))
        total_written = sum(p[s].get("tokens") or 0 for s in src)
        rows = [[f"{swatch(colors[s])}{escape(s)}", num(p[s].get("weight")), compact(p[s].get("available_tokens")),
                 compact(p[s].get("chosen_tokens")), compact(p[s].get("tokens")) if "tokens" in p[s] else "-",
                 pct(p[s].get("tokens") or 0, total_written) if total_written else "-", f"{p[s].get('epochs', 0):.3f}",
                 num(p[s].get("documents"))] for s in src]
        tables.append(page.table(["source", "weight", "available ≈", "planned", "written", "share written", "epochs", "documents"],
                                 rows, {1, 2, 3, 4, 5, 6, 7}, raw=True))
    if packing is not None:
        fill = packing["fill"]
        if fill:
            edges = [i / 20 for i in range(21)]
            src = [s for s in colors if s in fill]
            series = []
            for s in src:
                lengths = fill[s]["lengths"]
                counts = [0] * 20
                for v in (lengths / packing["seq_len"]).tolist():
                    counts[min(19, max(0, int(v * 20 - 1e-9)))] += 1
                series.append(Series(s, colors[s], counts))
            sampled = sum(len(fill[s]["lengths"]) for s in src)
            total = sum(fill[s]["total"] for s in src)
            how = (" With method none every document is its own sequence: this is document length over seq_len, longer "
                   "documents counted in the last bin." if packing["method"] == "none" else "")
            cap = (f"Packed sequences by how much of seq_len = {packing['seq_len']} they fill (method "
                   f"<code>{escape(packing['method'])}</code>), stacked by source; read from the Megatron <code>.idx</code> files"
                   + (f" ({num(sampled)} of {num(total)} sequences, in windows spread over each file)." if sampled < total else ".")
                   + how)
            figs.append(page.figure("Sequence fill", svg.histogram(edges, series, x_label="tokens / seq_len", y_label="sequences",
                                                                   stacked=True, label="sequence fill"), cap))
        items = [("packing density", f"{100 * packing.get('density', 0):.2f}%"), ("sequences", num(packing.get("sequences"))),
                 ("seq_len", num(packing["seq_len"])), ("method", str(packing["method"]))]
        if packing.get("split_share") is not None:
            items.append(("documents split", f"{100 * packing['split_share']:.2f}%"))
        tables.insert(0, page.cards(items))
    return page.section("mixture", "Mixture and packing", "The planned mixture against what was written, and how well it packs. "
                        "Density = tokens / (sequences x seq_len).", '<div class="grid">' + "".join(figs) + "</div>" + "".join(tables))


SECTION = Section("mixture", "Mixture & packing", lambda run: (plan(run), packing(run)), lambda run, data, colors: section(*data, colors))
