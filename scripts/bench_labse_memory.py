#!/usr/bin/env python
"""Host memory and batching time of the LaBSE training data at scale (laser_repro.models.labse.data).

Loading: synthetic N-way lines (--langs; random words of a synthetic word list, --min-words ..
--max-words a line) are streamed to files under --workdir, a WordPiece vocabulary is learned on the first
--vocab-lines, and each --lines size is loaded by ``load_split`` (max_len 128) in a fresh process: its RSS
before and its peak RSS after (getrusage). --tokenizer: the WordPiece tokenizer, or a fast stand-in
(WordLookup) for large sizes on slow machines. "tokens" = the flat int32 arrays of today; "lists" (at
--lists-lines only) = the previous storage, every line a list of Python ints (before 25426a3).
Batching: one epoch of dual-encoder batches (--batch-langs, --batch-size) for each --batching-lines
size: forming the first batch, the last one (what a resume at the epoch's end forms) and every batch;
and the previous quadratic ``pair_batches`` (kept below as the baseline) at --old-batching-lines.
Prints one JSON line.

    python scripts/bench_labse_memory.py --lines 1000000 10000000 --lists-lines 1000000
"""
from __future__ import annotations

import argparse
import itertools
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from laser_repro.models.labse import data as labse_data, vocab  # noqa: E402

MAX_LEN = 128


def write_lines(tok: Path, langs, n_lines: int, a) -> None:
    """N-way synthetic lines: line i has the same length in every language, its own random words."""
    tok.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    words = np.array(["".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz"), size=rng.integers(2, 10)))
                      for _ in range(a.word_list)])
    files = {lang: open(tok / f"train.{lang}", "w", encoding="utf-8") for lang in langs}
    try:
        for start in range(0, n_lines, 100_000):
            lengths = rng.integers(a.min_words, a.max_words + 1, size=min(100_000, n_lines - start))
            for lang in langs:
                picks = words[rng.integers(0, len(words), size=int(lengths.sum()))]
                cuts = np.cumsum(lengths)[:-1]
                files[lang].write("".join(" ".join(line) + "\n" for line in np.split(picks, cuts)))
    finally:
        for f in files.values():
            f.close()


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


class WordLookup:
    """The fast stand-in for the WordPiece tokenizer (--tokenizer words): each whitespace word's id in the
    vocabulary ([UNK] where it is none), between [CLS] and [SEP], cut to the truncation length. The
    storage measured is the same; the HF tokenizer takes ~0.3 ms a line on this machine's shared cores."""

    def __init__(self, tokenizer):
        self.ids, self.max_len = tokenizer.get_vocab(), None
        self.cls, self.sep, self.unk = (self.ids[t] for t in (vocab.CLS, vocab.SEP, vocab.UNK))

    def enable_truncation(self, max_len: int) -> None:
        self.max_len = max_len

    def no_truncation(self) -> None:
        self.max_len = None

    def encode_batch(self, lines):
        body = (self.max_len or 10 ** 9) - 2
        return [SimpleNamespace(ids=[self.cls, *[self.ids.get(w, self.unk) for w in line.split()][:body], self.sep])
                for line in lines]


def measure_load(data: Path, langs, storage: str, tokenizer_kind: str) -> dict:
    """In this (fresh) process: load the training lines as ``storage``; peak RSS before and after."""
    tokenizer = vocab.load(data / "tokenizer.json")
    if tokenizer_kind == "words":
        tokenizer = WordLookup(tokenizer)
    before = rss_mb()
    t0 = time.perf_counter()
    if storage == "tokens":
        loaded = labse_data.load_split(data, "train", langs, tokenizer, MAX_LEN)
        tokens = sum(int(v.offsets[-1]) for v in loaded.values())
        lines = sum(len(v) for v in loaded.values())
    else:  # the previous storage: a list of Python int lists from one encode_batch of all the lines
        from laser_repro.core.textio import iter_lines

        tokenizer.enable_truncation(MAX_LEN)
        loaded = {lang: [enc.ids for enc in tokenizer.encode_batch(list(iter_lines(data / "tok" / f"train.{lang}")))]
                  for lang in langs}
        tokens = sum(len(ids) for v in loaded.values() for ids in v)
        lines = sum(len(v) for v in loaded.values())
    seconds = time.perf_counter() - t0
    peak = peak_rss_mb()
    return {"storage": storage, "tokenizer": tokenizer_kind, "lines": lines, "tokens": tokens, "seconds": round(seconds, 1),
            "rss_before_mb": round(before), "peak_rss_mb": round(peak),
            "bytes_per_token": round((peak - before) * 2 ** 20 / tokens, 2)}


def old_pair_batches(pairs, batch_size: int, rng: np.random.Generator) -> list:
    """The previous batching (before 25426a3), the baseline: each batch rescans every pending pair."""
    order = rng.permutation(len(pairs))
    batches, pending = [], [pairs[i] for i in order]
    while pending:
        batch, lines, rest = [], set(), []
        for pair in pending:
            if len(batch) < batch_size and pair[1] not in lines:
                batch.append(pair)
                lines.add(pair[1])
            else:
                rest.append(pair)
        batches.append(batch)
        pending = rest
    return batches


def batching_times(langs, n_lines: int, batch_size: int) -> dict:
    t0 = time.perf_counter()
    first = labse_data.PairBatches(langs, langs[0], n_lines, batch_size, [1, 1])
    first[0]
    t1 = time.perf_counter()
    resumed = labse_data.PairBatches(langs, langs[0], n_lines, batch_size, [1, 1])
    resumed[len(resumed) - 1]
    t2 = time.perf_counter()
    pairs = sum(len(first[b]) for b in range(len(first)))
    t3 = time.perf_counter()
    return {"lines": n_lines, "pairs": pairs, "batches": len(first), "first_batch_s": round(t1 - t0, 2),
            "resume_at_last_batch_s": round(t2 - t1, 2), "epoch_s": round(t3 - t2, 1)}


def old_batching_time(langs, n_lines: int, batch_size: int) -> dict:
    pairs = [(lang, i) for lang in langs[1:] for i in range(n_lines)]
    t0 = time.perf_counter()
    batches = old_pair_batches(pairs, batch_size, np.random.default_rng([1, 1]))
    return {"lines": n_lines, "pairs": len(pairs), "batches": len(batches), "epoch_s": round(time.perf_counter() - t0, 1)}


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lines", type=int, nargs="+", default=[1_000_000, 10_000_000])
    p.add_argument("--lists-lines", type=int, nargs="*", default=[1_000_000], help="sizes to load the old way too")
    p.add_argument("--langs", nargs="+", default=["eng", "fra"])
    p.add_argument("--tokenizer", choices=["wordpiece", "words"], default="wordpiece",
                   help="words: the fast stand-in (WordLookup) for large sizes on slow machines")
    p.add_argument("--min-words", type=int, default=10)
    p.add_argument("--max-words", type=int, default=50)
    p.add_argument("--word-list", type=int, default=20000)
    p.add_argument("--vocab", type=int, default=30000)
    p.add_argument("--vocab-lines", type=int, default=200_000)
    p.add_argument("--batch-langs", nargs="+", default=["eng", "fra", "spa", "rus", "ara", "cmn"])
    p.add_argument("--batch-size", type=int, default=4096)
    p.add_argument("--batching-lines", type=int, nargs="*", default=[1_000_000, 10_000_000])
    p.add_argument("--old-batching-lines", type=int, nargs="*", default=[50_000, 100_000])
    p.add_argument("--workdir", type=Path, default=None, help="for the synthetic files (default: a temporary directory)")
    p.add_argument("--measure", nargs=2, metavar=("DATA", "STORAGE"), help=argparse.SUPPRESS)  # the child process
    a = p.parse_args(argv)
    if a.measure:
        print(json.dumps(measure_load(Path(a.measure[0]), a.langs, a.measure[1], a.tokenizer)))
        return {}
    result = {"langs": a.langs, "words_per_line": [a.min_words, a.max_words], "max_len": MAX_LEN, "load": []}
    with tempfile.TemporaryDirectory(dir=a.workdir) as tmp:
        for n in sorted(a.lines):
            data = Path(tmp) / str(n)
            write_lines(data / "tok", a.langs, n, a)
            sample = Path(tmp) / "sample"
            if not sample.exists():  # one vocabulary, learned on the first --vocab-lines lines
                sample.mkdir()
                for lang in a.langs:
                    with open(data / "tok" / f"train.{lang}", encoding="utf-8") as f:
                        (sample / lang).write_text("".join(itertools.islice(f, a.vocab_lines)), encoding="utf-8")
                tok, _ = vocab.learn({lang: sample / lang for lang in a.langs}, a.vocab)
                tok.save(str(sample / "tokenizer.json"))
            (data / "tokenizer.json").write_bytes((sample / "tokenizer.json").read_bytes())
            for storage in (["lists"] if n in a.lists_lines else []) + ["tokens"]:
                child = subprocess.run([sys.executable, __file__, "--measure", str(data), storage, "--langs", *a.langs,
                                        "--tokenizer", a.tokenizer],
                                       check=True, capture_output=True, text=True)
                result["load"].append(json.loads(child.stdout.strip().splitlines()[-1]))
            for f in (data / "tok").iterdir():
                f.unlink()
    result["batching"] = [batching_times(a.batch_langs, n, a.batch_size) for n in a.batching_lines]
    result["old_batching"] = [old_batching_time(a.batch_langs, n, a.batch_size) for n in a.old_batching_lines]
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
