#!/usr/bin/env python
"""Host memory of one LASER training rank at scale, on synthetic binarized data (issue 36, item 6).

For each ``--pairs`` size P, synthetic fairseq mmap datasets (``train.{src}-{tgt}.{lang}.{idx,bin}``) are
written under ``--workdir`` for the language pairs of ``--configfile`` (default config/paper.yaml: 184
pairs), P split over them in proportion to the paper's Table 1 sizes of the source language
(src/laser_repro/paper_values/laser_2019/paper_table1.csv), each source's count shared equally by its targets. Sentence
lengths (BPE tokens + EOS) are drawn from a gamma distribution (``--mean-tokens``), so the number of
batches is realistic; the ``.idx`` files are real (sizes + pointers, what the data layer reads at load
time), the ``.bin`` files are sparse (zeros: token ids are read only when a batch is collated).

Then a fresh process runs what a training rank runs, with the real plugin and fairseq code: the argv of
``fairseq_bridge.fairseq_train_argv`` for the config's base model (precision fp32: this is a CPU run),
``tasks.setup_task``, ``task.load_dataset("train")`` (LanguagePairDatasets + MultiPairDataset),
``task.get_batch_iterator`` with the trainer's arguments (``--world-size`` shards, ``shard_id`` = --rank,
``num_workers`` from the config) and its ``first_batch`` (the trainer forms epoch 1's batches there),
``next_epoch_itr`` + ``GroupedIterator`` and a few updates' batches (the DataLoader workers are forked),
then the end of epoch 1 and epoch 2's iterator (``rebuild_batches``: the batches are formed again while
the previous epoch's are still referenced). After each stage: the anonymous memory of the rank and its
DataLoader workers counted once (the sum of their Pss_Anon, smaps_rollup; ``group_anon``), its peak during
the stage sampled every 5 ms (``peak_group_anon``) and an upper bound of that peak (``peak_group_bound``:
the rank's own VmHWM, reset before each stage via /proc/self/clear_refs, less its file pages, plus the pages
only its workers hold), the rank's RSS split into anonymous and file-backed pages (/proc/self/status), and
PSS / USS of the rank and its workers. The model is measured in its own process (``--model``): built on
the CPU as fairseq does before moving it to the GPU.

The parent fits ``bytes = a * pairs + b`` (least squares) to every measured quantity, extrapolates to
``--target-pairs``, and writes one JSON file (``--out``).

    python scripts/bench_laser_host_memory.py --pairs 1000000 5000000 20000000 50000000 \\
        --out /tmp/laser_host_memory.json
"""
from __future__ import annotations

import argparse
import csv
import json
import logging
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

# fairseq's mmap index format (fairseq/data/indexed_dataset.py, MMapIndexedDataset.Index)
_IDX_MAGIC = b"MMIDIDX\x00\x00"
_UINT16_CODE = 8  # fairseq-preprocess writes uint16 token ids for a dictionary below 65,500 entries
MIB = 2 ** 20


# ---- synthetic data --------------------------------------------------------------------------------

def write_mmap_index(prefix: str, sizes: np.ndarray, dtype=np.uint16) -> int:
    """``{prefix}.idx`` exactly as fairseq's ``MMapIndexedDataset.Index.writer`` writes it (vectorised:
    the writer builds Python lists, too slow for 10^8 sentences) and a sparse ``{prefix}.bin`` of the size
    the pointers imply. Returns the .bin size in bytes."""
    if dtype is not np.uint16:
        raise ValueError("only uint16 token ids (the binarized data of a dictionary below 65,500 entries)")
    sizes = np.asarray(sizes, dtype=np.int32)
    if len(sizes) and int(sizes.min()) < 1:
        raise ValueError(f"{prefix}: sentence sizes must be >= 1 (EOS)")
    itemsize = np.dtype(dtype).itemsize
    pointers = np.zeros(len(sizes), dtype=np.int64)
    np.cumsum(sizes[:-1], dtype=np.int64, out=pointers[1:])
    pointers *= itemsize
    with open(f"{prefix}.idx", "wb") as f:
        f.write(_IDX_MAGIC + struct.pack("<Q", 1) + struct.pack("<B", _UINT16_CODE) + struct.pack("<Q", len(sizes)))
        f.write(sizes.tobytes(order="C"))
        f.write(pointers.tobytes(order="C"))
    nbytes = int(sizes.sum(dtype=np.int64)) * itemsize
    with open(f"{prefix}.bin", "wb") as f:
        f.truncate(nbytes)
    return nbytes


def source_weights(pairs, table1=ROOT / "src/laser_repro/paper_values/laser_2019/paper_table1.csv") -> np.ndarray:
    """Weight of each (src, tgt) pair: the paper's Table 1 training sentences of ``src``, shared equally by
    the pair's targets. A source language missing from Table 1 is an error naming the file."""
    with open(table1, encoding="utf-8") as f:
        sizes = {row["code"]: int(row["train_sentences"]) for row in csv.DictReader(f) if row["train_sentences"]}
    targets_of: dict[str, int] = {}
    for src, _ in pairs:
        targets_of[src] = targets_of.get(src, 0) + 1
    missing = sorted({src for src, _ in pairs if src not in sizes})
    if missing:
        raise ValueError(f"{table1}: no train_sentences for source language(s) {', '.join(missing)}")
    return np.array([sizes[src] / targets_of[src] for src, _ in pairs], dtype=np.float64)


def split_counts(total: int, weights: np.ndarray) -> np.ndarray:
    """``total`` split in proportion to ``weights`` (largest remainders; the counts sum to ``total``)."""
    exact = total * weights / weights.sum()
    counts = np.floor(exact).astype(np.int64)
    rest = total - int(counts.sum())
    counts[np.argsort(-(exact - counts), kind="stable")[:rest]] += 1
    return counts


def synthetic_lengths(rng: np.random.Generator, n: int, mean_tokens: float, max_len: int):
    """Source and target sizes (tokens incl. EOS): source 1 + gamma(2.5) with mean ``mean_tokens``, target the
    source length times a log-normal ratio (sigma 0.25); a few exceed ``max_len`` (the trainer drops them)."""
    src = 1 + np.rint(rng.gamma(2.5, (mean_tokens - 1) / 2.5, size=n))
    tgt = np.maximum(1, np.rint(src * rng.lognormal(0.0, 0.25, size=n)))
    cap = 2 * max_len  # a bound, as the preprocessing's length filter; above max_len still occurs
    return np.minimum(src, cap).astype(np.int32), np.minimum(tgt, cap).astype(np.int32)


def make_data(data: Path, n_pairs: int, pairs, vocab: int, mean_tokens: float, max_len: int, seed: int) -> dict:
    data.mkdir(parents=True, exist_ok=True)
    with open(data / "dict.txt", "w", encoding="utf-8") as f:  # fairseq adds <s> <pad> </s> <unk> itself
        f.write("".join(f"tok{i} {vocab - i}\n" for i in range(vocab - 4)))
    counts = split_counts(n_pairs, source_weights(pairs))
    rng = np.random.default_rng(seed)
    idx_bytes = bin_bytes = 0
    longer_sum = 0
    per_pair = {}
    for (src, tgt), n in zip(pairs, counts):
        n = int(n)
        if n == 0:
            continue  # no sentence: left out of training, as nonempty_pairs does for an empty bitext
        s, t = synthetic_lengths(rng, n, mean_tokens, max_len)
        longer_sum += int(np.maximum(s, t).sum(dtype=np.int64))
        pair_bytes = 0
        for lang, sizes in ((src, s), (tgt, t)):
            prefix = str(data / f"train.{src}-{tgt}.{lang}")
            pair_bytes += write_mmap_index(prefix, sizes)
            idx_bytes += os.path.getsize(prefix + ".idx")
        bin_bytes += pair_bytes
        per_pair[f"{src}-{tgt}"] = {"sentences": n, "bin_bytes": pair_bytes}
    used = [f"{s}-{t}" for (s, t), n in zip(pairs, counts) if n > 0]
    largest = max(per_pair, key=lambda k: per_pair[k]["sentences"])
    return {"pairs": n_pairs, "language_pairs": len(used), "used_pairs": used, "idx_bytes": idx_bytes,
            "bin_bytes": bin_bytes, "mean_longer_side_tokens": round(longer_sum / n_pairs, 2),
            "largest_pair": {"name": largest, **per_pair[largest]}}


# ---- memory readings -------------------------------------------------------------------------------

def _status(pid="self") -> dict:
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem"):
                out[key] = int(value.split()[0]) * 1024
    return out


def _rollup(pid="self") -> dict:
    out = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            key, _, value = line.partition(":")
            if value.strip().endswith("kB"):
                out[key] = int(value.split()[0]) * 1024
    return {"rss": out["Rss"], "pss": out["Pss"], "pss_anon": out.get("Pss_Anon", 0), "pss_file": out.get("Pss_File", 0),
            "uss": out["Private_Clean"] + out["Private_Dirty"], "anon": out.get("Anonymous", 0)}


def _children() -> list[int]:
    """The pids of this process's descendants (the DataLoader workers)."""
    import psutil

    return [c.pid for c in psutil.Process().children(recursive=True)]


def _group(pids) -> tuple[int, list[dict]]:
    """Anonymous memory of this process and ``pids`` counted once (the sum of their Pss_Anon: after the
    fork, pages are shared copy-on-write; pages this process freed after the fork stay in the workers),
    and the workers' smaps_rollup."""
    workers = []
    for pid in pids:
        try:
            workers.append(_rollup(pid))
        except (FileNotFoundError, ProcessLookupError):
            pass
    if not workers:
        return _status()["RssAnon"], []
    return _rollup()["pss_anon"] + sum(w["pss_anon"] for w in workers), workers


class PeakAnon:
    """Samples, in a thread, the anonymous memory of this process and its DataLoader workers (counted
    once, :func:`_group`) every ``interval`` s; numpy releases the GIL in its long loops. The kernel only
    keeps the peak of one process's total RSS (VmHWM), which also counts file pages."""

    def __init__(self, interval=0.005):
        self.interval, self.peak, self._stop = interval, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self):
        self.peak = max(self.peak, _group(_children())[0])

    def _run(self):
        while not self._stop.is_set():
            self._sample()
            time.sleep(self.interval)

    def __enter__(self):
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self._sample()


class Stages:
    def __init__(self):
        self.rows: list[dict] = []

    def run(self, name: str, fn):
        with open("/proc/self/clear_refs", "w") as f:  # "5": reset VmHWM to the current RSS
            f.write("5")
        t0 = time.perf_counter()
        with PeakAnon() as peak:
            result = fn()
        seconds = time.perf_counter() - t0
        status, rollup = _status(), _rollup()
        group, workers = _group(_children())
        self.rows.append({
            "stage": name, "seconds": round(seconds, 2),
            "group_anon": group, "peak_group_anon": peak.peak,
            # the sampler can miss a short peak: the rank's own peak anonymous RSS (VmHWM less its file pages)
            # plus the pages only its workers hold at the end bounds it from above
            "peak_group_bound": max(peak.peak, status["VmHWM"] - status["RssFile"] + max(0, group - status["RssAnon"])),
            "rss": status["VmRSS"], "rss_anon": status["RssAnon"], "rss_file": status["RssFile"],
            "peak_rss": status["VmHWM"], **{f"self_{k}": v for k, v in rollup.items()},
            "workers": len(workers), **{f"workers_{k}": sum(w[k] for w in workers) for k in ("uss", "pss", "pss_anon", "rss")},
        })
        print(f"[bench] {name}: {seconds:.1f}s; anon of the rank and its workers {group / MIB:.0f} MiB "
              f"(peak {peak.peak / MIB:.0f}); own RSS anon {status['RssAnon'] / MIB:.0f}, file {status['RssFile'] / MIB:.0f} "
              f"MiB; {len(workers)} workers, USS {sum(w['uss'] for w in workers) / MIB:.0f} MiB", file=sys.stderr, flush=True)
        return result


# ---- the rank (child process) ----------------------------------------------------------------------

def rank_argv(configfile: str, data: Path, save_dir: Path, pairs) -> tuple[list, dict]:
    """The fairseq-train argv the LASER family builds for the config's base model (family.train_worker),
    precision fp32 (a CPU process), no validation; and the train settings."""
    from laser_repro import config as C
    from laser_repro.models.laser import fairseq_bridge

    cfg = C.load(configfile)
    plan = C.Plan(cfg)
    name = plan.laser_models[0]  # the base model (config/paper.yaml: base)
    train = dict(plan.variant_train(name))
    for key in ("tokens_per_update", "gpus", "cpu_processes", "early_stopping"):
        train.pop(key, None)
    train["precision"] = "fp32"
    model = dict(plan.variants[name].model)
    argv = fairseq_bridge.fairseq_train_argv(str(data), str(save_dir), pairs, plan.targets, model, train,
                                             cpu=True, validate=False)
    return argv, train


def parse_fairseq(argv):
    from fairseq import options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    parser = options.get_training_parser()
    return convert_namespace_to_omegaconf(options.parse_args_and_arch(parser, argv))


def measure_rank(a) -> dict:
    data = Path(a.measure)
    meta = json.loads((data / "meta.json").read_text())
    pairs = meta["used_pairs"]
    stages = Stages()

    def imports():
        import torch  # noqa: F401
        from fairseq import tasks, utils  # noqa: F401
        from fairseq.data import iterators  # noqa: F401
        import fairseq.data.indexed_dataset as ind

        if not a.warmup:  # fairseq reads every .bin once at load time: page cache only, not the process's memory
            ind._warmup_mmap_file = lambda path: None

    stages.run("imports", imports)
    from fairseq import tasks, utils
    from fairseq.data import iterators

    logging.getLogger().setLevel(logging.WARNING)  # fairseq logs every pair's load at INFO

    torch_threads()
    with tempfile.TemporaryDirectory() as save_dir:
        argv, train = rank_argv(a.configfile, data, Path(save_dir), pairs)
    cfg = parse_fairseq(argv)
    utils.import_user_module(cfg.common)
    task = stages.run("setup_task", lambda: tasks.setup_task(cfg.task))
    stages.run("load_dataset", lambda: task.load_dataset(cfg.dataset.train_subset, epoch=1, combine=True))
    dataset = task.dataset(cfg.dataset.train_subset)
    # the model's max_positions are the task's for laser_lstm (max_source/target_positions)
    max_positions = utils.resolve_max_positions(task.max_positions(), task.max_positions(), cfg.dataset.max_tokens)

    def batch_iterator():
        itr = task.get_batch_iterator(
            dataset=dataset, max_tokens=cfg.dataset.max_tokens, max_sentences=cfg.dataset.batch_size,
            max_positions=max_positions, ignore_invalid_inputs=True,
            required_batch_size_multiple=cfg.dataset.required_batch_size_multiple, seed=cfg.common.seed,
            num_shards=a.world_size, shard_id=a.rank, num_workers=cfg.dataset.num_workers, epoch=1,
            data_buffer_size=cfg.dataset.data_buffer_size, skip_remainder_batch=cfg.optimization.skip_remainder_batch,
            grouped_shuffling=cfg.dataset.grouped_shuffling, update_epoch_batch_itr=cfg.dataset.update_epoch_batch_itr)
        itr.first_batch  # Trainer.get_train_iterator -> reset_dummy_batch: epoch 1's batches are formed here
        return itr

    epoch_itr = stages.run("batch_iterator", batch_iterator)
    n_batches = len(epoch_itr.frozen_batches)
    update_freq = cfg.optimization.update_freq[0]

    def epoch(k):
        itr = epoch_itr.next_epoch_itr(fix_batches_to_gpus=cfg.distributed_training.fix_batches_to_gpus, shuffle=True)
        grouped = iterators.GroupedIterator(itr, update_freq, skip_remainder_batch=cfg.optimization.skip_remainder_batch)
        for _, _ in zip(range(a.updates), grouped):
            pass
        return itr

    itr = stages.run("epoch1_updates", lambda: epoch(1))
    itr.take(itr.n)  # the epoch ends here: the next call forms epoch 2 (fairseq's rebuild_batches)
    stages.run("epoch2_updates", lambda: epoch(2))
    return {"pairs": len(dataset), "language_pairs": len(dataset.datasets), "batches": n_batches,
            "shard_batches": len(epoch_itr), "world_size": a.world_size, "rank": a.rank,
            "num_workers": cfg.dataset.num_workers, "max_tokens": cfg.dataset.max_tokens, "update_freq": update_freq,
            "updates_per_epoch_measured": a.updates, "warmup": a.warmup, "stages": stages.rows,
            "train_settings": {k: v for k, v in train.items() if k != "log_file"}}


def measure_model(a) -> dict:
    """Build the config's model on the CPU, as fairseq's train.py does before the Trainer moves it to the GPU."""
    data = Path(a.model)
    meta = json.loads((data / "meta.json").read_text())
    stages = Stages()
    stages.run("imports", lambda: __import__("fairseq.tasks"))
    from fairseq import tasks, utils

    torch_threads()
    with tempfile.TemporaryDirectory() as save_dir:
        argv, _ = rank_argv(a.configfile, data, Path(save_dir), meta["used_pairs"])
    cfg = parse_fairseq(argv)
    utils.import_user_module(cfg.common)
    task = stages.run("setup_task", lambda: tasks.setup_task(cfg.task))
    model = stages.run("build_model", lambda: task.build_model(cfg.model))
    params = sum(p.numel() for p in model.parameters())
    return {"parameters": params, "parameter_bytes_fp32": params * 4, "stages": stages.rows}


def torch_threads():
    import torch

    torch.set_num_threads(1)


# ---- the parent: sizes, fit -------------------------------------------------------------------------

FIT_KEYS = ("group_anon", "peak_group_anon", "peak_group_bound", "rss_anon", "rss_file", "peak_rss", "self_uss", "workers_uss", "workers_pss_anon")


def fit(xs, ys) -> dict:
    """Least squares ``y = a * x + b`` with its largest relative residual."""
    xs, ys = np.asarray(xs, dtype=np.float64), np.asarray(ys, dtype=np.float64)
    if len(xs) < 2:
        raise ValueError("a fit needs at least two --pairs sizes")
    a, b = np.polyfit(xs, ys, 1)
    resid = ys - (a * xs + b)
    return {"bytes_per_pair": round(float(a), 2), "constant_mib": round(float(b) / MIB, 1),
            "max_residual_mib": round(float(np.abs(resid).max()) / MIB, 1)}


def summarize(runs, model, target_pairs, ranks_per_node, headroom) -> dict:
    xs = [r["pairs"] for r in runs]
    stage_names = [s["stage"] for s in runs[0]["stages"]]
    fits = {}
    for name in stage_names:
        rows = [next(s for s in r["stages"] if s["stage"] == name) for r in runs]
        fits[name] = {k: fit(xs, [row[k] for row in rows]) for k in FIT_KEYS}
    files = {k: fit(xs, [r["data"][k] for r in runs]) for k in ("idx_bytes", "bin_bytes")}

    def at(f, n):
        return f["bytes_per_pair"] * n + f["constant_mib"] * MIB

    n = target_pairs
    # a rank's private memory: the anonymous pages of the rank and its DataLoader workers, counted once,
    # at their peak over the stages (a rank's processes share no anonymous page with another rank's)
    peak_stage = max(stage_names, key=lambda s: at(fits[s]["peak_group_bound"], n))
    rank_peak = at(fits[peak_stage]["peak_group_bound"], n)
    sampled = max(at(fits[s]["peak_group_anon"], n) for s in stage_names)
    steady = at(fits[stage_names[-1]]["group_anon"], n)
    idx, binary = at(files["idx_bytes"], n), at(files["bin_bytes"], n)
    node_private = ranks_per_node * rank_peak
    # shared once per node: the page cache of the mmapped .idx (sizes + pointers) and .bin files, which
    # training reads in full every epoch (clean file pages: reclaimable, but re-read from disk when evicted)
    node_total = node_private + idx + binary
    mem_mb = int(math.ceil(node_total * headroom / 1e6 / 1000) * 1000)
    gib = 2 ** 30
    return {
        "target_pairs": n, "ranks_per_node": ranks_per_node, "headroom": headroom, "fits": fits, "file_fits": files,
        "per_rank": {"peak_anon_gib": round(rank_peak / gib, 2), "peak_stage": peak_stage,
                     "peak_anon_sampled_gib": round(sampled / gib, 2),
                     "steady_anon_gib": round(steady / gib, 2)},
        "per_node": {"private_gib": round(node_private / gib, 2), "idx_page_cache_gib": round(idx / gib, 2),
                     "bin_page_cache_gib": round(binary / gib, 2), "total_gib": round(node_total / gib, 2)},
        "model_parameters": model and model["parameters"],
        "recommended_mem_mb": mem_mb,
    }


def child(flag: str, data: Path, a) -> dict:
    cmd = [sys.executable, __file__, flag, str(data), "--configfile", a.configfile, "--world-size", str(a.world_size),
           "--rank", str(a.rank), "--updates", str(a.updates)] + ([] if a.warmup else ["--no-warmup"])
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)}: exit {proc.returncode}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, nargs="+", default=[1_000_000, 5_000_000, 20_000_000, 50_000_000])
    p.add_argument("--target-pairs", type=int, default=236_000_000, help="the scale to extrapolate to")
    p.add_argument("--configfile", default=str(ROOT / "config/paper.yaml"))
    p.add_argument("--world-size", type=int, default=16, help="data-parallel ranks (the batches' shards)")
    p.add_argument("--rank", type=int, default=0)
    p.add_argument("--ranks-per-node", type=int, default=8)
    p.add_argument("--headroom", type=float, default=1.25, help="factor on the node's total for mem_mb")
    p.add_argument("--updates", type=int, default=20, help="updates' batches collated per epoch")
    p.add_argument("--mean-tokens", type=float, default=18.0, help="mean source length in tokens (incl. EOS)")
    p.add_argument("--vocab", type=int, default=50_000, help="dictionary entries (uint16 token ids)")
    p.add_argument("--max-len", type=int, default=250, help="the model's max positions (for the length tail)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--no-warmup", dest="warmup", action="store_false",
                   help="skip fairseq's read of every .bin at load time (it fills the page cache only)")
    p.add_argument("--no-model", dest="model_run", action="store_false", help="do not build the model")
    p.add_argument("--workdir", type=Path, default=None, help="for the synthetic files (default: a temporary directory)")
    p.add_argument("--out", type=Path, default=None, help="the results JSON (also printed)")
    p.add_argument("--measure", help=argparse.SUPPRESS)  # the child process: one rank on DIR
    p.add_argument("--model", help=argparse.SUPPRESS)  # the child process: the model on DIR's dictionary
    a = p.parse_args(argv)
    if a.measure or a.model:
        print(json.dumps(measure_rank(a) if a.measure else measure_model(a)))
        return {}
    if a.vocab >= 65500:
        p.error("--vocab must be below 65,500 (uint16 token ids)")
    if not 0 <= a.rank < a.world_size:
        p.error(f"--rank {a.rank} is not in [0, --world-size {a.world_size})")
    from laser_repro import config as C

    pairs = C.Plan(C.load(a.configfile)).pairs
    result = {"configfile": a.configfile, "machine": f"{os.cpu_count()} CPUs, "
              f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2 ** 30:.1f} GiB",
              "mean_tokens": a.mean_tokens, "vocab": a.vocab, "runs": []}
    with tempfile.TemporaryDirectory(dir=a.workdir, prefix="laser-host-memory-") as tmp:
        for n in sorted(a.pairs):
            data = Path(tmp) / str(n)
            t0 = time.perf_counter()
            meta = make_data(data, n, pairs, a.vocab, a.mean_tokens, a.max_len, a.seed)
            (data / "meta.json").write_text(json.dumps(meta))
            print(f"[bench] {n:,} pairs written in {time.perf_counter() - t0:.0f}s", file=sys.stderr, flush=True)
            if a.model_run and "model" not in result:
                result["model"] = child("--model", data, a)
            run = child("--measure", data, a)
            run["data"] = {k: v for k, v in meta.items() if k != "used_pairs"}
            result["runs"].append(run)
            shutil.rmtree(data)
    if len(result["runs"]) >= 2:
        result["summary"] = summarize(result["runs"], result.get("model"), a.target_pairs, a.ranks_per_node, a.headroom)
    text = json.dumps(result, indent=1)
    if a.out:
        a.out.write_text(text + "\n")
    print(text)
    return result


if __name__ == "__main__":
    main()
