"""GPU smoke test of the families that train on GPUs (issue 25): writes a JSON of figures.

For multienc and LaBSE (and LASER when fairseq is importable), in fp32, bf16 and (on a GPU) fp16, the paper
config's precision (a loss-scaled float16 run): 20 updates on the GPU with a
stop after 10 and a resume (which must continue at update 10), the export, and the exported encoder's
embeddings on the GPU against the CPU's (fp32 weights: within 1e-4). Then two processes on one GPU (gloo with
CUDA tensors; NCCL refuses two ranks on one device) against one process, and throughput at realistic sizes:
tokens/s of a LASER-like multienc model (BiLSTM 5x512 encoder, LSTM 2048 decoder) and pairs/s of a BERT-base
LaBSE dual encoder, with the peak GPU memory. The data are synthetic and made in-process (no Moses, no BPE).

Without CUDA it runs on the CPU (tiny models, no two-processes-on-one-GPU check) and says so in "notes".
Usage: ``scripts/gpu_smoke.sh OUT.json`` (see that script). Exit status 1 when a check failed.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import socket
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from laser_repro.models import device as policy  # noqa: E402
from laser_repro.models.launch import Rank  # noqa: E402

LANGS = ["aaa", "bbb", "ccc"]
UPDATES, STOP_AT = 20, 10
log = logging.getLogger("gpu_smoke")


# ---- synthetic N-way data: each language writes the same concept sequences with its own words --------------

def write_nway(root: Path, n_train: int, n_valid: int, concepts: int, lengths: tuple[int, int], seed: int = 0,
               langs=LANGS) -> dict:
    """``{split}.{lang}`` (multienc) and ``tok/{split}.{lang}`` (LaBSE) under ``root``; returns the lines."""
    rng = np.random.default_rng(seed)
    ciphers = {lang: rng.permutation(concepts) for lang in langs}
    (root / "tok").mkdir(parents=True, exist_ok=True)
    out = {}
    for split, n in (("train", n_train), ("valid", n_valid)):
        rows = [rng.integers(0, concepts, rng.integers(*lengths)) for _ in range(n)]
        for k, lang in enumerate(langs):
            words = [[f"{lang[0]}{ciphers[lang][c]}" for c in row] for row in rows]
            text = "".join(" ".join(w[::-1] if k == 2 else w) + "\n" for w in words)
            (root / f"{split}.{lang}").write_text(text, encoding="utf-8")
            (root / "tok" / f"{split}.{lang}").write_text(text, encoding="utf-8")
            out[split, lang] = text.splitlines()
    return out


def counting_stop(at: int):
    calls = []
    return lambda: calls.append(1) or len(calls) > at


def never() -> bool:
    return False


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# ---- the families: train 20 updates with a resume, export, embed on both devices ---------------------------

def multienc_settings(precision: str, hidden=16, **train) -> dict:
    return {"languages": LANGS, "paths": {"sources": LANGS, "targets": "all"},
            "model": {"encoder": {"kind": "bilstm_max", "layers": 1, "hidden": hidden}, "embed_dim": hidden,
                      "decoder": {"layers": 1, "hidden": 2 * hidden}, "dropout": 0.1},
            "train": {"lr": 0.01, "batch_size": 32, "max_update": UPDATES, "validate_interval_updates": 5,
                      "patience": None, "log_interval": 0, "precision": precision, **train}}


def labse_settings(root: Path, precision: str, **train) -> dict:
    return {"stage": "dual", "languages": LANGS, "pivot": "aaa", "tokenizer": str(root / "tokenizer.json"),
            "encoder": {"layers": 2, "hidden": 32, "heads": 2, "intermediate": 64, "dropout": 0.1, "max_len": 24},
            "train": {"batch_size": 16, "lr": 3e-3, "max_update": UPDATES, "validate_interval_updates": 5,
                      "log_interval": 0, "precision": precision, **train}}


def train_resume_export(family: str, data: Path, work: Path, settings: dict, device: torch.device,
                        lines: dict) -> dict:
    """Train to update 10, stop, resume to 20, export; the exported encoder on ``device`` and on the CPU."""
    if family == "multienc":
        from laser_repro.models.multienc.export import MultiencEncoder as Encoder, export_encoder
        from laser_repro.models.multienc.trainer import train
    else:
        from laser_repro.models.labse.export import LabseEncoder as Encoder, export_encoder
        from laser_repro.models.labse.trainer import train
    save = work / "save"
    t0 = time.perf_counter()
    first = train(data, save, settings, rank=Rank(), device=device, stop_requested=counting_stop(STOP_AT))
    second = train(data, save, settings, rank=Rank(), device=device, stop_requested=never)
    synchronize(device)
    seconds = time.perf_counter() - t0
    export_encoder(save / "checkpoint_best.pt", work / "encoder.pt")
    exported = torch.load(work / "encoder.pt", weights_only=True, map_location="cpu")
    tensors = exported["model"] if family == "labse" else [t for e in exported["encoders"].values() for t in e.values()]
    dtypes = sorted({str(t.dtype) for t in (tensors.values() if isinstance(tensors, dict) else tensors)
                     if t.is_floating_point()})
    on_cpu, on_device = Encoder.load(work / "encoder.pt", "cpu"), Encoder.load(work / "encoder.pt", device)
    diff = max(float(np.abs(on_cpu.embed(lines["valid", lang], lang) - on_device.embed(lines["valid", lang], lang)).max())
               for lang in LANGS)
    history = torch.load(save / "checkpoint_last.pt", weights_only=True, map_location="cpu")["history"]
    result = {"stopped_at": first["num_updates"], "preempted": first["preempted"],
              "resumed_from": second["start_updates"], "num_updates": second["num_updates"],
              "seconds": round(seconds, 2), "exported_dtypes": dtypes,
              "embedding_max_abs_diff_device_vs_cpu": diff,
              "valid_similarity_error_first_last": [history[0]["valid_similarity_error"],
                                                    history[-1]["valid_similarity_error"]]}
    checks = {"stopped at 10 and preempted": first["preempted"] and first["num_updates"] == STOP_AT,
              "resumed at 10, ended at 20": second["start_updates"] == STOP_AT and second["num_updates"] == UPDATES,
              "exported float32": dtypes == ["torch.float32"],
              "device embeddings = CPU within 1e-4": diff <= 1e-4}
    result["failed_checks"] = [name for name, ok in checks.items() if not ok]
    return result


def laser_run(work: Path, precision: str, device: torch.device) -> dict:
    """LASER through fairseq (the tests' tiny binarized corpus): 20 updates with a stop and a resume."""
    sys.path.insert(0, str(REPO / "tests"))
    from tiny_corpus import LANG_PAIRS, SMALL_MODEL, TARGETS, build_binarized

    from laser_repro.models.laser.family import LaserFamily

    work.mkdir(parents=True)
    data = build_binarized(work)
    settings = {"pairs": LANG_PAIRS.split(","), "targets": TARGETS.split(","), "model": dict(SMALL_MODEL),
                "train": {"lr": 0.005, "max_tokens": 200, "gpus": 1, "update_freq": 1, "max_epoch": 100,
                          "max_update": UPDATES, "seed": 3, "log_interval": 5, "precision": precision}}
    family = LaserFamily()
    t0 = time.perf_counter()
    first = family.train_worker(data, work / "save", settings, rank=Rank(), threads=1, device=device,
                                stop_requested=counting_stop(STOP_AT))
    second = family.train_worker(data, work / "save", settings, rank=Rank(), threads=1, device=device,
                                 stop_requested=never)
    seconds = time.perf_counter() - t0
    summary = family.export(second["model"], work / "encoder.pt")
    ok = first["preempted"] and second["num_updates"] == UPDATES and second["start_updates"] >= first["num_updates"]
    return {"stopped_at": first["num_updates"], "resumed_from": second["start_updates"],
            "num_updates": second["num_updates"], "seconds": round(seconds, 2), "export": str(summary)[:300],
            "failed_checks": [] if ok else ["stop at 10, resume, end at 20"]}


# ---- two processes on one GPU (gloo with CUDA tensors) = one process ---------------------------------------

def _record_first_gradients(path: str) -> None:
    """The optimisers' step records the gradients of the first update instead of applying them (Adam's step
    is ~lr x sign(grad): weights would magnify rounding noise in near-zero gradients)."""
    def step(self, closure=None):
        if not os.path.exists(path):
            torch.save({i: p.grad.detach().cpu() for i, p in enumerate(q for g in self.param_groups for q in g["params"])
                        if p.grad is not None}, path)
    torch.optim.Adam.step = torch.optim.AdamW.step = step


def _two_process_worker(rank: int, port: int, family: str, data: str, save: str, settings: dict, record: str):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), **{policy.BACKEND_ENV: "gloo"})
    torch.set_default_dtype(torch.float64)
    _record_first_gradients(f"{record}.{rank}")
    train = __import__(f"laser_repro.models.{family}.trainer", fromlist=["train"]).train
    worker = Rank(2, rank, rank, "127.0.0.1", port, "torchrun")
    train(data, save, settings, rank=worker, device=policy.worker_device(worker), stop_requested=never)


def _one_process(family: str, data: str, save: str, settings: dict, record: str, device: torch.device):
    torch.set_default_dtype(torch.float64)
    _record_first_gradients(record)
    train = __import__(f"laser_repro.models.{family}.trainer", fromlist=["train"]).train
    train(data, save, settings, rank=Rank(), device=device, stop_requested=never)


def two_processes_one_gpu(family: str, data: Path, work: Path, settings: dict, device: torch.device) -> dict:
    """The first update's gradients (float64) of 2 processes sharing the GPU = those of 1 process."""
    ctx = torch.multiprocessing.get_context("spawn")  # the patched optimisers stay in the child processes
    one = ctx.Process(target=_one_process, args=(family, str(data), str(work / "one"), settings,
                                                  str(work / "one.grad"), device))
    one.start()
    one.join()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    torch.multiprocessing.spawn(_two_process_worker, nprocs=2,
                                args=(port, family, str(data), str(work / "two"), settings, str(work / "two.grad")))
    if one.exitcode != 0:
        raise RuntimeError(f"the one-process run failed (exit status {one.exitcode})")
    reference = torch.load(work / "one.grad", weights_only=True)
    scale = max(float(g.abs().max()) for g in reference.values())
    diffs = []
    for rank in (0, 1):
        grads = torch.load(work / f"two.grad.{rank}", weights_only=True)
        if grads.keys() != reference.keys():
            raise RuntimeError(f"rank {rank} has gradients of other parameters than one process")
        diffs.append(max(float((grads[i] - g).abs().max()) for i, g in reference.items()))
    tolerance = 1e-9 * max(scale, 1.0)
    return {"parameters_with_gradients": len(reference), "max_abs_gradient": scale, "max_abs_diff_per_rank": diffs,
            "tolerance": tolerance, "dtype": "float64",
            "failed_checks": [] if max(diffs) <= tolerance and scale > 0 else ["two processes = one"]}


# ---- throughput at realistic sizes --------------------------------------------------------------------------

def throughput(family: str, work: Path, device: torch.device, precision: str, big: bool,
               warmup: int = 3, steps: int = 10, batch: int = 0, micro_batch: int = 0) -> dict:
    """``batch``: the global batch (default 256 big, else 32 / 16); ``micro_batch``: LaBSE's gradient caching."""
    from laser_repro.models.collectives import Comm

    concepts = 8000 if big else 200
    batch = batch or (256 if big else (32 if family == "multienc" else 16))
    n = max(4096 if big else 256, batch * (warmup + steps))
    lines = write_nway(work / "data", n, 64, concepts, (15, 40) if big else (5, 12), langs=LANGS[:2])
    if family == "multienc":
        from laser_repro.models.multienc import trainer
        from laser_repro.models.multienc.model import Dictionary

        Dictionary.build(lines["train", "aaa"] + lines["train", "bbb"]).save(work / "data" / "dict.txt")
        settings = multienc_settings(precision, batch_size=batch, max_update=10 ** 6)
        settings["languages"], settings["paths"] = LANGS[:2], {"sources": LANGS[:2], "targets": "all"}
        if big:  # LASER's architecture (paper 000): BiLSTM 5 x 512, embeddings 320, decoder 1 x 2048
            settings["model"] = {"encoder": {"kind": "bilstm_max", "layers": 5, "hidden": 512}, "embed_dim": 320,
                                 "decoder": {"layers": 1, "hidden": 2048}, "dropout": 0.1}
    else:
        from laser_repro.models.labse import trainer, vocab

        tok, _ = vocab.learn({lang: work / "data" / "tok" / f"train.{lang}" for lang in LANGS[:2]}, concepts + 500)
        tok.save(str(work / "data" / "tokenizer.json"))
        settings = labse_settings(work / "data", precision, batch_size=batch, max_update=10 ** 6,
                                  micro_batch=micro_batch or None)
        settings["languages"], settings["pivot"] = LANGS[:2], "aaa"
        if big:  # BERT base (the paper's), sentences of 15-40 words
            settings["encoder"] = {"layers": 12, "hidden": 768, "heads": 12, "intermediate": 3072, "dropout": 0.1,
                                   "max_len": 128}
    settings = trainer.complete_settings(settings)
    comm = Comm(Rank(), device)
    run = trainer._Training(work / "data", work / "save", settings, Rank(), comm, log)
    batches = run.epoch_batches()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    # index by index: LaBSE's batches are a sequence that forms each batch when asked (no slicing)
    chosen = [batches[i] for i in range(min(len(batches), warmup + steps))]
    for batch in chosen[:warmup]:
        run.update(batch)
    synchronize(device)
    t0, tokens, examples = time.perf_counter(), 0, 0
    for batch in chosen[warmup:]:
        run.update(batch)
        rows = [int(i) for i in batch] if family == "multienc" else [int(i) for _, i in batch]
        tokens += sum(len(lines["train", lang][i].split()) + 1 for i in rows for lang in LANGS[:2])
        examples += len(batch)
    synchronize(device)
    seconds = time.perf_counter() - t0
    comm.close()
    out = {"precision": precision, "model": settings["model"] if family == "multienc" else settings["encoder"],
           "batch": settings["train"]["batch_size"], "micro_batch": settings["train"].get("micro_batch"), "updates_timed": len(chosen[warmup:]), "seconds": round(seconds, 3),
           "peak_gpu_memory_gib": (round(torch.cuda.max_memory_allocated(device) / 2 ** 30, 2)
                                   if device.type == "cuda" else None)}
    if family == "multienc":
        out["tokens_per_s"] = round(tokens / seconds)  # source + target words (+ </s>) of the updates' pairs
    else:
        out["pairs_per_s"] = round(examples / seconds, 1)
        out["vocab_size"] = run.vocab_size
    return out


# ---- the run ---------------------------------------------------------------------------------------------

def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", help="the JSON of figures")
    parser.add_argument("--precisions", nargs="+", choices=("fp32", "bf16", "fp16"),
                        help="default: fp32 bf16 fp16 on a GPU, fp32 bf16 on the CPU (fp16 needs CUDA)")
    parser.add_argument("--only", nargs="+", metavar="PREFIX",
                        help="run only the checks whose names start with one of these (e.g. multienc. laser.)")
    parser.add_argument("--batch-4096", nargs="*", default=["bf16", "fp32"], choices=("fp32", "bf16", "fp16"),
                        metavar="PRECISION", help="the LaBSE 4096-pair throughput in these precisions (default: "
                                                  "bf16 fp32; fp32 takes about 40 s on an H200)")
    a = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    cuda = torch.cuda.is_available()
    device = torch.device("cuda", 0) if cuda else torch.device("cpu")
    precisions = a.precisions or (["fp32", "bf16", "fp16"] if cuda else ["fp32", "bf16"])
    if "fp16" in precisions and not cuda:
        parser.error("fp16 needs a CUDA device")
    report = {"host": socket.gethostname(), "torch": torch.__version__, "cuda": torch.version.cuda,
              "device": torch.cuda.get_device_name(0) if cuda else "cpu",
              "cudnn": torch.backends.cudnn.version() if cuda else None,
              "nccl": ".".join(map(str, torch.cuda.nccl.version())) if cuda else None,
              "bf16_supported": torch.cuda.is_bf16_supported() if cuda else None,
              "results": {}, "failures": [], "notes": []}
    if not cuda:
        report["notes"].append("no CUDA device: everything ran on the CPU with tiny models (two processes: gloo "
                               "between CPU processes)")
    start = time.perf_counter()

    def check(name, fn, *args):
        if a.only and not name.startswith(tuple(a.only)):
            return
        log.info("== %s", name)
        t0 = time.perf_counter()
        try:
            result = fn(*args)
        except Exception as err:  # a failed check is a figure too: go on with the others
            traceback.print_exc()
            report["failures"].append(f"{name}: {type(err).__name__}: {err}"[:2000])
            return
        result["wall_s"] = round(time.perf_counter() - t0, 1)
        report["results"][name] = result
        report["failures"] += [f"{name}: {c}" for c in result.get("failed_checks", [])]
        log.info("%s: %s", name, json.dumps(result)[:500])
        Path(a.out).write_text(json.dumps(report, indent=1) + "\n")  # what ran so far, if the job is cut

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        data = tmp / "nway"
        lines = write_nway(data, 300, 40, 16, (2, 7))
        from laser_repro.models.labse import vocab
        from laser_repro.models.multienc.model import Dictionary

        Dictionary.build([x for lang in LANGS for x in lines["train", lang]]).save(data / "dict.txt")
        tok, _ = vocab.learn({lang: data / "tok" / f"train.{lang}" for lang in LANGS}, 120)
        tok.save(str(data / "tokenizer.json"))
        for precision in precisions:
            check(f"multienc.{precision}", train_resume_export, "multienc", data, tmp / f"m-{precision}",
                  multienc_settings(precision), device, lines)
            check(f"labse.{precision}", train_resume_export, "labse", data, tmp / f"l-{precision}",
                  labse_settings(data, precision), device, lines)
            try:
                import fairseq  # noqa: F401
            except ImportError:
                if precision == "fp32":
                    report["notes"].append("LASER skipped: fairseq is not importable here")
            else:
                if cuda or precision == "fp32":  # fairseq's bf16 is for GPUs
                    check(f"laser.{precision}", laser_run, tmp / f"laser-{precision}", precision, device)
        # on the CPU: gloo between CPU processes; one update (the gradients are compared), no dropout (the ranks
        # draw other masks), an uneven split
        multienc_two = multienc_settings("fp32", max_update=1, batch_size=25)
        multienc_two["model"]["dropout"] = 0.0
        check("two_processes_one_gpu.multienc", two_processes_one_gpu, "multienc", data, tmp / "two-m",
              multienc_two, device)
        labse_two = labse_settings(data, "fp32", max_update=1, batch_size=15)
        labse_two["encoder"]["dropout"] = 0.0
        check("two_processes_one_gpu.labse", two_processes_one_gpu, "labse", data, tmp / "two-l", labse_two, device)
        for precision in precisions:
            for family in ("multienc", "labse"):
                check(f"throughput.{family}.{precision}", throughput, family, tmp / f"t-{family}-{precision}",
                      device, precision, cuda)
        # the paper's global batch of 4096 pairs on one GPU, by gradient caching (chunks of 512 pairs)
        for precision in a.batch_4096:
            check(f"throughput.labse_4096.{precision}", throughput, "labse", tmp / f"t-labse4096-{precision}", device,
                  precision, cuda, 1, 4 if cuda else 1, 4096 if cuda else 64, 512 if cuda else 16)
    report["seconds"] = round(time.perf_counter() - start, 1)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(report, indent=1) + "\n")
    log.info("wrote %s (%d failures) in %.0f s", a.out, len(report["failures"]), report["seconds"])
    return 1 if report["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
