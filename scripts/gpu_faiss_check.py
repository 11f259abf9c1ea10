"""faiss GPU mining against the CPU engine, on random embeddings: same neighbours apart from ties, timings.

    PYTHONPATH=src python3 scripts/gpu_faiss_check.py OUT.json [--rows 100000] [--dim 1024] [--k 4]

Needs numpy and a faiss with GPU support that sees a GPU (faiss-gpu-cu12, with the CUDA 12 runtime and
cuBLAS wheels nvidia-cuda-runtime-cu12 and nvidia-cublas-cu12). Both engines of
laser_repro.evaluation.mining search the same unit-normalised rows both ways (source -> target and
back): the CPU block engine and the GPU flat indexes of ``mining.flat_ip_index``. A row's neighbours
agree when they are the same apart from ties (``mining.neighbours_disagree``, within the float32
bound ``mining.dot_tolerance(dim)``); the mined pairs (margin ratio, mode max) of both are compared too.
Writes JSON {setup, seconds, agreement} to OUT.json and exits 1 when a row's neighbours disagree.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np


def unit_rows(rows: int, dim: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((rows, dim), dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("output", type=Path, help="JSON of the setup, timings and agreement")
    p.add_argument("--rows", type=int, default=100_000, help="rows of each side (default 100000)")
    p.add_argument("--dim", type=int, default=1024)
    p.add_argument("--k", type=int, default=4)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)

    import faiss

    from laser_repro.evaluation import mining

    if mining.faiss_gpus() == 0:
        print(f"faiss {faiss.__version__} sees no GPU (GPU support: {hasattr(faiss, 'StandardGpuResources')})",
              file=sys.stderr)
        return 2
    src, trg = unit_rows(args.rows, args.dim, args.seed), unit_rows(args.rows, args.dim, args.seed + 1)
    # a second copy of each source row among the targets, slightly moved: a planted pair to mine
    planted = args.rows // 10
    trg[:planted] = src[:planted] + 0.05 * unit_rows(planted, args.dim, args.seed + 2)
    small = unit_rows(1000, args.dim, args.seed + 3)
    _, warmup_s = timed(mining.knn_both, small, small, args.k, device="gpu")  # CUDA context, cuBLAS handles

    seconds = {"gpu_warmup": warmup_s}
    results = {}
    for engine in ("cpu", "gpu"):
        (fwd, bwd), seconds[f"{engine}_knn_both"] = timed(mining.knn_both, src, trg, args.k, device=engine)
        dots, seconds[f"{engine}_candidate_dots"] = timed(mining.candidate_dots, src, trg, fwd, bwd)
        cands, seconds[f"{engine}_select"] = timed(mining.select, fwd, bwd, margin="ratio", mode="max",
                                                   dots=dots)
        results[engine] = (fwd, bwd, cands)
        print(f"{engine}: kNN both ways {seconds[f'{engine}_knn_both']:.2f} s", flush=True)

    atol = mining.dot_tolerance(args.dim)
    agreement = {"atol": atol}
    for direction, i in (("forward", 0), ("backward", 1)):
        cpu, gpu = results["cpu"][i], results["gpu"][i]
        bad = mining.neighbours_disagree(cpu, gpu, atol)
        agreement[direction] = {
            "rows": int(len(cpu.idx)), "rows_disagreeing": int(len(bad)), "first_disagreeing": bad[:10].tolist(),
            "rows_with_tied_neighbours": int((cpu.idx != gpu.idx).any(axis=1).sum()) - int(len(bad)),
            "max_abs_sim_diff": float(np.abs(cpu.sims - gpu.sims).max())}
    cpu_c, gpu_c = results["cpu"][2], results["gpu"][2]
    cpu_pairs = dict(zip(zip(cpu_c.src.tolist(), cpu_c.trg.tolist()), cpu_c.score.tolist()))
    gpu_pairs = dict(zip(zip(gpu_c.src.tolist(), gpu_c.trg.tolist()), gpu_c.score.tolist()))
    common = cpu_pairs.keys() & gpu_pairs.keys()
    agreement["mined"] = {
        "cpu_pairs": len(cpu_pairs), "gpu_pairs": len(gpu_pairs), "common": len(common),
        "max_abs_score_diff_common": max((abs(cpu_pairs[c] - gpu_pairs[c]) for c in common), default=0.0),
        "planted_found_cpu": sum((i, i) in cpu_pairs for i in range(planted)),
        "planted_found_gpu": sum((i, i) in gpu_pairs for i in range(planted)), "planted": planted}

    setup = {"rows": args.rows, "dim": args.dim, "k": args.k, "seed": args.seed, "faiss": faiss.__version__,
             "faiss_gpus": mining.faiss_gpus(), "shard_rows": mining.DEFAULT_SHARD_ROWS,
             "cpu_count": os.cpu_count(), "faiss_omp_threads": faiss.omp_get_max_threads(),
             "numpy": np.__version__, "python": sys.version.split()[0]}
    try:
        import torch

        setup["gpu_name"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except ImportError:
        setup["gpu_name"] = None
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps({"setup": setup, "seconds": seconds, "agreement": agreement}, indent=2) + "\n")
    print(json.dumps({"seconds": seconds, "agreement": agreement}, indent=2))
    disagreeing = agreement["forward"]["rows_disagreeing"] + agreement["backward"]["rows_disagreeing"]
    if disagreeing:
        print(f"FAIL: {disagreeing} rows with other neighbours on GPU than on CPU (beyond ties)", file=sys.stderr)
        return 1
    print("OK: CPU and GPU neighbours equal apart from ties")
    return 0


if __name__ == "__main__":
    sys.exit(main())
