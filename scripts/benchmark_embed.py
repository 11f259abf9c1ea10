#!/usr/bin/env python
"""Embedding throughput of the standalone encoder (laser_repro.models.laser.encoder) on CPU.

Paper-size encoder (embeddings 320, 5 x 512 BiLSTM, vocabulary 50,000 BPE + 4 specials) with
random weights; synthetic BPE sentences whose lengths are uniform in [--min-len, --max-len]
pieces (+ </s>).  Reports tokens/s (</s> included) and sentences/s of
``SentenceEncoder.embed`` (tokenization, length sorting and batching included), best and
median of --repeats runs, as one JSON line on stdout.

    python scripts/benchmark_embed.py --threads 2 --sentences 2000
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from laser_repro.models.laser.encoder import BiLSTMMaxPoolEncoder, SentenceEncoder  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--sentences", type=int, default=2000)
    p.add_argument("--min-len", type=int, default=5)
    p.add_argument("--max-len", type=int, default=60)
    p.add_argument("--max-tokens", type=int, default=12000)
    p.add_argument("--vocab", type=int, default=50000, help="BPE symbols (fairseq adds 4 specials)")
    p.add_argument("--layers", type=int, default=5)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--embed-dim", type=int, default=320)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    specials = ["<s>", "<pad>", "</s>", "<unk>"]
    dictionary = {s: i for i, s in enumerate(specials)}
    dictionary.update({f"▁p{i}": i + len(specials) for i in range(a.vocab)})
    module = BiLSTMMaxPoolEncoder(len(dictionary), 1, a.embed_dim, a.hidden, a.layers, True)
    encoder = SentenceEncoder(module, dictionary, eos_idx=2, unk_idx=3)

    rng = np.random.default_rng(a.seed)
    lengths = rng.integers(a.min_len, a.max_len + 1, size=a.sentences)
    lines = [" ".join(f"▁p{j}" for j in rng.integers(0, a.vocab, size=n)) for n in lengths]
    tokens = int(lengths.sum()) + a.sentences  # + </s>

    encoder.embed(lines[: min(200, len(lines))], max_tokens=a.max_tokens)  # warm-up
    times = []
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        out = encoder.embed(lines, max_tokens=a.max_tokens)
        times.append(time.perf_counter() - t0)
        print(f"  run: {times[-1]:.2f}s  {tokens / times[-1]:.0f} tokens/s  {a.sentences / times[-1]:.1f} sentences/s",
              file=sys.stderr)
    assert out.shape == (a.sentences, module.output_dim)
    best, median = min(times), statistics.median(times)
    result = {
        "threads": a.threads,
        "torch": torch.__version__,
        "config": f"{a.layers}x{a.hidden} BiLSTM, embed {a.embed_dim}, vocab {len(dictionary)}",
        "sentences": a.sentences,
        "tokens": tokens,
        "mean_tokens_per_sentence": round(tokens / a.sentences, 1),
        "max_tokens": a.max_tokens,
        "best_s": round(best, 3),
        "median_s": round(median, 3),
        "tokens_per_s_best": round(tokens / best),
        "tokens_per_s_median": round(tokens / median),
        "sentences_per_s_best": round(a.sentences / best, 1),
        "sentences_per_s_median": round(a.sentences / median, 1),
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
