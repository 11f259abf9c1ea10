#!/usr/bin/env python
"""Training speed of the Bi-Sent2Vec kernel (laser_repro.models.bisent2vec.kernel) in words per second per
thread, beside fastText's own CBOW (the anchor: the `fasttext` pip module, words only as Sent2Vec and with its default
character n-grams, run by another Python given with --fasttext-python: it is not a dependency of this project) and, optionally, the paper's C++ program
(epfml/Bi-Sent2Vec built with `make`, --bisent2vec-bin) on the same text.

The text: the FLORES-200 dev lines of --langs (a pair) under --data-root, Moses-preprocessed and lowercased
by the project's preprocessing, repeated --copies times (a larger corpus without new words). Every tool
trains --epochs epochs with the same dimension, negatives, learning rate, subsampling threshold and
min_count; CBOW reads both sides as one monolingual text with a window of 5 (its default). Words/s: the
training tokens of all epochs over the time the training loop ran (ours: the kernel calls, warm, after
one compilation run; the C++ programs: their own progress figure "words/sec/thread", which counts the
same tokens plus one end-of-line token per line). Prints one JSON line.

    python scripts/benchmark_bisent2vec.py --data-root ../shared/data --fasttext-python /tmp/ftenv/bin/python \
        --bisent2vec-bin /tmp/bs2v/fasttext
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from laser_repro.core import languages  # noqa: E402
from laser_repro.data.preprocess import language_preprocessor  # noqa: E402
from laser_repro.models.bisent2vec import kernel, vocab  # noqa: E402
from laser_repro.models.bisent2vec.trainer import initial_weights, thread_states  # noqa: E402

FASTTEXT_CBOW = """
import sys, time, fasttext
path, dim, epoch, lr, neg, t, threads, maxn = sys.argv[1], *map(float, sys.argv[2:])
start = time.perf_counter()
fasttext.train_unsupervised(path, model="cbow", dim=int(dim), epoch=int(epoch), lr=lr, neg=int(neg), t=t,
                            minCount=1, ws=5, thread=int(threads), minn=3 if maxn else 0, maxn=int(maxn), verbose=2)
print("ELAPSED", time.perf_counter() - start)
"""
WORDS_PER_SEC = re.compile(r"words/sec/thread:\s*([0-9]+)")


def prepare(data_root: Path, langs: list[str], copies: int) -> dict[str, list[str]]:
    out = {}
    for lang in langs:
        raw = (data_root / "flores200-dev" / f"{languages.get(lang).flores}.dev").read_text(encoding="utf-8").splitlines()
        preprocess = language_preprocessor(lang, lowercase=True)
        out[lang] = [preprocess(line) for line in raw] * copies
    return out


def ours(text: dict[str, list[str]], langs: list[str], a, ngrams: int, threads: int) -> dict:
    v = vocab.build(text, langs, min_count=1, max_size=None)
    (tok1, off1), (tok2, off2) = (vocab.encode(text[lang], v.lookup(lang)) for lang in langs)
    n_pairs, tokens = len(off1) - 1, len(tok1) + len(tok2)
    nwords = len(v)
    rows = nwords + (a.bucket if ngrams > 1 else 0)
    keep, table = v.keep_probabilities(a.t), v.negative_table(10_000_000, 1)
    max_len = int(max(np.diff(off1).max(), np.diff(off2).max())) + 1

    def run(epochs: int, wi, wo) -> float:
        states = thread_states(1, 0, 0, threads)
        stats = [np.zeros(len(kernel.STATS)) for _ in range(threads)]
        total = float(epochs * tokens)
        start = time.perf_counter()
        for epoch in range(epochs):
            order = np.random.default_rng([1, epoch]).permutation(n_pairs)
            shares = np.array_split(order, threads)

            def work(k: int) -> None:
                kernel.train_pairs(wi, wo, tok1, off1, tok2, off2, shares[k], keep, table, nwords, a.bucket, ngrams,
                                   a.dropout_k, a.neg, a.lr, float(epoch * tokens), total, threads, states[k],
                                   stats[k], max_len)

            with ThreadPoolExecutor(threads) as pool:
                list(pool.map(work, range(threads)))
        return time.perf_counter() - start

    run(1, *initial_weights(rows, nwords, a.dim, 1))  # compile (or load the cache) and warm up
    seconds = run(a.epochs, *initial_weights(rows, nwords, a.dim, 1))
    return {"tool": f"ours (numba kernel), Bi-Sent2Vec {'uni.' if ngrams == 1 else 'uni. + bi.'}", "threads": threads,
            "seconds": round(seconds, 2), "words_per_sec_per_thread": round(a.epochs * tokens / seconds / threads)}


def ours_cbow(text: dict[str, list[str]], langs: list[str], a) -> dict:
    """Our kernel on fastText's CBOW objective (kernel.train_cbow), one thread, the same text as one
    monolingual stream: the like-for-like anchor of the fastText CBOW figure."""
    v = vocab.build(text, langs, min_count=1, max_size=None)
    parts = [vocab.encode(text[lang], v.lookup(lang)) for lang in langs]
    tokens = np.concatenate([ids for ids, _ in parts])
    offsets = np.concatenate([parts[0][1], parts[1][1][1:] + parts[0][1][-1]])
    n_lines, n_tokens = len(offsets) - 1, len(tokens)
    keep, table = v.keep_probabilities(a.t), v.negative_table(10_000_000, 1)
    max_len = int(np.diff(offsets).max()) + 1

    def run(epochs: int) -> float:
        wi, wo = initial_weights(len(v), len(v), a.dim, 1)
        state, stats = thread_states(1, 0, 0, 1)[0], np.zeros(len(kernel.STATS))
        start = time.perf_counter()
        for epoch in range(epochs):
            order = np.random.default_rng([1, epoch]).permutation(n_lines)
            kernel.train_cbow(wi, wo, tokens, offsets, order, keep, table, 5, a.neg, a.lr, float(epoch * n_tokens),
                              float(epochs * n_tokens), 1, state, stats, max_len)
        return time.perf_counter() - start

    run(1)
    seconds = run(a.epochs)
    return {"tool": "ours (numba kernel), fastText's CBOW objective (ws 5, words only)", "threads": 1,
            "seconds": round(seconds, 2), "words_per_sec_per_thread": round(a.epochs * n_tokens / seconds)}


def fasttext_cbow(python: str, text: dict[str, list[str]], a, tmp: Path, subwords: bool) -> dict:
    path = tmp / "cbow.txt"
    path.write_text("".join(line + "\n" for lines in text.values() for line in lines), encoding="utf-8")
    proc = subprocess.run([python, "-c", FASTTEXT_CBOW, str(path), str(a.dim), str(a.epochs), str(a.lr), str(a.neg),
                           str(a.t), "1", "6" if subwords else "0"], capture_output=True, text=True, check=True,
                          cwd=tmp)
    tokens = sum(len(line.split()) for lines in text.values() for line in lines)
    seconds = float(proc.stdout.split("ELAPSED")[-1])
    reported = [int(x) for x in WORDS_PER_SEC.findall(proc.stderr)]
    what = "character 3-6-grams too (its default)" if subwords else "words only (maxn 0), as Sent2Vec"
    return {"tool": f"fastText CBOW (pip module, ws 5, {what})", "threads": 1, "seconds": round(seconds, 2),
            "words_per_sec_per_thread": round(a.epochs * tokens / seconds),
            "reported_words_per_sec_per_thread": reported[-1] if reported else None}


def reference_bisent2vec(binary: str, text: dict[str, list[str]], langs: list[str], a, ngrams: int, tmp: Path) -> dict:
    """The paper's program on its input format (words suffixed by their language, `<<split>>` between)."""
    path = tmp / "pairs.txt"
    tags = [languages.get(lang).paper for lang in langs]
    with open(path, "w", encoding="utf-8") as f:
        for left, right in zip(text[langs[0]], text[langs[1]]):
            f.write(" ".join(w + "_" + tags[0] for w in left.split()) + " <<split>> "
                    + " ".join(w + "_" + tags[1] for w in right.split()) + "\n")
    start = time.perf_counter()
    proc = subprocess.run([binary, "bisent2vec", "-input", str(path), "-output", str(tmp / "ref"), "-dim", str(a.dim),
                           "-lr", str(a.lr), "-neg", str(a.neg), "-bucket", str(a.bucket), "-thread", "1",
                           "-t", str(a.t), "-epoch", str(a.epochs), "-minCount", "1", "-dropoutK", str(a.dropout_k),
                           "-loss", "ns", "-wordNgrams", str(ngrams), "-verbose", "2"],
                          capture_output=True, text=True, check=True)
    reported = [int(x) for x in WORDS_PER_SEC.findall(proc.stderr + proc.stdout)]
    return {"tool": f"epfml/Bi-Sent2Vec C++, {'uni.' if ngrams == 1 else 'uni. + bi.'}", "threads": 1,
            "seconds_with_io": round(time.perf_counter() - start, 2),
            "reported_words_per_sec_per_thread": reported[-1] if reported else None}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-root", type=Path, required=True)
    p.add_argument("--langs", nargs=2, default=["eng", "fra"])
    p.add_argument("--copies", type=int, default=10)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--dim", type=int, default=300)
    p.add_argument("--neg", type=int, default=10)
    p.add_argument("--lr", type=float, default=0.2)
    p.add_argument("--t", type=float, default=1e-4)
    p.add_argument("--bucket", type=int, default=100_000)
    p.add_argument("--dropout-k", type=int, default=4)
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="ours: thread counts to run")
    p.add_argument("--skip-ours", action="store_true", help="only the C++ programs")
    p.add_argument("--fasttext-python", help="a Python with the `fasttext` module (the CBOW anchor)")
    p.add_argument("--bisent2vec-bin", help="the paper's program (epfml/Bi-Sent2Vec `make` output)")
    a = p.parse_args()
    text = prepare(a.data_root, a.langs, a.copies)
    tokens = sum(len(line.split()) for lines in text.values() for line in lines)
    results = []
    for ngrams in (1, 2):
        for threads in ([] if a.skip_ours else a.threads):
            results.append(ours(text, a.langs, a, ngrams, threads))
    if not a.skip_ours:
        results.append(ours_cbow(text, a.langs, a))
    with tempfile.TemporaryDirectory() as tmp:
        if a.fasttext_python:
            for subwords in (False, True):
                results.append(fasttext_cbow(a.fasttext_python, text, a, Path(tmp), subwords))
        if a.bisent2vec_bin:
            for ngrams in (1, 2):
                results.append(reference_bisent2vec(a.bisent2vec_bin, text, a.langs, a, ngrams, Path(tmp)))
    print(json.dumps({"langs": a.langs, "pairs": len(text[a.langs[0]]), "tokens_per_epoch": tokens,
                      "epochs": a.epochs, "dim": a.dim, "neg": a.neg, "t": a.t, "results": results}))


if __name__ == "__main__":
    main()
