#!/usr/bin/env python
"""Host memory and batching time of the LaBSE training data at scale (laser_repro.models.labse).

Loading: synthetic N-way lines (--langs; random words of a synthetic word list, --min-words ..
--max-words a line) are streamed to files under --workdir, a WordPiece vocabulary is learned on the first
--vocab-lines, and for each --lines size:

* ``build``: the token arrays are made once (token_store.build, what rule labse_tokenize runs) in a fresh
  process: its time, peak RSS and the bytes a token of the files (--id-bytes 4: the 4-byte ids of the
  paper's 501k-entry vocabulary; default: the vocabulary's own, 2 bytes up to 65,536 entries);
* ``mapped``: --ranks K processes at once each open the arrays read-only (max_len 128) and read every
  token, as K training ranks of a node: each one's RSS and PSS (/proc/PID/smaps_rollup: shared pages
  counted once, split among the processes that map them) above its own before loading;
* ``private``: the previous per-rank storage (before the token arrays; 6d0c8d3's ``load_split``): K
  processes at once each tokenize the lines themselves into int32 arrays + int64 offsets;
* ``lists`` (at --lists-lines only, one process): every line a list of Python ints (before 25426a3).

--tokenizer: the WordPiece tokenizer, or a fast stand-in (WordLookup) for large sizes on slow machines
(the same ids wherever the words are whole pieces; the storage measured is the same).
Batching: one epoch of dual-encoder batches (--batch-langs, --batch-size) for each --batching-lines
size: forming the first batch, the last one (what a resume at the epoch's end forms) and every batch;
and the previous quadratic ``pair_batches`` (kept below as the baseline) at --old-batching-lines.
Prints one JSON line.

    python scripts/bench_labse_memory.py --lines 2000000 --ranks 1 2 4 --tokenizer words
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from laser_repro.core.textio import iter_lines  # noqa: E402
from laser_repro.models.labse import data as labse_data, token_store, vocab  # noqa: E402
from laser_repro.models.token_arrays import pack  # noqa: E402

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


def smaps_mb(pid: int) -> dict:
    """RSS and PSS of a process (MB)."""
    with open(f"/proc/{pid}/smaps_rollup") as f:
        fields = {line.split(":")[0]: int(line.split()[1]) for line in f if line.split(":")[0] in ("Rss", "Pss")}
    return {"rss": fields["Rss"] / 1024, "pss": fields["Pss"] / 1024}


def tokenizer_of(data: Path, kind: str):
    tokenizer = vocab.load(data / "tokenizer.json")
    return WordLookup(tokenizer) if kind == "words" else tokenizer


def private_arrays(data: Path, langs, tokenizer) -> dict:
    """The previous per-rank storage: this process tokenizes every line into int32 arrays (6d0c8d3)."""
    tokenizer.enable_truncation(MAX_LEN)
    out = {}
    for lang in langs:
        lines = iter_lines(data / "tok" / f"train.{lang}")

        def encoded():
            while chunk := list(itertools.islice(lines, 10000)):
                yield from (enc.ids for enc in tokenizer.encode_batch(chunk))

        out[lang] = pack(encoded())
    return out


def measure_build(data: Path, langs, tokenizer_kind: str, id_bytes: int) -> dict:
    """In this (fresh) process: make the token arrays of the training lines once."""
    before = rss_mb()
    t0 = time.perf_counter()
    dtype = {2: None, 4: np.int32}[id_bytes]
    manifest = token_store.build(data, data / "tokenizer.json", langs, data / "ids", splits=["train"], dtype=dtype,
                                 encoder=tokenizer_of(data, tokenizer_kind) if tokenizer_kind == "words" else None)
    seconds = time.perf_counter() - t0
    files = manifest["splits"]["train"]["files"]
    tokens = sum(f["tokens"] for f in files.values())
    lines = sum(f["lines"] for f in files.values())
    on_disk = sum((data / "ids" / f[k]).stat().st_size for f in files.values() for k in ("ids", "offsets"))
    return {"storage": "build", "tokenizer": tokenizer_kind, "lines": lines, "tokens": tokens,
            "seconds": round(seconds, 1), "lines_per_s": round(lines / seconds), "rss_before_mb": round(before),
            "peak_rss_mb": round(peak_rss_mb()), "dtype": manifest["dtype"], "file_mb": round(on_disk / 2 ** 20),
            "file_bytes_per_token": round(on_disk / tokens, 3)}


def reader(data: Path, langs, storage: str, tokenizer_kind: str) -> None:
    """One rank (a child of measure_ranks): load, read every token, report, wait until told to exit."""
    before = smaps_mb(os.getpid())
    if storage == "mapped":
        loaded = token_store.open_store(data / "ids", data / "tokenizer.json", langs, splits=["train"]).split("train", langs, MAX_LEN)
    else:
        loaded = private_arrays(data, langs, tokenizer_of(data, tokenizer_kind))
    # every page read, the offsets' too (a trainer reads both)
    checksum = sum(int(v.flat.sum(dtype=np.int64)) + int(v.offsets.sum()) for v in loaded.values())
    tokens = sum(int(v.offsets[-1]) for v in loaded.values())
    print(json.dumps({"before": before, "tokens": tokens, "checksum": checksum}), flush=True)
    sys.stdin.read()  # alive until every rank was measured


def measure_ranks(data: Path, langs, storage: str, tokenizer_kind: str, ranks: int) -> dict:
    """``ranks`` processes loading at once, measured while all of them hold the data."""
    procs = [subprocess.Popen([sys.executable, __file__, "--read", str(data), storage, "--langs", *langs,
                               "--tokenizer", tokenizer_kind], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for _ in range(ranks)]
    t0 = time.perf_counter()
    reports = [json.loads(p.stdout.readline()) for p in procs]
    seconds = time.perf_counter() - t0
    after = [smaps_mb(p.pid) for p in procs]
    for p in procs:
        p.stdin.close()
        p.wait()
    rss = [a["rss"] - r["before"]["rss"] for a, r in zip(after, reports)]
    pss = [a["pss"] - r["before"]["pss"] for a, r in zip(after, reports)]
    tokens = reports[0]["tokens"]
    assert len({r["checksum"] for r in reports}) == 1
    return {"storage": storage, "tokenizer": tokenizer_kind, "ranks": ranks, "tokens": tokens,
            "seconds_all_loaded": round(seconds, 1), "rss_mb_per_rank": [round(x) for x in rss],
            "pss_mb_per_rank": [round(x) for x in pss], "pss_mb_all_ranks": round(sum(pss)),
            "bytes_per_token_all_ranks": round(sum(pss) * 2 ** 20 / tokens, 2)}


def measure_lists(data: Path, langs, tokenizer_kind: str) -> dict:
    """In this (fresh) process: every line a list of Python ints from one encode_batch of all the lines."""
    tokenizer = tokenizer_of(data, tokenizer_kind)
    before = rss_mb()
    tokenizer.enable_truncation(MAX_LEN)
    loaded = {lang: [enc.ids for enc in tokenizer.encode_batch(list(iter_lines(data / "tok" / f"train.{lang}")))]
              for lang in langs}
    tokens = sum(len(ids) for v in loaded.values() for ids in v)
    peak = peak_rss_mb()
    return {"storage": "lists", "tokenizer": tokenizer_kind, "tokens": tokens, "rss_before_mb": round(before),
            "peak_rss_mb": round(peak), "bytes_per_token": round((peak - before) * 2 ** 20 / tokens, 2)}


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
    p.add_argument("--lines", type=int, nargs="+", default=[2_000_000])
    p.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4], help="processes reading at once")
    p.add_argument("--private-ranks", type=int, nargs="*", default=None,
                   help="processes at once for the previous per-rank storage (default: --ranks)")
    p.add_argument("--lists-lines", type=int, nargs="*", default=[], help="sizes to load as lists of ints too")
    p.add_argument("--id-bytes", type=int, choices=[2, 4], default=2,
                   help="4: the paper's 4-byte ids (a 501k-entry vocabulary); 2: this vocabulary's own")
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
    p.add_argument("--batching-lines", type=int, nargs="*", default=[])
    p.add_argument("--old-batching-lines", type=int, nargs="*", default=[])
    p.add_argument("--workdir", type=Path, default=None, help="for the synthetic files (default: a temporary directory)")
    p.add_argument("--child", nargs=2, metavar=("DATA", "WHAT"), help=argparse.SUPPRESS)  # build / lists
    p.add_argument("--read", nargs=2, metavar=("DATA", "STORAGE"), help=argparse.SUPPRESS)  # one rank
    a = p.parse_args(argv)
    if a.read:
        reader(Path(a.read[0]), a.langs, a.read[1], a.tokenizer)
        return {}
    if a.child:
        data, what = Path(a.child[0]), a.child[1]
        out = (measure_build(data, a.langs, a.tokenizer, a.id_bytes) if what == "build"
               else measure_lists(data, a.langs, a.tokenizer))
        print(json.dumps(out))
        return {}
    result = {"langs": a.langs, "words_per_line": [a.min_words, a.max_words], "max_len": MAX_LEN, "load": []}

    def child(data, what):
        proc = subprocess.run([sys.executable, __file__, "--child", str(data), what, "--langs", *a.langs,
                               "--tokenizer", a.tokenizer, "--id-bytes", str(a.id_bytes)],
                              check=True, capture_output=True, text=True)
        return json.loads(proc.stdout.strip().splitlines()[-1])

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
            runs = [lambda: child(data, "build")]
            runs += [lambda k=k: measure_ranks(data, a.langs, "mapped", a.tokenizer, k) for k in a.ranks]
            runs += [lambda k=k: measure_ranks(data, a.langs, "private", a.tokenizer, k)
                     for k in (a.ranks if a.private_ranks is None else a.private_ranks)]
            runs += [lambda: child(data, "lists")] if n in a.lists_lines else []
            for run in runs:
                result["load"].append(run())
                print(json.dumps(result["load"][-1]), file=sys.stderr, flush=True)  # each as it comes
            shutil.rmtree(data)
    result["batching"] = [batching_times(a.batch_langs, n, a.batch_size) for n in a.batching_lines]
    result["old_batching"] = [old_batching_time(a.batch_langs, n, a.batch_size) for n in a.old_batching_lines]
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
