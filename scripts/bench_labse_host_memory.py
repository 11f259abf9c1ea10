#!/usr/bin/env python
"""Host (CPU) memory of one LaBSE training worker at the paper's model size (issue 36): BERT base (12 x 768,
12 heads, 3072, max_len 128: models/labse/model.py DEFAULT_ENCODER) with a --vocab-entry WordPiece vocabulary
(default 501,153: the paper's; config/labse_2020.yaml uses 120,000).

Setup (this process): synthetic N-way lines (--langs, --lines training and --valid-lines held-out lines of
10-50 words) under --workdir, a WordPiece tokenizer.json of exactly --vocab entries in the package's format
(vocab.new_tokenizer + its WordPiece model: the synthetic words are whole entries, the rest filler), and the
token store of the lines made with token_store.build (int32 ids, as the rule labse_tokenize makes it) where
the trainer looks for it (token_store.store_dir).

(a) ``worker``, a fresh process: the real training entry point, ``trainer.train`` (stage dual, one process,
device cpu, fp32, --batch-size pairs, --updates updates; validation at update 0 and at the end, with its
checkpoints), its methods wrapped to read /proc/self/status (VmRSS, VmHWM, RssAnon, RssFile) and
/proc/self/smaps_rollup (Pss) after each phase: the token store opened, the model built, the optimiser made,
each checkpoint saved, each validation, and in every update the forward/backward, the gradient reduction and
the optimiser step. VmHWM is reset (/proc/self/clear_refs) after each reading, so each phase has its own peak.
On the CPU the weights' gradients, Adam's two moments and the activations are host memory; on a GPU they are
not: this is the CPU worker's figure, not a GPU worker's.

(b) ``pieces``, a fresh process for each --vocab: what a GPU worker keeps on the host, phase by phase, each
with its peak: the imports (torch, transformers, tokenizers, the trainer), the tokenizer, the token store
mapped with every id and offset read (RSS vs PSS: file pages in the page cache, shared by a node's ranks),
the dual encoder's epoch batch index at the UN size (--un-lines x --un-langs, batch 4096) and one collated
batch slice, the pre-training epoch order at that size (one, then two at an epoch's change), the model built
on the CPU as ``CheckpointedTraining.place`` does before ``.to(device)``, the master's checkpoint save
(``_on_cpu`` copies the weights and Adam's two moments to the host: clones of the same sizes, then
``torch.save``), the model moved off the host (``.to("meta")``: the CPU tensors are released as
``.to("cuda")`` releases them; whether the freed memory goes back to the OS is what is read), a checkpoint
load as every rank does on a resume and the dual stage does with its pre-training checkpoint
(``torch.load(map_location="cpu")`` of that weights + Adam-moments file) and its restore into the model and
an AdamW on the meta device (standing for the GPU), the master's validation (the similarity error matrix of
--un-langs x --valid-un-lines embeddings); for comparison, the same checkpoint loaded with ``mmap=True`` (not
what the package does) and every tensor read. Not measured (no GPU here), assumed: the CUDA context's host
memory (--cuda-context-gib a rank, default 1.0) and the CUDA build's libraries' file pages
(--cuda-libraries-gib a node, default 2.0; this CPU build's are measured, ~0.1 GiB).

Prints one JSON line (also written to --out) with both, and a per-node estimate for --ranks-per-node GPU
workers: each rank's anonymous memory at its worst phase + the assumed CUDA context, times the ranks, the
master's extra, plus once per node the shared file pages (the libraries; the UN token store, --un-tokens x
the store's bytes per token), and ``recommended_mem_mb`` (x --headroom). --estimate-from recomputes the
estimate of a previous run's JSON with other assumptions, without measuring. The run of docs/labse.md
(~8.5 min on 2 shared cores; the CPU worker peaks at ~12 GiB RSS, 12 GB of checkpoints are written):

    .venv/bin/python scripts/bench_labse_host_memory.py --vocab 501153 120000 --out /tmp/labse_host_memory.json
    .venv/bin/python scripts/bench_labse_host_memory.py --estimate-from /tmp/labse_host_memory.json --cuda-context-gib 1.5
"""
from __future__ import annotations

import argparse
import gc
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
MIB = 2 ** 20
GIB = 2 ** 30
PAPER_VOCAB = 501_153


# ---- readings -----------------------------------------------------------------------------------------

def reading() -> dict:
    """This process's memory now (bytes): /proc/self/status and smaps_rollup."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                out[key] = int(value.split()[0]) * 1024
    with open("/proc/self/smaps_rollup") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("Pss", "Pss_Anon", "Pss_File"):
                out[key] = int(value.split()[0]) * 1024
    return out


def reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as f:  # "5": VmHWM := the current RSS
        f.write("5")


class Recorder:
    """Readings after named phases; each phase's peak RSS is the VmHWM since the previous reading."""

    def __init__(self):
        self.rows, self.t0 = [], time.perf_counter()
        reset_peak()

    def mark(self, name: str, **extra) -> dict:
        gc.collect()
        r = reading()
        row = {"phase": name, "s": round(time.perf_counter() - self.t0, 1),
               "rss_mib": round(r["VmRSS"] / MIB), "anon_mib": round(r["RssAnon"] / MIB),
               "file_mib": round(r["RssFile"] / MIB), "pss_mib": round(r["Pss"] / MIB),
               "pss_file_mib": round(r["Pss_File"] / MIB), "peak_rss_mib": round(r["VmHWM"] / MIB), **extra}
        self.rows.append(row)
        print(f"[bench] {row}", file=sys.stderr, flush=True)
        reset_peak()
        return row


# ---- synthetic data -------------------------------------------------------------------------------------

def make_data(root: Path, langs, n_train: int, n_valid: int, vocab_size: int, seed: int = 0) -> tuple[Path, Path]:
    """N-way lines under root/data/tok, a tokenizer.json of exactly ``vocab_size`` entries, the token store."""
    import numpy as np

    from laser_repro.models.labse import token_store, vocab

    data = root / "data"
    (data / "tok").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    letters = list("abcdefghijklmnopqrstuvwxyz")
    words = sorted({"".join(rng.choice(letters, size=rng.integers(2, 10))) for _ in range(20000)})
    for split, n in (("train", n_train), ("valid", n_valid)):
        lengths = rng.integers(10, 51, size=n)
        for lang in langs:
            picks = rng.integers(0, len(words), size=int(lengths.sum()))
            cuts = np.cumsum(lengths)[:-1]
            text = "".join(" ".join(words[i] for i in line) + "\n" for line in np.split(picks, cuts))
            (data / "tok" / f"{split}.{lang}").write_text(text, encoding="utf-8")
    entries = [*vocab.SPECIAL_TOKENS, *letters, *("##" + c for c in letters), *words]
    filler = vocab_size - len(entries)
    if filler < 0:
        raise ValueError(f"--vocab {vocab_size} is below the {len(entries)} entries the synthetic lines need")
    entries += [f"##f{i}" if i % 2 else f"f{i}" for i in range(filler)]
    tok = vocab.new_tokenizer()
    tok.model = vocab._wordpiece({t: i for i, t in enumerate(entries)})
    vocab.add_post_processor(tok)
    tokenizer = root / "wordpiece" / f"v{vocab_size}" / "tokenizer.json"
    tokenizer.parent.mkdir(parents=True, exist_ok=True)
    tok.save(str(tokenizer))
    assert vocab.load(tokenizer).get_vocab_size() == vocab_size
    token_store.build(data, tokenizer, langs, token_store.store_dir(data, tokenizer))
    return data, tokenizer


# ---- (a) the real worker on the CPU --------------------------------------------------------------------

def run_worker(a) -> dict:
    rec = Recorder()
    rec.mark("python (stdlib)")
    import torch

    from laser_repro.models import training_loop
    from laser_repro.models.labse import token_store, trainer
    from laser_repro.models.launch import Rank

    torch.set_num_threads(a.threads)
    rec.mark("imports")
    T, C = trainer._Training, training_loop.CheckpointedTraining

    def after(owner, name, label):
        orig = getattr(owner, name)

        def wrapped(*args, **kwargs):
            out = orig(*args, **kwargs)
            rec.mark(label(args) if callable(label) else label)
            if name == "_build":
                built.append(sum(p.numel() for p in out.parameters()))
            return out
        setattr(owner, name, wrapped)

    def updates(args):
        return args[0].state["num_updates"]

    built = []  # the parameters of each model built

    after(token_store, "open_for_training", "token store opened (mapped)")
    after(T, "_build", "model built (fp32, on the CPU)")
    after(T, "_optimizer", "AdamW made (no state yet)")
    after(C, "save", lambda args: f"saved {args[1]} at update {updates(args)}")
    after(T, "evaluate", lambda args: f"validation at update {updates(args)}")
    after(T, "dual_step", lambda args: f"update {updates(args) + 1}: forward + backward")
    after(C, "reduce_gradients", lambda args: f"update {updates(args) + 1}: gradients reduced (flat copy)")
    after(C, "optimizer_step", lambda args: f"update {updates(args) + 1}: AdamW step")
    settings = {"stage": "dual", "languages": a.langs, "pivot": a.langs[0], "tokenizer": a.tokenizer,
                "train": {"batch_size": a.batch_size, "max_update": a.updates, "validate_interval_updates": 10 ** 6,
                          "log_interval": 1, "precision": "fp32"}}
    t0 = time.perf_counter()
    outcome = trainer.train(a.data, a.save_dir, settings, rank=Rank(), stop_requested=lambda: False,
                            device=torch.device("cpu"))
    seconds = time.perf_counter() - t0
    rec.mark("train() returned")
    params = built[0]
    ckpts = {p.name: round(p.stat().st_size / MIB) for p in sorted(Path(a.save_dir).glob("checkpoint_*.pt"))}
    return {"vocab": a.vocab, "parameters": params, "batch_size": a.batch_size, "updates": outcome["num_updates"],
            "train_seconds": round(seconds, 1), "checkpoint_mib": ckpts,
            "peak_rss_mib": max(r["peak_rss_mib"] for r in rec.rows),
            "peak_phase": max(rec.rows, key=lambda r: r["peak_rss_mib"])["phase"], "phases": rec.rows}


# ---- (b) what a GPU worker keeps on the host, piece by piece ----------------------------------------------

def run_pieces(a) -> dict:
    rec = Recorder()
    base = rec.mark("python (stdlib)")
    import numpy as np
    import tokenizers  # noqa: F401
    import torch
    from transformers import BertForMaskedLM, BertModel  # noqa: F401

    from laser_repro.models.checkpoint_safety import load_model_file
    from laser_repro.models.labse import data as labse_data, token_store, trainer, vocab  # noqa: F401 (trainer: its imports)
    from laser_repro.models.labse.model import DEFAULT_ENCODER, build_encoder
    from laser_repro.models.similarity import similarity_error_matrix

    torch.set_num_threads(a.threads)
    Path(a.save_dir).mkdir(parents=True, exist_ok=True)
    imports = rec.mark("imports (torch, transformers, tokenizers, the trainer)")
    tokenizer_json = Path(a.tokenizer).read_text(encoding="utf-8")  # as _Training.__init__
    tokenizer = vocab.load(a.tokenizer)
    tok = rec.mark("tokenizer loaded", tokenizer_json_mib=round(len(tokenizer_json) / MIB, 1))
    store = token_store.open_for_training(a.data, a.tokenizer, a.langs, a.save_dir, is_master=True,
                                          barrier=lambda: None)
    train = store.split("train", a.langs, DEFAULT_ENCODER["max_len"])
    valid = store.split("valid", a.langs, DEFAULT_ENCODER["max_len"])
    checksum = sum(int(v.flat.sum(dtype=np.int64)) + int(v.offsets.sum()) for d in (train, valid) for v in d.values())
    store_bytes = sum(v.nbytes() for d in (train, valid) for v in d.values())
    tokens = sum(int(v.offsets[-1]) for d in (train, valid) for v in d.values())
    mapped = rec.mark("token store mapped, every id and offset read", store_mib=round(store_bytes / MIB, 1),
                      tokens=tokens, checksum=checksum % 1000)
    batches = labse_data.PairBatches([f"l{i}" for i in range(a.un_langs)], "l0", a.un_lines, 4096, [1, 1])
    batch = batches[len(batches) // 2]
    local = [(a.langs[1], i % len(train[a.langs[0]])) for _, i in batch[:4096 // a.ranks_per_node]]
    ids, mask, _ = labse_data.collate([train[lang][i] for lang, i in local] + [train[a.langs[0]][i] for _, i in local])
    loader = rec.mark(f"epoch batch index at {a.un_lines:,} lines x {a.un_langs} languages, a rank's batch collated",
                      batch_rows=int(ids.shape[0]))
    del ids, mask  # the batch index stays: a rank holds its epoch's
    # pre-training: one permutation of every MLM + TLM example (int32); at an epoch's end the next epoch's is
    # made while the last one is still referenced, so two are held for a moment
    examples = labse_data.PretrainingExamples([f"l{i}" for i in range(a.un_langs)], "l0", a.un_lines)
    order = labse_data.ShuffledBatches(examples, 8192, np.random.default_rng([1, 1]))
    pre_one = rec.mark(f"pre-training epoch order ({len(examples):,} examples)")
    order_next = labse_data.ShuffledBatches(examples, 8192, np.random.default_rng([1, 2]))
    pre_two = rec.mark("pre-training: the next epoch's order made while the last one is held")
    del order, order_next
    rec.mark("pre-training orders freed")
    torch.manual_seed(1)
    with torch.device("cpu"):  # CheckpointedTraining.place, before .to(device)
        model = build_encoder(DEFAULT_ENCODER, tokenizer.get_vocab_size())
    model.train()
    params = sum(p.numel() for p in model.parameters())
    built = rec.mark("model built on the CPU (as place() before .to(device))", parameters=params,
                     fp32_mib=round(params * 4 / MIB))
    # the master's save on a GPU: _on_cpu(model.state_dict()) and _on_cpu(optimizer.state_dict()) are new host
    # tensors (weights, exp_avg, exp_avg_sq), then torch.save; the clones below are those host copies
    ckpt = Path(a.save_dir) / "checkpoint_synthetic.pt"
    groups = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01).state_dict()["param_groups"]
    payload = {"model": {k: v.detach().clone() for k, v in model.state_dict().items()},
               "optimizer": {"state": {i: {"step": torch.tensor(3.0), "exp_avg": torch.empty_like(p).normal_(0, 1e-3),
                                           "exp_avg_sq": torch.empty_like(p).uniform_(0, 1e-6)}
                                       for i, p in enumerate(model.parameters())},
                             "param_groups": groups}}
    copied = rec.mark("master's checkpoint: host copies of weights + Adam moments")
    torch.save(payload, ckpt)
    del payload
    saved = rec.mark("master's checkpoint written (torch.save), copies freed",
                     checkpoint_mib=round(ckpt.stat().st_size / MIB))
    model.to("meta")  # the CPU tensors released, as .to("cuda") releases them
    moved = rec.mark("model moved off the host (.to('meta') in place of .to('cuda'))")
    loaded = load_model_file(ckpt, what="checkpoint", rebuild="-", weights_only=True, map_location="cpu")
    held = rec.mark("checkpoint loaded on the host (resume; the dual stage's pre-training checkpoint)")
    # restore (training_loop.CheckpointedTraining.restore) into the model and an AdamW on the device: the meta
    # device stands for the GPU (the copies to it cost no host memory), what the host holds meanwhile is read
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "copying from a non-meta parameter ... to a meta parameter"
        model.load_state_dict(loaded["model"])
    optimizer.load_state_dict(loaded["optimizer"])
    restored = rec.mark("checkpoint restored into the model and AdamW on the device (ckpt still referenced)")
    del loaded, optimizer
    after_load = rec.mark("checkpoint freed")
    # the alternative (not the package's code): torch.load(mmap=True) maps the file; the restore reads every page
    mapped_ckpt = torch.load(ckpt, weights_only=True, map_location="cpu", mmap=True)
    touched = sum(float(t.float().sum()) for t in mapped_ckpt["model"].values())
    touched += sum(float(v.sum()) for st in mapped_ckpt["optimizer"]["state"].values() for v in st.values())
    mmap_held = rec.mark("alternative: checkpoint loaded with mmap=True, every tensor read (file pages)")
    del mapped_ckpt
    ckpt.unlink()
    rec.mark("mapped checkpoint freed")
    rng = np.random.default_rng(0)
    embeddings = {f"l{i}": rng.standard_normal((a.valid_un_lines, 768), dtype=np.float32) for i in range(a.un_langs)}
    similarity_error_matrix(embeddings)
    del embeddings
    validation = rec.mark(f"master's validation: similarity errors of {a.un_langs} x {a.valid_un_lines:,} embeddings")

    def delta(row, ref):
        return row["anon_mib"] - ref["anon_mib"]

    def above(row, ref):  # the phase's peak RSS above the reading before it
        return row["peak_rss_mib"] - ref["rss_mib"]

    pieces = {
        "python_anon_mib": base["anon_mib"],
        "imports_anon_mib": imports["anon_mib"], "imports_file_mib": imports["file_mib"],
        "imports_pss_mib": imports["pss_mib"],
        "tokenizer_anon_mib": delta(tok, imports),
        "store_rss_mib": mapped["rss_mib"] - tok["rss_mib"], "store_pss_mib": mapped["pss_mib"] - tok["pss_mib"],
        "store_anon_mib": delta(mapped, tok), "store_bytes_per_token": round(store_bytes / tokens, 3),
        "loader_anon_mib": delta(loader, mapped), "loader_peak_above_mib": above(loader, mapped),
        "pretrain_order_anon_mib": delta(pre_one, loader), "pretrain_two_orders_anon_mib": delta(pre_two, loader),
        "pretrain_orders_peak_above_mib": max(above(pre_one, loader), pre_two["peak_rss_mib"] - loader["rss_mib"]),
        "model_build_anon_mib": delta(built, loader), "model_build_peak_above_mib": above(built, loader),
        # absolute: the rank's anonymous memory at the build's peak (its file pages as at the phase's end)
        "model_build_peak_anon_mib": built["peak_rss_mib"] - built["file_mib"],
        "save_copies_anon_mib": delta(copied, built),
        "save_peak_above_mib": max(above(copied, built), saved["peak_rss_mib"] - built["rss_mib"]),
        "after_move_anon_mib": moved["anon_mib"],
        "load_anon_mib": delta(held, moved),
        "load_peak_above_mib": max(above(held, moved), restored["peak_rss_mib"] - moved["rss_mib"]),
        "mmap_load_anon_mib": delta(mmap_held, after_load), "mmap_load_file_mib": mmap_held["file_mib"] - after_load["file_mib"],
        "after_load_anon_mib": after_load["anon_mib"],
        "validation_peak_above_mib": above(validation, after_load),
    }
    return {"vocab": tokenizer.get_vocab_size(), "parameters": params, "pieces": pieces, "phases": rec.rows}


# ---- the estimate ----------------------------------------------------------------------------------------

def estimate(pieces: dict, a) -> dict:
    """A GPU rank's host memory and a node's, from the pieces (MiB unless named GB): each rank's anonymous
    memory (private to it) at its worst phase plus the assumed CUDA context, times the ranks; the master's
    extra at its checkpoint save; the file pages (libraries, the UN token store) once per node. The epoch's
    batch order is made in run(), after the model build and a resume's checkpoint load."""
    p = pieces["pieces"]
    cuda = a.cuda_context_gib * 1024
    no_loader = p["after_move_anon_mib"] - p["loader_anon_mib"]  # imports, tokenizer, what the build left
    steady_dual = p["after_move_anon_mib"]
    steady_pretrain = no_loader + p["pretrain_order_anon_mib"]
    steady = max(steady_dual, steady_pretrain)
    phases = {"model build": p["model_build_peak_anon_mib"] - p["loader_anon_mib"],
              "checkpoint load + restore (resume; the dual stage's init)": no_loader + p["load_peak_above_mib"],
              "pre-training epoch change (two orders)": no_loader + p["pretrain_orders_peak_above_mib"],
              "steady": steady}
    every_rank = max(phases.values())
    master = max(every_rank, steady + p["save_peak_above_mib"], steady + p["validation_peak_above_mib"])
    store_un = a.un_tokens * p["store_bytes_per_token"] / MIB
    libs = max(p["imports_file_mib"], a.cuda_libraries_gib * 1024)
    shared = libs + store_un
    node = a.ranks_per_node * (every_rank + cuda) + (master - every_rank) + shared
    return {"cuda_context_gib_assumed": a.cuda_context_gib, "cuda_libraries_gib_assumed": a.cuda_libraries_gib,
            "rank_anon_mib_by_phase": phases,
            "rank_steady_anon_mib": round(steady), "rank_peak_anon_mib": round(every_rank),
            "rank_peak_phase": max(phases, key=phases.get), "master_peak_anon_mib": round(master),
            "rank_peak_with_cuda_mib": round(every_rank + cuda),
            "shared_per_node_mib": {"libraries_file_pages": round(libs), "token_store_un": round(store_un)},
            "ranks_per_node": a.ranks_per_node, "node_peak_mib": round(node), "node_peak_gb": round(node * MIB / 1e9, 1),
            "node_steady_gb": round((a.ranks_per_node * (steady + cuda) + shared) * MIB / 1e9, 1),
            "headroom": a.headroom, "recommended_mem_mb": int(math.ceil(node * MIB * a.headroom / 1e9) * 1000)}


def child(mode: str, a, data: Path, tokenizer: Path, vocab: int, save_dir: Path) -> dict:
    cmd = [sys.executable, __file__, f"--{mode}", "--data", str(data), "--tokenizer", str(tokenizer),
           "--save-dir", str(save_dir), "--vocab", str(vocab), "--langs", *a.langs, "--batch-size", str(a.batch_size),
           "--updates", str(a.updates), "--threads", str(a.threads), "--un-lines", str(a.un_lines),
           "--un-langs", str(a.un_langs), "--valid-un-lines", str(a.valid_un_lines),
           "--ranks-per-node", str(a.ranks_per_node)]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)}: exit {proc.returncode}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--vocab", type=int, nargs="+", default=[PAPER_VOCAB],
                   help="vocabulary sizes for the pieces (the worker runs with the first)")
    p.add_argument("--langs", nargs="+", default=["eng", "fra"])
    p.add_argument("--lines", type=int, default=20000, help="synthetic training lines per language")
    p.add_argument("--valid-lines", type=int, default=32)
    p.add_argument("--batch-size", type=int, default=16, help="pairs per update of the CPU worker")
    p.add_argument("--updates", type=int, default=2, help="updates of the CPU worker (the second has Adam's state)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--no-worker", dest="worker_run", action="store_false", help="only the pieces")
    p.add_argument("--un-lines", type=int, default=8_300_000, help="UN 6-way training lines (the batch index)")
    p.add_argument("--un-langs", type=int, default=6)
    p.add_argument("--valid-un-lines", type=int, default=4000, help="UN devset lines (the master's validation)")
    p.add_argument("--un-tokens", type=float, default=2.2e9, help="UN token ids in the store (docs/labse.md)")
    p.add_argument("--ranks-per-node", type=int, default=8)
    p.add_argument("--cuda-context-gib", type=float, default=1.0, help="assumed, not measured (no GPU here)")
    p.add_argument("--cuda-libraries-gib", type=float, default=2.0,
                   help="assumed file pages of the CUDA build's libraries, once per node (this CPU build's: measured)")
    p.add_argument("--estimate-from", type=Path, default=None,
                   help="recompute the estimate of a previous run's JSON with these assumptions (no measuring)")
    p.add_argument("--headroom", type=float, default=1.25, help="factor on the node's peak for mem_mb (as laser_train)")
    p.add_argument("--workdir", type=Path, default=None)
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--pieces", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--data", help=argparse.SUPPRESS)
    p.add_argument("--tokenizer", help=argparse.SUPPRESS)
    p.add_argument("--save-dir", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.worker or a.pieces:
        a.vocab = a.vocab[0]
        print(json.dumps(run_worker(a) if a.worker else run_pieces(a)))
        return {}
    if a.estimate_from:
        result = json.loads(a.estimate_from.read_text())
        result["estimate"] = {v: estimate(pieces, a) for v, pieces in result["pieces"].items()}
        if a.out:
            a.out.write_text(json.dumps(result) + "\n")
        print(json.dumps(result["estimate"]))
        return result
    t0 = time.perf_counter()
    result = {"machine": f"{os.cpu_count()} CPUs, {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / GIB:.1f} GiB",
              "encoder": "BERT base: 12 layers, 768 hidden, 12 heads, 3072 intermediate, max_len 128",
              "worker": None, "pieces": {}, "estimate": {}}
    with tempfile.TemporaryDirectory(dir=a.workdir, prefix="labse-host-memory-") as tmp:
        for k, vocab_size in enumerate(a.vocab):
            root = Path(tmp) / f"v{vocab_size}"
            data, tokenizer = make_data(root, a.langs, a.lines, a.valid_lines, vocab_size)
            if k == 0 and a.worker_run:
                result["worker"] = child("worker", a, data, tokenizer, vocab_size, root / "worker")
            pieces = child("pieces", a, data, tokenizer, vocab_size, root / "pieces")
            result["pieces"][vocab_size] = pieces
            result["estimate"][vocab_size] = estimate(pieces, a)
    result["seconds"] = round(time.perf_counter() - t0)
    text = json.dumps(result)
    if a.out:
        a.out.write_text(text + "\n")
    print(text)
    return result


if __name__ == "__main__":
    main()
