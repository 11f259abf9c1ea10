"""Bi-Sent2Vec training under the shared launcher (laser_repro.models.training): one process whose
threads run the compiled kernel (laser_repro.models.bisent2vec.kernel) on the same weights at once
(hogwild, as the paper's fastText-based C++).

An epoch visits every training pair once, in an order drawn from (seed, epoch); the learning rate
decays linearly from ``lr`` to 0 over ``epochs`` x the training tokens (the paper: 5 epochs). The
pairs are processed in chunks of ``chunk_pairs`` (split between the threads); between chunks the
loop checks for a stop request (preemption: ``checkpoint_last.pt`` holds the weights, the position
in the epoch and the threads' RNG states, and a resumed run continues from there). Validation
``validations_per_epoch`` times per epoch (and at update 0): the loss of eq. 3 on the held-out pairs
(no SGD step, fixed negatives) and the similarity error of the two languages' held-out lines
(Algorithm 1 of Schwenk & Douze, as the other families). The kept model is the last (the paper
trains a fixed number of epochs). An "update" here is one sentence pair. A line longer than ``max_len``
words is cut to its first ``max_len`` (the cost of a pair grows with the square of its length); the
lines cut are counted in the run's status (``capped_lines``).

With one thread the run is deterministic; with several, the hogwild updates interleave in the order
the threads happen to run (as fastText).
"""
from __future__ import annotations

import json
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Mapping, Optional

import numpy as np
import torch

from laser_repro.core.textio import count_lines, iter_lines
from laser_repro.data.nway import tok_files
from laser_repro.models.bisent2vec import kernel
from laser_repro.models.bisent2vec import vocab as vocabulary
from laser_repro.models.collectives import atomic_write, derived_seed
from laser_repro.models.launch import Rank
from laser_repro.models.similarity import similarity_error_matrix
from laser_repro.models.training_loop import load_resume_checkpoint

CHECKPOINT_LAST, CHECKPOINT_INIT = "checkpoint_last.pt", "checkpoint_init.pt"
CHECKPOINT_BEST = CHECKPOINT_LAST  # the kept model is the last one (a fixed number of epochs)
CURVES_FILE = "curves.json"
#: Sent2Vec's hyper-parameters as the paper uses them (Section 3: Gupta et al. 2019's, 5 epochs); the values
#: are those of the Bi-Sent2Vec repository's training command (dim 300, lr 0.2, neg 10, t 5e-6, minCount 8,
#: dropoutK 4, 2M buckets, vocabulary cut at 750k, wordNgrams 2 -- 1 for the unigram models)
DEFAULT_MODEL = {"dim": 300, "ngrams": 2, "bucket": 2_000_000, "dropout_k": 4, "neg": 10, "t": 5e-6}
DEFAULT_VOCAB = {"min_count": 8, "max_size": 750_000}
#: max_len: words of a line kept in training (1024: the most fastText reads of a line, its MAX_LINE_SIZE)
DEFAULT_TRAIN = {"epochs": 5, "lr": 0.2, "seed": 1, "validations_per_epoch": 1, "chunk_pairs": 100_000,
                 "neg_table_size": 10_000_000, "log_interval": 100_000, "max_len": 1024}
SETTINGS_KEYS = ("languages", "vocab", "model", "train")
#: what a resumed run must share with its checkpoint
FIXED_SETTINGS = ("languages", "model")


def _complete(given: Mapping, defaults: Mapping, what: str) -> dict:
    unknown = set(given) - set(defaults)
    if unknown:
        raise ValueError(f"bisent2vec settings: unknown key(s) {sorted(unknown)} in {what!r} (known: {sorted(defaults)})")
    return {**defaults, **given}


def complete_settings(settings: Mapping) -> dict:
    """Validated settings with the defaults filled in, as plain JSON types (checkpoint-safe)."""
    unknown = set(settings) - set(SETTINGS_KEYS)
    if unknown:
        raise ValueError(f"bisent2vec settings: unknown key(s) {sorted(unknown)} (known: {list(SETTINGS_KEYS)})")
    languages = list(settings["languages"])
    if len(languages) != 2 or languages[0] == languages[1]:
        raise ValueError(f"bisent2vec settings: 'languages' must be one pair of two languages, not {languages}")
    model = _complete(settings.get("model", {}), DEFAULT_MODEL, "model")
    train = _complete(settings.get("train", {}), DEFAULT_TRAIN, "train")
    if model["ngrams"] not in (1, 2):
        raise ValueError(f"bisent2vec settings: model ngrams must be 1 (unigrams) or 2 (+ bigrams), not {model['ngrams']!r}")
    for section, key in (("model", "dim"), ("model", "bucket"), ("model", "neg"), ("train", "epochs"),
                         ("train", "max_len"), ("train", "validations_per_epoch"), ("train", "chunk_pairs"),
                         ("train", "neg_table_size")):
        value = (model if section == "model" else train)[key]
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"bisent2vec settings: {section!r} {key} must be a positive integer, not {value!r}")
    out = {"languages": languages, "vocab": str(settings["vocab"]), "model": model, "train": train}
    return json.loads(json.dumps(out))


def encode_split(data_dir, split: str, vocab: vocabulary.Vocabulary,
                 max_len: int) -> tuple[list[tuple[np.ndarray, np.ndarray]], dict[str, int]]:
    """Both languages' lines of ``split`` as word ids, each line cut to its first ``max_len`` words (the
    vocabulary counted them all), and the number of lines cut per language; the two files must be
    line-aligned."""
    files = tok_files(data_dir, split, vocab.languages)
    counts = {lang: count_lines(path) for lang, path in files.items()}
    if len(set(counts.values())) != 1:
        raise ValueError(f"bisent2vec: {split} files are not aligned: "
                         + ", ".join(f"{p} ({counts[lang]} lines)" for lang, p in files.items()))
    encoded, capped = [], {}
    for lang in vocab.languages:
        cap = vocabulary.LengthCap(max_len)
        encoded.append(vocabulary.encode(cap(iter_lines(files[lang], progress=True, desc=f"{split} {lang}")),
                                         vocab.lookup(lang)))
        capped[lang] = cap.capped
    return encoded, capped


def initial_weights(rows: int, words: int, dim: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """fastText's initialisation: input rows uniform in [-1/dim, 1/dim], output rows 0."""
    rng = np.random.default_rng(seed)
    wi = rng.uniform(-1.0 / dim, 1.0 / dim, size=(rows, dim)).astype(np.float32)
    return wi, np.zeros((words, dim), dtype=np.float32)


def thread_states(seed: int, epoch: int, position: int, threads: int) -> list[np.ndarray]:
    return [np.array([derived_seed(seed, epoch, position, k) | 1], dtype=np.uint64) for k in range(threads)]


class _Training:
    def __init__(self, data_dir: Path, save_dir: Path, settings: dict, threads: int, log: logging.Logger):
        self.save_dir, self.settings, self.threads, self.log = save_dir, settings, max(1, threads), log
        self.m, self.opts = settings["model"], settings["train"]
        self.vocab = vocabulary.load(settings["vocab"])
        if list(self.vocab.languages) != settings["languages"]:
            raise ValueError(f"{settings['vocab']}: a vocabulary of {list(self.vocab.languages)}, not of "
                             f"{settings['languages']}")
        self.train_data, capped_train = encode_split(data_dir, "train", self.vocab, self.opts["max_len"])
        self.valid_data, capped_valid = encode_split(data_dir, "valid", self.vocab, self.opts["max_len"])
        #: lines cut to max_len words, per split and language (train_status.json)
        self.capped_lines = {"train": capped_train, "valid": capped_valid, "max_len": self.opts["max_len"]}
        if any(n for split in (capped_train, capped_valid) for n in split.values()):
            log.warning("bisent2vec: lines cut to their first %d words (train.max_len): %s", self.opts["max_len"],
                        json.dumps({k: v for k, v in self.capped_lines.items() if k != "max_len"}))
        self.n_pairs = len(self.train_data[0][1]) - 1
        if self.n_pairs == 0:
            raise ValueError(f"bisent2vec: no training pairs in {data_dir}")
        self.epoch_tokens = int(len(self.train_data[0][0]) + len(self.train_data[1][0]))
        self.max_len = int(max(np.diff(off).max(initial=0) for _, off in (*self.train_data, *self.valid_data))) + 1
        self.nwords = len(self.vocab)
        self.rows = self.nwords + (self.m["bucket"] if self.m["ngrams"] > 1 else 0)
        self.keep = self.vocab.keep_probabilities(self.m["t"])
        self.neg_table = self.vocab.negative_table(self.opts["neg_table_size"], self.opts["seed"])
        self.wi, self.wo = initial_weights(self.rows, self.nwords, self.m["dim"], self.opts["seed"])
        self.state = {"num_updates": 0, "epoch": 0, "position": 0, "tokens_done": 0.0, "history": [],
                      "stats": [0.0] * len(kernel.STATS)}
        self.states = thread_states(self.opts["seed"], 0, 0, self.threads)
        self._order: tuple[int, np.ndarray] = (-1, np.empty(0, dtype=np.int64))

    # ---- checkpoints ----------------------------------------------------------------------------
    def resume_or_start(self) -> None:
        last = self.save_dir / CHECKPOINT_LAST
        if not last.exists():
            if not (self.save_dir / CHECKPOINT_INIT).exists():
                self.save(CHECKPOINT_INIT)
            return
        ckpt = load_resume_checkpoint(last, "bisent2vec", self.settings, FIXED_SETTINGS)
        if ckpt["vocab"] != self.vocab.to_state():
            raise ValueError(f"{last}: trained with another vocabulary than {self.settings['vocab']}")
        self.state = {key: ckpt[key] for key in self.state}
        self.wi, self.wo = ckpt["input"].numpy().copy(), ckpt["output"].numpy().copy()
        saved = [np.array([s], dtype=np.int64).view(np.uint64) for s in ckpt["rng"]]
        # another thread count cannot continue the same draws: states derived from the position
        self.states = saved if len(saved) == self.threads else thread_states(
            self.opts["seed"], self.state["epoch"], self.state["position"], self.threads)
        self.log.info("resumed from %s at pair %d (epoch %d, position %d)", last, self.state["num_updates"],
                      self.state["epoch"] + 1, self.state["position"])

    def save(self, name: str) -> None:
        payload = {"format": 1, "family": "bisent2vec", "input": torch.from_numpy(self.wi),
                   "output": torch.from_numpy(self.wo), "vocab": self.vocab.to_state(), "settings": self.settings,
                   **json.loads(json.dumps(self.state)),
                   "rng": [int(s.view(np.int64)[0]) for s in self.states]}
        atomic_write(self.save_dir / name, lambda tmp: torch.save(payload, tmp))

    # ---- training --------------------------------------------------------------------------------
    def total_updates(self) -> int:
        return self.opts["epochs"] * self.n_pairs

    def order(self) -> np.ndarray:
        epoch = self.state["epoch"]
        if self._order[0] != epoch:
            self._order = (epoch, np.random.default_rng([self.opts["seed"], epoch]).permutation(self.n_pairs))
        return self._order[1]

    def validation_points(self) -> list[int]:
        v = self.opts["validations_per_epoch"]
        return sorted({max(1, round(self.n_pairs * k / v)) for k in range(1, v + 1)})

    def run_chunk(self, pairs: np.ndarray) -> np.ndarray:
        """Train on ``pairs`` with the threads (contiguous shares); returns the summed stats."""
        s = self.state
        tokens_before = float(s["tokens_done"])
        (tok1, off1), (tok2, off2) = self.train_data
        shares = np.array_split(pairs, self.threads)
        stats = [np.zeros(len(kernel.STATS)) for _ in shares]
        args = (self.wi, self.wo, tok1, off1, tok2, off2)
        rest = (self.keep, self.neg_table, self.nwords, self.m["bucket"], self.m["ngrams"], self.m["dropout_k"],
                self.m["neg"], self.opts["lr"], tokens_before, float(self.opts["epochs"] * self.epoch_tokens),
                self.threads)

        def work(k: int) -> None:
            kernel.train_pairs(*args, shares[k], *rest, self.states[k], stats[k], self.max_len)

        if self.threads == 1:
            work(0)
        else:
            with ThreadPoolExecutor(self.threads) as pool:
                list(pool.map(work, range(self.threads)))
        return np.sum(stats, axis=0)

    def sentence_vectors(self, ids: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        out = np.zeros((len(offsets) - 1, self.m["dim"]), dtype=np.float32)
        kernel.sentence_vectors(self.wi, ids, offsets, self.m["ngrams"], self.nwords, self.m["bucket"], out)
        return out

    def evaluate(self) -> tuple[float, dict]:
        """Held-out loss per example (eq. 3 without a step: lr 0, negatives from a fixed seed) and the
        similarity error matrix of the held-out lines."""
        (tok1, off1), (tok2, off2) = self.valid_data
        stats = np.zeros(len(kernel.STATS))
        n_valid = len(off1) - 1
        state = np.array([derived_seed(self.opts["seed"], 0, 0, 10**6) | 1], dtype=np.uint64)
        kernel.train_pairs(self.wi, self.wo, tok1, off1, tok2, off2, np.arange(n_valid), self.keep, self.neg_table,
                           self.nwords, self.m["bucket"], self.m["ngrams"], self.m["dropout_k"], self.m["neg"], 0.0,
                           0.0, 1.0, 1, state, stats, self.max_len)
        loss = (stats[0] + stats[2]) / max(stats[1] + stats[3], 1.0)
        langs = self.settings["languages"]
        vectors = {lang: self.sentence_vectors(*self.valid_data[i]) for i, lang in enumerate(langs)}
        return float(loss), similarity_error_matrix(vectors, langs)

    def validate(self, words_per_second: float | None = None) -> None:
        s = self.state
        valid_loss, matrix = self.evaluate()
        stats = s["stats"]
        n = stats[1] + stats[3]
        progress = s["num_updates"] / self.total_updates()
        record = {"update": s["num_updates"], "epoch": s["epoch"] + s["position"] / self.n_pairs,
                  "lr": self.opts["lr"] * max(0.0, 1.0 - progress),
                  "train_loss": (stats[0] + stats[2]) / n if n else None,
                  "train_loss_mono": stats[0] / stats[1] if stats[1] else None,
                  "train_loss_cross": stats[2] / stats[3] if stats[3] else None,
                  "valid_loss": valid_loss, "valid_similarity_error": matrix["mean"], "pairs": matrix["pairs"],
                  "words_per_second": words_per_second}
        s["history"].append(record)
        s["stats"] = [0.0] * len(kernel.STATS)
        self.log.info("validation at pair %d (epoch %.2f) | train loss %s | valid loss %.4f | similarity error %.2f%%",
                      s["num_updates"], record["epoch"],
                      "-" if record["train_loss"] is None else f"{record['train_loss']:.4f}", valid_loss, matrix["mean"])
        atomic_write(self.save_dir / CURVES_FILE, lambda tmp: tmp.write_text(json.dumps(s["history"], indent=1) + "\n"))
        self.save(CHECKPOINT_LAST)

    def run(self, stop_requested: Callable[[], bool]) -> dict:
        s = self.state
        result = {"start_updates": s["num_updates"], "preempted": False}
        if not s["history"]:
            self.validate()  # update 0: the curves start at the initialisation
        points = self.validation_points()
        seen = (time.perf_counter(), 0.0)
        logged = s["num_updates"]
        while s["epoch"] < self.opts["epochs"]:
            if stop_requested():
                self.save(CHECKPOINT_LAST)
                self.log.warning("stop requested: saved %s at pair %d", CHECKPOINT_LAST, s["num_updates"])
                result["preempted"] = True
                break
            nxt = min(p for p in points if p > s["position"])
            stop = min(nxt, s["position"] + self.opts["chunk_pairs"])
            stats = self.run_chunk(self.order()[s["position"]:stop])
            s["stats"] = [a + b for a, b in zip(s["stats"], stats.tolist())]
            s["num_updates"] += stop - s["position"]
            s["tokens_done"] += float(stats[4])
            s["position"] = stop
            seen = (seen[0], seen[1] + stats[4])
            if s["num_updates"] - logged >= self.opts["log_interval"]:
                logged = s["num_updates"]
                self.log.info("pair %d / %d | %.0f words/s (%d threads)", s["num_updates"], self.total_updates(),
                              seen[1] / max(time.perf_counter() - seen[0], 1e-9), self.threads)
            if stop == nxt:
                if stop == self.n_pairs:
                    s["epoch"], s["position"] = s["epoch"] + 1, 0
                speed = seen[1] / max(time.perf_counter() - seen[0], 1e-9)
                self.validate(speed)
                seen = (time.perf_counter(), 0.0)
        return {"num_updates": s["num_updates"], **result, "best_update": s["num_updates"],
                "capped_lines": self.capped_lines}


def train(data_dir, save_dir, settings: Mapping, *, rank: Rank, stop_requested: Callable[[], bool], threads: int = 1,
          log: Optional[logging.Logger] = None) -> dict:
    """Train (or resume from ``save_dir/checkpoint_last.pt``) one Bi-Sent2Vec model on the line-aligned
    text of ``data_dir`` (``tok/{train,valid}.LANG``) with the vocabulary file ``settings['vocab']``."""
    log = log or logging.getLogger("laser_repro")
    if rank.world_size != 1:
        raise ValueError("bisent2vec trains in one process (its threads share the weights): set cpu_processes 1 "
                         "and give the job more CPUs instead")
    settings = complete_settings(settings)
    save_dir = Path(save_dir)
    save_dir.mkdir(parents=True, exist_ok=True)
    training = _Training(Path(data_dir), save_dir, settings, threads, log)
    training.resume_or_start()
    return training.run(stop_requested)
