#!/usr/bin/env python
"""Speed and memory of margin-based mining (laser_repro.evaluation.mining), optionally checked against a
reference run (e.g. LASER's mine_bitexts.py driven on the same inputs).

For every N: N x N random unit vectors (float32, --dim), ratio margin, k = 4, ``max``
retrieval, LASER's default threshold 0, written to --workdir/n<N>/{src,trg}.npy. With
--planted F, a fraction F of the target rows are noisy copies of source rows
(y = normalise(x + s * u), u a random unit vector, s uniform in [--noise-min, --noise-max]):
gold.tsv lists them (``src_row<TAB>trg_row``) and the best-F1 threshold is computed as BUCC's.

Mining runs in a child process (``bucc-mine``'s code path: .npy files read block by block) and
is timed there; peak memory is the child's ru_maxrss. If --workdir/n<N>/<ref>.tsv exists
(``score<TAB>src_row<TAB>trg_row`` per line, e.g. LASER's output with the row number as the
sentence text) with <ref>.json holding {"wall_s", "peak_rss_mib"}, pairs, scores and F1 are
compared with it.

    python scripts/benchmark_mining.py --n 20000 50000 100000 --threads 2 --workdir /tmp/mining_bench
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from laser_repro.evaluation import bucc, mining
from laser_repro.core.textio import atomic_output


def _unit(a: np.ndarray) -> np.ndarray:
    return (a / np.linalg.norm(a, axis=1, keepdims=True)).astype(np.float32)


def make_inputs(d: Path, n: int, dim: int, planted: float, noise: tuple[float, float], seed: int) -> None:
    """src.npy, trg.npy (and gold.tsv) written block by block; skipped when already there."""
    meta = {"n": n, "dim": dim, "planted": planted, "noise": list(noise), "seed": seed}
    if (d / "inputs.json").exists() and json.loads((d / "inputs.json").read_text()) == meta:
        return
    d.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    block = 10000
    x = np.lib.format.open_memmap(d / "src.npy", mode="w+", dtype=np.float32, shape=(n, dim))
    for s in range(0, n, block):
        x[s:s + block] = _unit(rng.standard_normal((min(block, n - s), dim), dtype=np.float32))
    y = np.lib.format.open_memmap(d / "trg.npy", mode="w+", dtype=np.float32, shape=(n, dim))
    for s in range(0, n, block):
        y[s:s + block] = _unit(rng.standard_normal((min(block, n - s), dim), dtype=np.float32))
    n_planted = round(planted * n)
    src_rows = np.sort(rng.choice(n, size=n_planted, replace=False))
    trg_rows = rng.choice(n, size=n_planted, replace=False)
    if n_planted:
        u = _unit(rng.standard_normal((n_planted, dim), dtype=np.float32))
        scale = rng.uniform(noise[0], noise[1], size=(n_planted, 1)).astype(np.float32)
        y[trg_rows] = _unit(x[src_rows] + scale * u)
    x.flush()
    y.flush()
    del x, y
    with atomic_output(d / "gold.tsv") as f:
        for i, j in zip(src_rows.tolist(), trg_rows.tolist()):
            f.write(f"{i}\t{j}\n")
    (d / "inputs.json").write_text(json.dumps(meta))


def run_child(d: Path, threads: int, shard_rows: int, ties: str) -> dict:
    """Mine in a child process; wall time measured there, peak RSS and CPU time from wait4."""
    cmd = [sys.executable, __file__, "_mine", "--src", str(d / "src.npy"), "--trg", str(d / "trg.npy"),
           "--out", str(d / "ours.tsv"), "--threads", str(threads), "--shard-rows", str(shard_rows),
           "--ties", ties]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"mining child failed with status {proc.returncode}")
    result = json.loads(out.strip().splitlines()[-1])
    result["cpu_s"] = usage.ru_utime + usage.ru_stime
    result["peak_rss_mib"] = usage.ru_maxrss / 1024  # Linux: KiB
    return result


def child_main(argv) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--src")
    p.add_argument("--trg")
    p.add_argument("--out")
    p.add_argument("--threads", type=int)
    p.add_argument("--shard-rows", type=int)
    p.add_argument("--ties")
    a = p.parse_args(argv)
    start = time.perf_counter()
    cands = mining.mine(mining.open_npy(a.src), mining.open_npy(a.trg), k=4, margin="ratio", mode="max",
                        shard_rows=a.shard_rows, threads=a.threads, threshold=0.0, ties=a.ties)
    mining.write_candidates(a.out, cands)
    print(json.dumps({"wall_s": time.perf_counter() - start, "candidates": len(cands)}))


def f1_on_gold(cands: mining.Candidates, gold_path: Path) -> dict | None:
    gold = {tuple(line.split("\t")) for line in gold_path.read_text().splitlines() if line}
    if not gold:
        return None
    pairs = list(zip(map(str, cands.src.tolist()), map(str, cands.trg.tolist())))
    res = bucc.optimize_threshold(pairs, cands.score, gold)
    return {k: res[k] for k in ("threshold", "precision", "recall", "f1", "extracted", "correct", "gold_pairs")}


def compare(ours: mining.Candidates, ref: mining.Candidates) -> dict:
    same_pairs = len(ours) == len(ref) and bool(np.array_equal(ours.src, ref.src) and np.array_equal(ours.trg, ref.trg))
    ours_set = set(zip(ours.src.tolist(), ours.trg.tolist()))
    ref_set = set(zip(ref.src.tolist(), ref.trg.tolist()))
    out = {"same_pairs_same_order": same_pairs, "same_pair_set": ours_set == ref_set,
           "only_ours": len(ours_set - ref_set), "only_ref": len(ref_set - ours_set)}
    if ours_set == ref_set:
        ref_score = dict(zip(zip(ref.src.tolist(), ref.trg.tolist()), ref.score.tolist()))
        diff = np.abs(ours.score - np.array([ref_score[p] for p in zip(ours.src.tolist(), ours.trg.tolist())]))
        out["max_abs_score_diff"] = float(diff.max()) if len(diff) else 0.0
    return out


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_mine"]:
        return child_main(argv[1:])
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, nargs="+", default=[50000, 100000], help="sentences per side")
    p.add_argument("--dim", type=int, default=1024)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--shard-rows", type=int, default=mining.DEFAULT_SHARD_ROWS)
    p.add_argument("--ties", choices=mining.TIES, default="stable",
                   help="laser: LASER's (unstable) order of equal scores, for a line-by-line comparison")
    p.add_argument("--planted", type=float, default=0.0, help="fraction of planted translation pairs")
    p.add_argument("--noise-min", type=float, default=3.0)
    p.add_argument("--noise-max", type=float, default=12.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--workdir", default="/tmp/mining_bench")
    p.add_argument("--ref", default="laser", help="name of the reference files <ref>.tsv / <ref>.json")
    p.add_argument("--json", help="also write all results here")
    a = p.parse_args(argv)

    rows = []
    for n in a.n:
        d = Path(a.workdir) / f"n{n}"
        make_inputs(d, n, a.dim, a.planted, (a.noise_min, a.noise_max), a.seed)
        res = {"n": n, "ours": run_child(d, a.threads, a.shard_rows, a.ties)}
        ours = mining.read_candidates(d / "ours.tsv")
        res["ours"]["f1"] = f1_on_gold(ours, d / "gold.tsv")
        if (d / f"{a.ref}.tsv").exists():
            ref = mining.read_candidates(d / f"{a.ref}.tsv")
            res["ref"] = json.loads((d / f"{a.ref}.json").read_text()) if (d / f"{a.ref}.json").exists() else {}
            res["ref"]["f1"] = f1_on_gold(ref, d / "gold.tsv")
            res["comparison"] = compare(ours, ref)
        rows.append(res)
        print(json.dumps(res), file=sys.stderr)

    print(f"{'N':>7} | {'ours s':>7} {'ours CPU s':>10} {'ours MiB':>8} | {a.ref + ' s':>8} {a.ref + ' MiB':>10} | "
          f"{'same pairs':>10} {'max |dscore|':>12} | {'F1 ours':>8} {'F1 ' + a.ref:>9}")
    for r in rows:
        o, ref, c = r["ours"], r.get("ref", {}), r.get("comparison", {})
        f1o = f"{100 * o['f1']['f1']:.2f}" if o.get("f1") else "-"
        f1r = f"{100 * ref['f1']['f1']:.2f}" if ref.get("f1") else "-"
        print(f"{r['n']:>7} | {o['wall_s']:>7.1f} {o['cpu_s']:>10.1f} {o['peak_rss_mib']:>8.0f} | "
              f"{ref.get('wall_s', float('nan')):>8.1f} {ref.get('peak_rss_mib', float('nan')):>10.0f} | "
              f"{c.get('same_pairs_same_order', '-')!s:>10} {c.get('max_abs_score_diff', float('nan')):>12.2e} | "
              f"{f1o:>8} {f1r:>9}")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
