"""The manifest's body from the records of a finished run: what was packed per source, the mixture as
planned and as written, the Megatron data path, the tokenizer, packing statistics and the accounting.

Plain data in, plain data out: the manifest stage reads the records from the run directory and passes them here.
"""

from __future__ import annotations

import logging

from curate.errors import CurateError
from curate.tokens.repetition import effective_tokens

log = logging.getLogger("curate")


def manifest_body(pipeline: dict, tok, pack, plan: dict | None, priority: list[str], accounting: list[dict],
                  models: dict, step: str) -> dict:
    """The body of `manifest.json` (the computed keys, files and versions, are added when it is written).
    `pipeline` is {name, hash, resolved}; `tok` and `pack` the tokenize and pack records; `plan` the mix's, if any."""
    outputs = {s: {k: pack.outputs[s][k] for k in ("prefix", "documents", "tokens", "sequences")}
               for s in priority if s in pack.outputs}  # records are JSON with sorted keys
    total_tokens = sum(o["tokens"] for o in outputs.values()) or 1
    sequences = sum(o["sequences"] for o in outputs.values())
    split = sum(o["docs_split"] for o in pack.outputs.values())
    # split_share is of the document copies packed (a document the mix repeats is packed, and maybe split, once per copy)
    docs_packed = sum(o.get("copies", o["documents"]) for o in pack.outputs.values())
    mixture_sources = {}
    for source, out in outputs.items():
        p = (plan or {}).get("sources", {}).get(source, {})
        available, chosen = p.get("available_tokens", out["tokens"]), p.get("chosen_tokens", out["tokens"])
        mixture_sources[source] = {"weight": p.get("weight"), "available_tokens": available, "chosen_tokens": chosen,
                                   "epochs": p.get("epochs", 1.0),  # the plan's worth in fresh tokens (no mix: all fresh)
                                   "effective_tokens": p.get("effective_tokens", effective_tokens(chosen, available)),
                                   "documents": out["documents"], "tokens": out["tokens"]}
    body = {
        "pipeline": pipeline,
        "tokenizer": {"name": tok.name, "identity": tok.identity, "vocab_size": tok.vocab_size, "eos_id": tok.eos_id,
                      "bos_id": tok.bos_id},
        "seq_len": pack.seq_len,
        "packing": {"method": pack.method, "density": total_tokens / (sequences * pack.seq_len) if sequences else 0.0,
                    "split_share": split / docs_packed if docs_packed else 0.0, "sequences": sequences},
        "mixture": {"mode": plan["mode"] if plan else "none", "seed": plan["seed"] if plan else 0,
                    "total_tokens": plan.get("total_tokens") if plan else None, "sources": mixture_sources,
                    "effective_tokens": sum(m["effective_tokens"] for m in mixture_sources.values()),
                    **({"allow_epochs": plan["allow_epochs"]} if plan and "allow_epochs" in plan else {})},
        "megatron_data_path": " ".join(f"{o['tokens'] / total_tokens:.6f} {o['prefix']}" for o in outputs.values() if o["tokens"]),
        "outputs": outputs,
        "accounting": accounting,
    }
    if models:
        body["models"] = models
    if empty := [s for s, o in outputs.items() if not o["tokens"]]:
        body["empty_sources"] = empty  # their .bin is empty: Megatron cannot map it, so the data path leaves them out
        log.warning("%s: no tokens from %s: left out of megatron_data_path", step, ", ".join(empty))
    if len(empty) == len(outputs):
        raise CurateError("no tokens were written: every source is empty after the filters and the mixture")
    return body


def write_and_verify(root: str, body: dict, files: list[str], known: dict[str, tuple[int, str]] | None = None) -> dict:
    """Write `RUN/manifest.json` for `body` and `files` (`known`: digests the caller vouches for, not read to write
    it), then re-hash every file, those too; a mismatch is an error. Returns the manifest."""
    from curate.manifest.build import write_manifest
    from curate.manifest.verify import verify

    manifest = write_manifest(root, body, files, known=known)
    if problems := verify(root):
        raise CurateError("the manifest does not verify:\n" + "\n".join(problems[:20]))
    return manifest
