#!/usr/bin/env python3
"""Benchmark the joint BPE (laser_repro.data.bpe) and extrapolate it to the paper's corpus (a benchmark, not a test).

Parts (``--part``, default all):

* ``real``       FLORES-200 dev text (``<data-root>/flores200-dev/*.dev``): (a) the 78 paper languages
                 that FLORES has, preprocessed as the pipeline does (Moses, segmenters, romanization,
                 lower case): distinct words against tokens per language, fitted with Heaps' law
                 V = K * N^beta; (b) all 204 files, lower-cased and split on whitespace: word counting
                 throughput, learning time and peak memory for several merge counts, application
                 throughput with the learned codes.
* ``synthetic``  word tables scaled to millions of distinct words: the real FLORES words plus new
                 words spliced from two words of one language (prefix of one, suffix of the other, the
                 length of the first: real subword structure and word lengths), with counts drawn
                 from the real count distribution; learning time and peak memory.
* ``estimate``   the paper's corpus: per language, Table 1's training sentences x tokens per
                 sentence (FLORES, preprocessed) -> distinct words, growing from FLORES's count as
                 N^beta for beta 0.5-0.6 (the exponent fitted on 997 sentences, ~0.8, is the steep
                 start of the curve); the target side (223M sentences) as half English, half
                 Spanish; learning time and memory from a linear fit in distinct words of the runs.
                 The JSON written by --json has every number.

Each learning run is a fresh child process (``--measure WORDS MERGES``) reading a word-frequency file
as ``laser-repro bpe-learn --words`` does; its memory is the child's peak RSS (getrusage ru_maxrss)
minus its RSS before learning.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import platform
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from laser_repro.data import bpe  # noqa: E402
from laser_repro.core.textio import iter_lines  # noqa: E402


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def measure(words_path: str, merges: int, codes_path: str | None = None) -> dict:
    """Child process: learn from a word-frequency file; time and memory (and the codes, if asked)."""
    import logging

    logging.disable(logging.INFO)
    base = rss_mb()
    start = time.perf_counter()
    learned = bpe.learn_codes(bpe.read_word_counts(words_path), merges)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    vocab = learned.vocab if learned.vocab is not None else bpe.vocab_from_codes(
        learned.codes, bpe.read_word_counts(words_path))
    if codes_path:
        bpe.write_codes(learned.codes, codes_path)
    return {"words": learned.stats["words"], "tokens": learned.stats["tokens"], "merges": len(learned.codes),
            "characters": learned.stats["characters"], "vocab": len(vocab), "seconds": round(seconds, 2),
            "learn_only_seconds": learned.stats["learn_seconds"], "rss_base_mb": round(base, 1),
            "peak_mb": round(peak - base, 1),
            "peak_bytes_per_word": round((peak - base) * 2**20 / learned.stats["words"])}


def run_child(words_path: Path, merges: int, codes_path: Path | None = None) -> dict:
    extra = [str(codes_path)] if codes_path else []
    proc = subprocess.run([sys.executable, __file__, "--measure", str(words_path), str(merges), *extra],
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def heaps_fit(tokens: list[str]) -> dict:
    """Distinct words V against tokens N along the text; least squares of log V on log N for N >= 1000."""
    seen, points = set(), []
    mark = 500
    for n, token in enumerate(tokens, 1):
        seen.add(token)
        if n == mark or n == len(tokens):
            points.append((n, len(seen)))
            mark = int(mark * 1.5)
    pts = [(math.log(n), math.log(v)) for n, v in points if n >= 1000 or points[-1][0] < 1000]
    if len(pts) < 2:
        return {"tokens": len(tokens), "types": len(seen), "beta": 0.6, "K": len(seen) / max(len(tokens), 1) ** 0.6}
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    beta = sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
    return {"tokens": len(tokens), "types": len(seen), "beta": round(beta, 4), "K": round(math.exp(my - beta * mx), 4)}


def paper_languages():
    from laser_repro.core import languages

    rows = list(csv.DictReader(open(REPO / "src" / "laser_repro" / "paper_values" / "laser_2019" / "paper_table1.csv", encoding="utf-8")))
    return {r["code"]: int(r["train_sentences"]) for r in rows}, languages


def part_real(root: Path, tmp: Path, merges_list: list[int], out: dict) -> None:
    from laser_repro.data.cli import _preprocessor

    flores = root / "flores200-dev"
    sizes, languages = paper_languages()
    per_lang = {}
    t0 = time.perf_counter()
    for code in [*sizes, "eng", "spa"]:
        lang = languages.get(code)
        path = flores / f"{lang.flores}.dev" if lang.flores else None
        if path is None or not path.is_file():
            continue
        pre = _preprocessor(code, True)
        lines = [pre(line) for line in iter_lines(path)]
        tokens = [t for line in lines for t in line.split()]
        per_lang[code] = {**heaps_fit(tokens), "sentences": len(lines),
                          "tokens_per_sentence": round(len(tokens) / len(lines), 2)}
    out["heaps"] = per_lang
    print(f"# preprocessed {len(per_lang)} languages in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    betas = sorted(v["beta"] for v in per_lang.values())
    print(f"Heaps' law on FLORES dev (997 sentences, preprocessed): beta median {betas[len(betas) // 2]:.3f}, "
          f"range {betas[0]:.3f}-{betas[-1]:.3f}")

    words_path, lowered = flores_words(flores, tmp, out)
    out["real_learn"] = []
    codes_path = tmp / "flores204.codes"
    for merges in sorted(merges_list):
        r = run_child(words_path, merges, codes_path)
        out["real_learn"].append(r)
        print(f"learn real: {r['words']:,} words, {merges:,} merges: {r['seconds']:.1f} s, peak {r['peak_mb']:.0f} MB "
              f"({r['peak_bytes_per_word']} B/word), {r['characters']:,} characters, vocab {r['vocab']:,}")
    # application: the codes of the largest run on the same text, a fresh applier (cold cache)
    applier = bpe.BpeApplier(codes_path, cache_size=1 << 22)
    text = [line for f in sorted(lowered.glob("*.dev")) for line in iter_lines(f)]
    tokens = out["count"]["tokens"]
    start = time.perf_counter()
    for line in text:
        applier.encode_line(line)
    cold = time.perf_counter() - start
    start = time.perf_counter()
    for line in text:
        applier.encode_line(line)
    warm = time.perf_counter() - start
    out["apply"] = {"lines": len(text), "tokens": tokens, "merges": max(merges_list), "cold_seconds": round(cold, 2),
                    "warm_seconds": round(warm, 2), "cold_tokens_per_second": round(tokens / cold),
                    "warm_tokens_per_second": round(tokens / warm)}
    print(f"apply {max(merges_list):,} codes: {tokens / cold:,.0f} tokens/s with an empty word cache "
          f"(every distinct word segmented once), {tokens / warm:,.0f} tokens/s cached")


def flores_words(flores: Path, tmp: Path, out: dict) -> tuple[Path, Path]:
    """All 204 FLORES files lower-cased (whitespace-split by the counter): counting throughput, words file."""
    files = sorted(flores.glob("*.dev"))
    lowered = tmp / "lower"
    lowered.mkdir(exist_ok=True)
    for f in files:
        (lowered / f.name).write_text(f.read_text(encoding="utf-8").lower(), encoding="utf-8")
    start = time.perf_counter()
    counts, stats = bpe.count_words(sorted(lowered.glob("*.dev")))
    seconds = time.perf_counter() - start
    out["count"] = {**stats, "seconds": round(seconds, 2), "tokens_per_second": round(stats["tokens"] / seconds)}
    print(f"count: {stats['files']} files, {stats['lines']:,} lines, {stats['tokens']:,} tokens, "
          f"{stats['words']:,} distinct words in {seconds:.1f} s ({stats['tokens'] / seconds:,.0f} tokens/s)")
    words_path = tmp / "flores204.words"
    bpe.write_word_counts(counts, words_path)
    return words_path, lowered


def part_synthetic(words_path: Path, lowered: Path, sizes: list[int], merges_list: list[int], out: dict,
                   seed: int = 1):
    """Word tables of `sizes` distinct words: the real ones (most frequent first), then new words of
    realistic shape, each spliced from two words of one language (a prefix of one + a suffix of the
    other, as long as the first), with counts drawn from the real count distribution."""
    import bisect

    real = list(bpe.read_word_counts(words_path))
    counts = [c for _, c in real]
    per_language = [sorted(set(f.read_text(encoding="utf-8").split())) for f in sorted(lowered.glob("*.dev"))]
    cumulative, total = [], 0
    for ws in per_language:
        total += len(ws)
        cumulative.append(total)
    rng = random.Random(seed)
    out["synthetic"] = []
    table = dict(real)
    for size in sorted(sizes):
        while len(table) < size:
            ws = per_language[bisect.bisect_right(cumulative, rng.randrange(total))]
            first, second = rng.choice(ws), rng.choice(ws)
            cut = rng.randint(1, len(first))
            rest = len(first) - cut
            word = first[:cut] + (second[-rest:] if rest else "")
            if word not in table:
                table[word] = rng.choice(counts)
        path = tmp_words = words_path.with_name(f"synthetic{size}.words")
        bpe.write_word_counts(dict(list(table.items())[:size]), path)
        for merges in merges_list:
            r = run_child(path, merges)
            out["synthetic"].append(r)
            print(f"learn synthetic: {r['words']:,} words ({r['tokens']:,} tokens), {merges:,} merges: "
                  f"{r['seconds']:.1f} s, peak {r['peak_mb']:.0f} MB ({r['peak_bytes_per_word']} B/word)")
        tmp_words.unlink()


def linear_fit(xs, ys):
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return my - b * mx, b


def part_estimate(out: dict, merges: int, betas=(0.5, 0.55, 0.6)):
    """Distinct words of the paper's corpus: per language, FLORES's (tokens, types) point extended to the
    language's paper-scale token count with V ~ N^beta. The exponent fitted on 997 sentences (~0.8) is
    the steep start of the curve; large corpora grow slower (beta ~0.5-0.6), so that range is used, and
    the languages' word sets are added (an upper bound: names and numbers are shared)."""
    sizes, _ = paper_languages()
    heaps = out["heaps"]
    median = sorted(heaps.values(), key=lambda v: v["types"])[len(heaps) // 2]   # languages FLORES lacks
    target_sentences = sum(sizes.values())
    sides = {**sizes, "eng": target_sentences // 2, "spa": target_sentences - target_sentences // 2}
    # target side: 223M sentences, assumed half English, half Spanish (the paper gives no split);
    # Table 1's English/Spanish source rows, if any, are replaced by it
    tokens = {code: n * heaps.get(code, median)["tokens_per_sentence"] for code, n in sides.items()}
    total_tokens = sum(tokens.values())
    types = {beta: sum(heaps.get(code, median)["types"] * (n / heaps.get(code, median)["tokens"]) ** beta
                       for code, n in tokens.items()) for beta in betas}
    fitted = sum(heaps.get(code, median)["K"] * n ** heaps.get(code, median)["beta"] for code, n in tokens.items())
    central = types[betas[len(betas) // 2]]
    out["estimate"] = {"target_sentences": target_sentences, "tokens": round(total_tokens),
                       "types_by_beta": {str(b): round(v) for b, v in types.items()},
                       "types_fitted_small_sample": round(fitted), "types": round(central)}
    print(f"paper corpus (Table 1 sizes x FLORES tokens/sentence, both sides): {total_tokens / 1e9:.1f}B tokens; "
          "distinct words " + ", ".join(f"{v / 1e6:.0f}M (beta {b})" for b, v in types.items())
          + f"; {fitted / 1e6:.0f}M with the exponents fitted on 997 sentences (too steep)")
    for code in sorted(tokens, key=lambda c: -tokens[c])[:4]:
        h = heaps.get(code, median)
        words = h["types"] * (tokens[code] / h["tokens"]) ** 0.55
        print(f"    {code}: {tokens[code] / 1e6:,.0f}M tokens -> {words / 1e6:.1f}M words (beta 0.55)")
    runs = [r for r in out.get("synthetic", []) + out.get("real_learn", []) if r["merges"] == merges]
    if len(runs) >= 2:
        xs = [r["words"] for r in runs]
        a_t, b_t = linear_fit(xs, [r["seconds"] for r in runs])
        a_m, b_m = linear_fit(xs, [r["peak_mb"] for r in runs])
        print(f"learning {merges:,} merges, linear in distinct words over {len(runs)} runs: {b_t * 1e6:.0f} s and "
              f"{b_m * 1e6 / 1024:.2f} GB per million words")
        for b, n in types.items():
            minutes, gb = (a_t + b_t * n) / 60, (a_m + b_m * n) / 1024
            print(f"    {n / 1e6:.0f}M words (beta {b}): ~{minutes:.0f} min, ~{gb:.0f} GB")
        cps = out["count"]["tokens_per_second"]
        print(f"counting {total_tokens / 1e9:.1f}B tokens at {cps:,.0f} tokens/s per process: "
              f"~{total_tokens / cps / 3600:.1f} h in one process (bpe.threads processes divide it)")
        out["estimate"].update({"learn_seconds_per_word": b_t, "learn_seconds_intercept": a_t,
                                "peak_mb_per_word": b_m, "peak_mb_intercept": a_m,
                                "learn_minutes": (a_t + b_t * central) / 60, "peak_gb": (a_m + b_m * central) / 1024,
                                "count_hours_one_process": total_tokens / cps / 3600})


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-root", type=Path, default=REPO / os.environ.get("LASER_REPRO_DATA_ROOT", "../shared/data"))
    p.add_argument("--part", choices=["all", "real", "synthetic"], default="all")
    p.add_argument("--merges", default="10000,50000", help="comma-separated merge counts (real text)")
    p.add_argument("--sizes", default="500000,1000000,2000000,4000000", help="synthetic distinct-word counts")
    p.add_argument("--synthetic-merges", default="50000")
    p.add_argument("--json", type=Path, help="write the numbers here (an existing file is updated: run the "
                   "parts separately, the estimate uses both)")
    p.add_argument("--measure", nargs="+", metavar="WORDS MERGES [CODES]", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.measure:
        print(json.dumps(measure(a.measure[0], int(a.measure[1]), *a.measure[2:])))
        return 0
    merges_list = [int(x) for x in a.merges.split(",")]
    out = json.loads(a.json.read_text()) if a.json and a.json.is_file() else {}
    out["env"] = {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        if a.part in ("all", "real"):
            part_real(a.data_root, tmp, merges_list, out)
        if a.part in ("all", "synthetic"):
            words_path, lowered = flores_words(a.data_root / "flores200-dev", tmp, out)
            part_synthetic(words_path, lowered, [int(x) for x in a.sizes.split(",")],
                           [int(x) for x in a.synthetic_merges.split(",")], out)
    if "heaps" in out:
        part_estimate(out, int(a.synthetic_merges.split(",")[-1]))
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
