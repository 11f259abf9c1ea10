#!/usr/bin/env python
"""Speed of the LaBSE family on CPU: dual-encoder training pairs/s and embedding sentences/s, the latter
beside a LASER encoder (BiLSTM + max-pooling) embedding the same sentences.

Real sentences: the FLORES-200 dev lines of --langs under --data-root, Moses-preprocessed (cased) and
cut into WordPiece tokens by a vocabulary learned on them (--vocab entries). Training: the family's own
trainer (laser_repro.models.labse.trainer) making --updates updates of --batch-size xx-eng pairs, one
process with --threads threads, after --warmup updates (validation excluded). Embedding: both encoders,
random weights (speed does not depend on them), embed the same token sequences ([CLS]/</s> included),
sorted by length and batched; best of --repeats. Sizes: the small configs' (LaBSE 4 x 256, LASER 1 x 128
BiLSTM as config/compare.yaml) or, with --paper-size, the papers' (BERT base; 5 x 512 BiLSTM).
Prints one JSON line.

    python scripts/benchmark_labse.py --data-root ../shared/data --threads 2
"""
from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from laser_repro.data.preprocess import language_preprocessor  # noqa: E402
from laser_repro.models.collectives import Comm  # noqa: E402
from laser_repro.models.labse import data as labse_data, trainer, vocab  # noqa: E402
from laser_repro.models.labse.model import build_encoder, sentence_embedding  # noqa: E402
from laser_repro.models.laser.encoder import BiLSTMMaxPoolEncoder, SentenceEncoder  # noqa: E402
from laser_repro.models.launch import Rank  # noqa: E402

FLORES = {"eng": "eng_Latn", "fra": "fra_Latn", "spa": "spa_Latn", "rus": "rus_Cyrl", "ara": "arb_Arab",
          "cmn": "zho_Hans"}
SMALL = {"labse": {"layers": 4, "hidden": 256, "heads": 4, "intermediate": 1024, "dropout": 0.1, "max_len": 64},
         "laser": {"layers": 1, "hidden": 128, "embed_dim": 64}}
PAPER = {"labse": {"layers": 12, "hidden": 768, "heads": 12, "intermediate": 3072, "dropout": 0.1, "max_len": 128},
         "laser": {"layers": 5, "hidden": 512, "embed_dim": 320}}


def prepare(root: Path, out: Path, langs, n_train: int, vocab_size: int) -> None:
    (out / "tok").mkdir(parents=True)
    for lang in langs:
        lines = (root / "flores200-dev" / f"{FLORES[lang]}.dev").read_text(encoding="utf-8").splitlines()
        pre = language_preprocessor(lang, lowercase=False)
        for split, part in (("train", lines[:n_train]), ("valid", lines[n_train:])):
            (out / "tok" / f"{split}.{lang}").write_text("".join(pre(x) + "\n" for x in part), encoding="utf-8")
    tok, _ = vocab.learn({lang: out / "tok" / f"train.{lang}" for lang in langs}, vocab_size)
    tok.save(str(out / "tokenizer.json"))


def training_speed(data: Path, langs, sizes: dict, a) -> dict:
    settings = trainer.complete_settings({
        "stage": "dual", "languages": list(langs), "pivot": "eng", "tokenizer": str(data / "tokenizer.json"),
        "encoder": sizes["labse"], "train": {"batch_size": a.batch_size, "max_update": 10 ** 6, "log_interval": 0}})
    run = trainer._Training(data, data / "save", settings, Rank(), Comm(Rank(), torch.device("cpu")),
                           logging.getLogger("bench"))
    batches = run.epoch_batches()
    for batch in batches[:a.warmup]:
        run.update(batch)
    t0 = time.perf_counter()
    pairs = 0
    for batch in batches[a.warmup:a.warmup + a.updates]:
        run.update(batch)
        pairs += len(batch)
    seconds = time.perf_counter() - t0
    return {"updates": a.updates, "batch_size": a.batch_size, "seconds": round(seconds, 2),
            "pairs_per_s": round(pairs / seconds, 1), "s_per_update": round(seconds / a.updates, 3)}


def embedding_speed(data: Path, langs, sizes: dict, a) -> dict:
    tok = vocab.load(data / "tokenizer.json")
    tok.enable_truncation(sizes["labse"]["max_len"])
    lines = [x for lang in langs for x in (data / "tok" / f"valid.{lang}").read_text(encoding="utf-8").splitlines()]
    ids = [enc.ids for enc in tok.encode_batch(lines)]
    torch.manual_seed(0)
    bert = build_encoder(sizes["labse"], tok.get_vocab_size()).eval()
    lstm = sizes["laser"]
    module = BiLSTMMaxPoolEncoder(tok.get_vocab_size(), 0, lstm["embed_dim"], lstm["hidden"], lstm["layers"], True)
    laser = SentenceEncoder(module.eval(), tok.get_vocab(), eos_idx=3, unk_idx=1)
    laser_ids = [s[1:] for s in ids]  # LASER: the same pieces, closed by one end symbol ([SEP] here) instead of [CLS] ... [SEP]

    @torch.no_grad()
    def labse_embed():
        order = np.argsort([len(s) for s in ids], kind="stable")
        for start in range(0, len(order), 128):
            rows = order[start:start + 128]
            input_ids, mask, _ = labse_data.collate([ids[i] for i in rows])
            sentence_embedding(bert, input_ids, mask)

    def laser_embed():
        laser.embed_ids(laser_ids, max_tokens=12000)

    out = {"sentences": len(ids), "mean_tokens": round(float(np.mean([len(s) for s in ids])), 1)}
    for name, run in (("labse", labse_embed), ("laser", laser_embed)):
        run()  # warm-up
        times = []
        for _ in range(a.repeats):
            t0 = time.perf_counter()
            run()
            times.append(time.perf_counter() - t0)
        out[name] = {"sentences_per_s_best": round(len(ids) / min(times), 1),
                     "sentences_per_s_median": round(len(ids) / statistics.median(times), 1)}
    out["laser_over_labse"] = round(out["laser"]["sentences_per_s_best"] / out["labse"]["sentences_per_s_best"], 2)
    return out


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-root", required=True, help="directory with flores200-dev/")
    p.add_argument("--langs", nargs="+", default=list(FLORES))
    p.add_argument("--train-lines", type=int, default=797)
    p.add_argument("--vocab", type=int, default=8000)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--updates", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--paper-size", action="store_true", help="BERT base and the 5 x 512 BiLSTM instead of the small sizes")
    p.add_argument("--skip-training", action="store_true")
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    sizes = PAPER if a.paper_size else SMALL
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        prepare(Path(a.data_root), data, a.langs, a.train_lines, a.vocab)
        result = {"threads": a.threads, "torch": torch.__version__, "sizes": sizes, "vocab": a.vocab}
        if not a.skip_training:
            result["training"] = training_speed(data, a.langs, sizes, a)
        result["embedding"] = embedding_speed(data, a.langs, sizes, a)
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
