"""Benchmark: memory and time of learning the joint SentencePiece model (rule spm_learn) against the size of its
learning sample, on real multilingual text (every file of FLORES-200 dev, NTREX-128 and the WMT news sets under
DATA_ROOT: ~1M distinct lines in ~200 languages and scripts), normalised as LASER2 does.

    .venv/bin/python scripts/bench_spm.py --data-root ../shared/data --out /tmp/bench_spm [--sizes 100000 300000 1000000]

Each size is learned in a fresh process (its peak RSS from getrusage); prints a Markdown table and writes
bench_spm.json. The figures in docs/laser.md ("SentencePiece") and laser_repro.data.spm.learn_resources come from it.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

CHILD = """
import json, resource, sys, time
from pathlib import Path
from laser_repro.data import spm
files = {p.stem: [p] for p in sorted(Path(sys.argv[1]).glob("*.txt"))}
start = time.perf_counter()
stats = spm.learn(files, Path(sys.argv[2]) / "spm.model", vocab_size=int(sys.argv[4]), model_type="unigram",
                  character_coverage=0.9995, sample_sentences=int(sys.argv[3]), alpha=0.3, seed=1, threads=int(sys.argv[5]))
print(json.dumps({"seconds": time.perf_counter() - start, "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "sample_chars": stats["sample_chars"], "sample_sentences": stats["sample_sentences"]}))
"""


def normalised_corpus(data_root: Path, out: Path) -> int:
    """One normalised file per source file (a "language" of the sample); returns the lines written."""
    from laser_repro.data.spm import Laser2Normalizer

    out.mkdir(parents=True, exist_ok=True)
    if any(out.glob("*.txt")):
        return sum(sum(1 for _ in open(p, encoding="utf-8")) for p in out.glob("*.txt"))
    norm = Laser2Normalizer()
    sources = [*sorted((data_root / "flores200-dev").glob("*.dev")), *sorted((data_root / "ntrex-128").glob("*.txt")),
               *sorted(p for p in (data_root / "wmt-news").rglob("*") if p.is_file() and "sgm" not in p.name)]
    total = 0
    for i, src in enumerate(sources):
        with open(src, encoding="utf-8", errors="replace") as f, open(out / f"{i:04d}.txt", "w", encoding="utf-8") as g:
            for line in f:
                g.write(norm(line.rstrip("\n")) + "\n")
                total += 1
    return total


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-root", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 300_000, 1_000_000])
    ap.add_argument("--vocab-sizes", type=int, nargs="+", default=[8000, 50000])
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    text = a.out / "text"
    lines = normalised_corpus(a.data_root, text)
    rows = []
    for vocab in a.vocab_sizes:
        for size in a.sizes:
            model_dir = a.out / f"v{vocab}_n{size}"
            model_dir.mkdir(parents=True, exist_ok=True)
            start = time.perf_counter()
            done = subprocess.run([sys.executable, "-c", CHILD, str(text), str(model_dir), str(size), str(vocab),
                                   str(a.threads)], capture_output=True, text=True)
            if done.returncode:
                print(done.stderr[-2000:], file=sys.stderr)
                rows.append({"vocab_size": vocab, "sample_sentences": size, "error": done.stderr[-300:]})
                continue
            row = json.loads(done.stdout.strip().splitlines()[-1])
            row.update({"vocab_size": vocab, "sample_sentences": size, "wall_s": time.perf_counter() - start})
            rows.append(row)
            print(json.dumps(row), flush=True)
    (a.out / "bench_spm.json").write_text(json.dumps({"corpus_lines": lines, "threads": a.threads, "rows": rows},
                                                     indent=1))
    print(f"\ncorpus: {lines} normalised lines; threads {a.threads}\n")
    print("| vocab | sample lines | learn s | peak RSS MB |\n|---:|---:|---:|---:|")
    for r in rows:
        if "error" not in r:
            print(f"| {r['vocab_size']} | {r['sample_sentences']} | {r['seconds']:.0f} | {r['max_rss_mb']:.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
