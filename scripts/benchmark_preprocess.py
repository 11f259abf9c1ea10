#!/usr/bin/env python3
"""Benchmark LASER text preprocessing on one CPU core (a benchmark, not a test).

Measures sentences/second for

* ``fast``        laser_repro.data.preprocess (non-printing removal, Moses
                  normalisation + tokenisation, lower case), fast back-end;
* ``sacremoses``  plain sacremoses normalize + tokenize(escape=False) + lower,
                  i.e. the preprocessing of the ``laserembeddings`` package;
* ``bpe``         the pipeline's BPE (laser_repro.data.bpe, fastBPE semantics) with
                  codes (--merges, default 8000) learned here on the
                  preprocessed benchmark text; a fresh applier per run, which
                  memoizes per word as in the pipeline (the cycled pool makes
                  its cache hit more often than fresh text would);
* ``*+bpe``       end to end: preprocessing followed by BPE;
* ``laserembeddings``  its ``preprocessing.Tokenizer`` if that package is
                  importable (it is not a project dependency: it pins an old
                  sacremoses); its BPE needs the LASER model files, so only the
                  tokenizer is timed.

Input: ``LANG:PATH`` arguments (any number, several per language allowed), or
by default FLORES-200 dev eng_Latn/deu_Latn plus Tatoeba tatoeba.deu-eng.{eng,deu}
from the data root (LASER_REPRO_DATA_ROOT, default ../shared/data next to the
repository).  Lines are de-duplicated (order kept) into a pool that is then
cycled until --sentences lines are reached: with the default data a pool of
~2k distinct sentences (FLORES: long news sentences, Tatoeba: short informal
ones) is repeated ~5 times.  No stage caches anything per sentence, so the
repetition does not flatter any column.

Every column is the best of --repeats runs over the same lines, the runs of
the columns interleaved (the machine may be shared).  Everything runs in one thread;
--pin-cpu N also pins the process to one CPU.  The fast output is also compared, line by line and byte for byte,
with the same pipeline running on sacremoses (``backend="reference"``).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import itertools
import json
import platform
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from laser_repro.data.preprocess import TextPreprocessor

DEFAULT_INPUTS = {
    "en": ["flores200-dev/eng_Latn.dev", "tatoeba-v1/tatoeba.deu-eng.eng"],
    "de": ["flores200-dev/deu_Latn.dev", "tatoeba-v1/tatoeba.deu-eng.deu"],
}


def pin_to_cpu(cpu: int | None) -> str:
    # Everything timed here is single-threaded already (Python); pinning is
    # optional because on a shared machine a fixed CPU may be the busy one.
    if cpu is None:
        return "single thread, not pinned"
    os.sched_setaffinity(0, {cpu})
    return f"single thread, pinned to CPU {cpu}"


def load_lines(paths: list[Path], n: int) -> tuple[list[str], int]:
    pool = {}
    for path in paths:
        with open(path, encoding="utf-8", newline="\n") as f:
            for line in f:
                line = line.rstrip("\n")
                if line.strip():
                    pool.setdefault(line, None)
    if not pool:
        raise SystemExit(f"no text in {paths}")
    return list(itertools.islice(itertools.cycle(pool), n)), len(pool)


def best_rates(jobs: dict, n_items: int, repeats: int) -> dict:
    """Items/second of each job, best of ``repeats``; the runs of the jobs are
    interleaved so that a load change on a shared machine hits all alike."""
    best = dict.fromkeys(jobs, float("inf"))
    for _ in range(repeats):
        for name, fn in jobs.items():
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return {name: n_items / t for name, t in best.items()}


def train_bpe(lines: list[str], merges: int):
    """(codes, vocab) learned on the lines' words (a few thousand sentences may allow fewer merges)."""
    from collections import Counter

    from laser_repro.data import bpe

    words = sorted(Counter(w for line in lines for w in line.split()).items())
    learned = bpe.learn_codes(words, merges)
    vocab = learned.vocab if learned.vocab is not None else bpe.vocab_from_codes(learned.codes, words)
    return learned.codes, vocab


def laserembeddings_tokenizer(lang: str):
    try:
        from laserembeddings.preprocessing import Tokenizer
    except ImportError:  # not installed: skip the column
        return None
    return Tokenizer(lang=lang).tokenize


def bench_language(lang: str, lines: list[str], repeats: int, merges: int) -> dict:
    from sacremoses import MosesPunctNormalizer, MosesTokenizer

    t0 = time.perf_counter()
    fast = TextPreprocessor(lang)
    fast_setup = time.perf_counter() - t0

    normalizer, tokenizer = MosesPunctNormalizer(lang=lang), MosesTokenizer(lang=lang)

    def sacremoses_pre(line: str) -> str:
        return tokenizer.tokenize(normalizer.normalize(line), escape=False, return_str=True).lower()

    # Exactness check: the same pipeline with sacremoses as its Moses back-end.
    fast_out = [fast(line) for line in lines]
    reference = TextPreprocessor(lang, backend="reference")
    mismatches = sum(a != reference(line) for a, line in zip(fast_out, lines))

    from laser_repro.data.bpe import BpeApplier

    codes, vocab = train_bpe(fast_out, merges)

    def encode(texts):
        return BpeApplier(codes).encode(texts)

    n = len(lines)
    res = {
        "lang": lang,
        "sentences": n,
        "mismatches_fast_vs_sacremoses": mismatches,
        "fast_setup_s": round(fast_setup, 3),
        "bpe_merges": len(codes),
        "bpe_vocab": len(vocab),
    }
    jobs = {
        "fast": lambda: [fast(x) for x in lines],
        "sacremoses": lambda: [sacremoses_pre(x) for x in lines],
        "bpe": lambda: encode(fast_out),
        "fast+bpe": lambda: encode([fast(x) for x in lines]),
        "sacremoses+bpe": lambda: encode([sacremoses_pre(x) for x in lines]),
    }
    le = laserembeddings_tokenizer(lang)
    if le is not None:
        jobs["laserembeddings"] = lambda: [le(x) for x in lines]
    res.update(best_rates(jobs, n, repeats))
    res.setdefault("laserembeddings", None)
    res["speedup_e2e"] = res["fast+bpe"] / res["sacremoses+bpe"]
    res["speedup_preprocessing"] = res["fast"] / res["sacremoses"]
    return res


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("inputs", nargs="*", metavar="LANG:PATH", help="text files, e.g. en:news.en (default: FLORES + Tatoeba en/de)")
    p.add_argument("--sentences", "-n", type=int, default=10_000, help="sentences per language (default 10000)")
    p.add_argument("--repeats", type=int, default=3, help="runs per measurement; the best counts (default 3)")
    p.add_argument("--merges", type=int, default=8000, help="BPE merge operations (default 8000)")
    p.add_argument(
        "--data-root",
        type=Path,
        default=REPO / os.environ.get("LASER_REPRO_DATA_ROOT", "../shared/data"),  # relative: to the repository
        help="shared data directory (default: $LASER_REPRO_DATA_ROOT or ../shared/data)",
    )
    p.add_argument("--pin-cpu", type=int, help="pin the process to this CPU (default: no pinning)")
    p.add_argument("--json", type=Path, help="also write the results here")
    args = p.parse_args(argv)

    by_lang: dict[str, list[Path]] = {}
    if args.inputs:
        for item in args.inputs:
            lang, sep, path = item.partition(":")
            if not sep or not lang or not path:
                p.error(f"expected LANG:PATH, got {item!r}")
            by_lang.setdefault(lang, []).append(Path(path))
    else:
        for lang, rels in DEFAULT_INPUTS.items():
            by_lang[lang] = [(args.data_root / rel).resolve() for rel in rels]
        missing = [str(x) for paths in by_lang.values() for x in paths if not x.is_file()]
        if missing:
            p.error(f"default inputs not found: {missing} (pass LANG:PATH or --data-root)")

    pinned = pin_to_cpu(args.pin_cpu)
    import sacremoses

    env = {
        "python": platform.python_version(),
        "sacremoses": getattr(sacremoses, "__version__", "?"),
        "cpu": pinned,
        "machine": platform.machine(),
    }
    print(f"# {env}", file=sys.stderr)

    results = []
    for lang, paths in by_lang.items():
        lines, distinct = load_lines(paths, args.sentences)
        print(f"# {lang}: {distinct} distinct lines from {[str(x) for x in paths]}, cycled to {len(lines)}", file=sys.stderr)
        res = bench_language(lang, lines, args.repeats, args.merges)
        res["distinct_lines"] = distinct
        res["inputs"] = [str(x) for x in paths]
        results.append(res)

    cols = ["fast", "sacremoses", "laserembeddings", "bpe", "fast+bpe", "sacremoses+bpe"]
    print(f"sentences/s on one core (best of {args.repeats})")
    print(f"{'lang':<5}{'lines':>7}" + "".join(f"{c:>16}" for c in cols) + f"{'e2e speedup':>13}{'identical':>11}")
    for r in results:
        cells = "".join(f"{r[c]:>16,.0f}" if r[c] is not None else f"{'n/a':>16}" for c in cols)
        same = "yes" if r["mismatches_fast_vs_sacremoses"] == 0 else f"{r['mismatches_fast_vs_sacremoses']} diff"
        print(f"{r['lang']:<5}{r['sentences']:>7}{cells}{r['speedup_e2e']:>12.1f}x{same:>11}")
    if any(r["laserembeddings"] is None for r in results):
        print("laserembeddings: not importable here, column skipped")

    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"env": env, "repeats": args.repeats, "results": results}, indent=2) + "\n")
    return 0 if all(r["mismatches_fast_vs_sacremoses"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
