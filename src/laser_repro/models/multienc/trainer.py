"""Training loop of the multi-encoder model (Schwenk & Douze 2017, Section 4): homogeneous
mini-batches, each on one sampled partial path; validation by dev loss and the dev similarity
error (Algorithm 1), the learning rate decayed whenever the dev similarity error does not improve.

Several processes (torchrun / srun, ``laser_repro.models.launch``) split every global batch into
contiguous slices. The path of an update and the shuffling of an epoch come from RNGs seeded with
``(seed, update)`` / ``(seed, epoch)``, so every rank uses the same encoders and decoders; the
gradients of those modules are summed over the ranks (an all-reduce, no DDP wrapper) and divided
by the global number of target tokens -- the update of one process with the whole batch. Device,
precision, checkpoints and collectives: laser_repro.models.training_loop.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Callable, Mapping, Optional

import numpy as np
import torch

from laser_repro.data import nway
from laser_repro.models import subword
from laser_repro.models.collectives import Comm
from laser_repro.models.device import PRECISIONS
from laser_repro.models.launch import Rank
from laser_repro.models.multienc.data import batches, collate, load_split
from laser_repro.models.multienc.model import Dictionary, build_model, complete_model_settings
from laser_repro.models.multienc.paths import TrainingPaths
from laser_repro.models.similarity import similarity_error_matrix
from laser_repro.models.training_loop import (CHECKPOINT_BEST, CHECKPOINT_INIT, CHECKPOINT_LAST,  # noqa: F401
                                              CURVES_FILE, CheckpointedTraining, run_training)


DEFAULT_TRAIN_SETTINGS = {
    "optimizer": "adam", "lr": 0.001, "lr_decay": 0.5, "batch_size": 96, "clip_norm": 2.0,
    "max_epoch": 5, "max_update": None, "max_len": 60, "seed": 1, "validate_interval_updates": 100,
    "patience": 3, "log_interval": 20, "precision": "fp32",
}
OPTIMIZERS = {"adam": torch.optim.Adam, "sgd": torch.optim.SGD}
SETTINGS_KEYS = ("languages", "paths", "model", "train")
#: what a resumed run must share with its checkpoint (the train settings may change, e.g. max_epoch)
FIXED_SETTINGS = ("languages", "paths", "model")


def complete_settings(settings: Mapping) -> dict:
    """Validated settings with the defaults filled in, as plain JSON types (checkpoint-safe)."""
    unknown = set(settings) - set(SETTINGS_KEYS)
    if unknown:
        raise ValueError(f"multienc settings: unknown key(s) {sorted(unknown)} (known: {list(SETTINGS_KEYS)})")
    train = dict(DEFAULT_TRAIN_SETTINGS)
    unknown = set(settings.get("train", {})) - set(train)
    if unknown:
        raise ValueError(f"multienc settings: unknown key(s) {sorted(unknown)} in 'train' (known: {sorted(train)})")
    train.update(settings.get("train", {}))
    if train["optimizer"] not in OPTIMIZERS:
        raise ValueError(f"multienc settings: 'train' optimizer {train['optimizer']!r} is not one of {sorted(OPTIMIZERS)}")
    if train["precision"] not in PRECISIONS:
        raise ValueError(f"multienc settings: 'train' precision {train['precision']!r} is not one of {PRECISIONS}")
    for key in ("batch_size", "max_epoch", "max_update", "patience", "validate_interval_updates"):
        if train[key] is not None and (not isinstance(train[key], int) or train[key] < (0 if key == "max_update" else 1)):
            raise ValueError(f"multienc settings: 'train' {key} must be a positive integer or null, not {train[key]!r}")
    paths = TrainingPaths(settings["paths"])
    if len(paths.encoder_languages()) < 2:
        raise ValueError(f"multienc settings: 'paths' 'sources' {paths.encoder_languages()}: the dev similarity "
                         f"error (model selection) needs at least 2 languages with an encoder")
    languages = list(settings["languages"])
    missing = [lang for lang in paths.encoder_languages() + paths.decoder_languages() if lang not in languages]
    if missing:
        raise ValueError(f"multienc settings: 'paths' use {sorted(set(missing))}, not in 'languages' {languages}")
    out = {"languages": languages, "paths": settings["paths"],
           "model": complete_model_settings(settings.get("model", {})), "train": train}
    return json.loads(json.dumps(out))


class _Training(CheckpointedTraining):
    """State and steps of one training run (see :func:`train`)."""

    family, fixed_settings = "multienc", FIXED_SETTINGS

    def __init__(self, data_dir: Path, save_dir: Path, settings: dict, rank: Rank, comm: Comm,
                 log: logging.Logger):
        super().__init__(save_dir, settings, rank, comm, log)
        self.paths = TrainingPaths(settings["paths"])
        self.dictionary_path = data_dir / "dict.txt"
        self.dictionary = Dictionary.load(self.dictionary_path)
        # the data's subword model (laser_repro.data.nway): BPE codes, a SentencePiece model, or none
        model_file = nway.subword_model_file(data_dir)
        self.subword_model = subword.codes_record(model_file) if model_file else None
        langs = list(dict.fromkeys(self.paths.encoder_languages() + self.paths.decoder_languages()))
        self.train_data = load_split(data_dir, "train", langs, self.dictionary, self.opts["max_len"])
        self.valid_data = load_split(data_dir, "valid", langs, self.dictionary)
        self.n_train = len(self.train_data[langs[0]])
        torch.manual_seed(self.opts["seed"])
        self.model = self.place(lambda: build_model(settings["model"], self.paths.model_languages(),
                                                    len(self.dictionary)))
        self.optimizer = OPTIMIZERS[self.opts["optimizer"]](self.model.parameters(), lr=self.opts["lr"])
        self.state = {"num_updates": 0, "epoch": 1, "batch_index": 0, "lr": float(self.opts["lr"]),
                      "best_similarity_error": None, "best_update": None, "bad_validations": 0,
                      "best_valid_loss": None, "best_model_loss": None,
                      "history": [], "train_loss_sum": 0.0, "train_tokens": 0}
        self._epoch_batches: tuple[int, list] = (0, [])

    # ---- checkpoints --------------------------------------------------------------------------
    def check_compatible(self, ckpt: dict, path: Path) -> None:
        if ckpt["dictionary"] != self.dictionary.symbols:
            raise ValueError(f"{path}: trained with another dictionary than {self.dictionary_path}")

    def checkpoint_fields(self) -> dict:
        return {"dictionary": list(self.dictionary.symbols), subword.RECORD_KEY: self.subword_model}

    # ---- training -----------------------------------------------------------------------------
    def finished(self) -> bool:
        s, o = self.state, self.opts
        return (s["epoch"] > o["max_epoch"]
                or (o["max_update"] is not None and s["num_updates"] >= o["max_update"])
                or (o["patience"] is not None and s["bad_validations"] >= o["patience"]))

    def epoch_batches(self) -> list:
        if self._epoch_batches[0] != self.state["epoch"]:
            rng = np.random.default_rng([self.opts["seed"], self.state["epoch"]])
            self._epoch_batches = (self.state["epoch"], batches(self.n_train, self.opts["batch_size"], rng))
        return self._epoch_batches[1]

    def update(self, batch: np.ndarray) -> None:
        """One optimiser step on the global ``batch`` (sentence indices) along a sampled path."""
        sources, targets = self.paths.sample(np.random.default_rng([self.opts["seed"], self.state["num_updates"]]))
        mine = np.array_split(batch, self.rank.world_size)[self.rank.rank]
        params = [p for lang in sources for p in self.model.encoders[lang].parameters()]
        params += [p for lang in targets for p in self.model.decoders[lang].parameters()]
        params = list({id(p): p for p in params}.values())  # a shared embedding matrix once
        self.optimizer.zero_grad(set_to_none=True)
        loss_sum, n_tokens = 0.0, 0
        if len(mine):
            def side(langs):
                return {lang: self.collate([self.train_data[lang][i] for i in mine]) for lang in langs}
            with self.precision.autocast():
                loss, n_tokens = self.model.loss(side(sources), side(targets))
            self.precision.backward(loss)
            loss_sum = loss.item()
        loss_sum, n_tokens = self.reduce_gradients(params, [loss_sum, n_tokens], lambda totals: totals[1])
        self.optimizer_step(params)
        self.state["num_updates"] += 1
        self.state["batch_index"] += 1
        self.state["train_loss_sum"] += loss_sum
        self.state["train_tokens"] += int(n_tokens)
        self.log_progress(loss_sum / n_tokens, len(batch), "sentences", self.state["lr"])

    def collate(self, sentences) -> tuple[torch.Tensor, torch.Tensor]:
        """Padded token ids of ``sentences`` on this worker's device, and their lengths (on the CPU, where
        packing reads them)."""
        tokens, lengths = collate(sentences)
        return tokens.to(self.device, non_blocking=True), lengths

    # ---- validation ---------------------------------------------------------------------------
    @torch.no_grad()
    def evaluate(self) -> tuple[float, dict]:
        """Dev loss per target token over the 1:1 pairs of :meth:`TrainingPaths.dev_pairs`, and the
        similarity error matrix of the encoder languages' dev embeddings."""
        self.model.eval()
        size = self.opts["batch_size"]
        loss_sum, n_tokens, embeddings = 0.0, 0, {}
        n_valid = len(self.valid_data[self.paths.sources[0]])
        dev_pairs = self.paths.dev_pairs()
        for source in self.paths.encoder_languages():
            chunks = []
            for start in range(0, n_valid, size):
                rows = range(start, min(start + size, n_valid))
                with self.precision.autocast():
                    sentence = self.model.embed(source, *self.collate([self.valid_data[source][i] for i in rows]))
                    chunks.append(self.precision.widen(sentence))
                    for target in (t for s, t in dev_pairs if s == source):
                        loss, n = self.model.decoders[target](sentence, *self.collate([self.valid_data[target][i]
                                                                                       for i in rows]))
                        loss_sum, n_tokens = loss_sum + loss.item(), n_tokens + n
            embeddings[source] = torch.cat(chunks).cpu().numpy().astype(np.float32)
        self.model.train()
        return loss_sum / n_tokens, similarity_error_matrix(embeddings)

    def validate(self, epoch: int) -> None:
        """Evaluate (master), share the result, decay the lr / count patience, save checkpoints."""
        values, pairs = None, {}
        if self.rank.is_master:
            valid_loss, matrix = self.evaluate()
            values, pairs = (valid_loss, matrix["mean"]), matrix["pairs"]
        valid_loss, error = self.share_from_master(values, 2)
        s = self.state
        record = {"update": s["num_updates"], "epoch": epoch, "lr": s["lr"],
                  "train_loss": s["train_loss_sum"] / s["train_tokens"] if s["train_tokens"] else None,
                  "valid_loss": valid_loss, "valid_similarity_error": error, "pairs": pairs}
        s["history"].append(record)
        s["train_loss_sum"], s["train_tokens"] = 0.0, 0
        # the kept model: the lowest similarity error (ties: the lower loss). Progress, which resets the
        # patience and keeps the learning rate, is a lower similarity error or a lower dev loss -- the
        # paper measures both ("perplexity for the decoders and similarity error ... for the encoders");
        # early on the error sits at chance level while the decoders already learn
        best_error, best_loss = s["best_similarity_error"], s.get("best_valid_loss")
        best_model_loss = s.get("best_model_loss") or float("inf")
        improved = best_error is None or error < best_error or (error == best_error and valid_loss < best_model_loss)
        progress = improved or best_loss is None or valid_loss < best_loss
        if improved:
            s["best_similarity_error"], s["best_update"], s["best_model_loss"] = error, s["num_updates"], valid_loss
        if best_loss is None or valid_loss < best_loss:
            s["best_valid_loss"] = valid_loss
        if progress:
            s["bad_validations"] = 0
        else:
            s["bad_validations"] += 1
            s["lr"] *= self.opts["lr_decay"]
            for group in self.optimizer.param_groups:
                group["lr"] = s["lr"]
        if self.rank.is_master:
            self.log.info("validation at update %d | valid loss %.3f | similarity error %.2f%% | best %.2f%% "
                          "(update %d) | lr %.3g", s["num_updates"], valid_loss, error,
                          s["best_similarity_error"], s["best_update"], s["lr"])
        self.save_validation(improved)

    def run(self, stop_requested: Callable[[], bool]) -> dict:
        s = self.state
        start_updates = s["num_updates"]
        result = {"start_updates": start_updates, "preempted": False}
        while not self.finished():
            if self.stopped(stop_requested):
                result["preempted"] = True
                break
            epoch_batches = self.epoch_batches()
            epoch = s["epoch"]
            self.update(epoch_batches[s["batch_index"]])
            end_of_epoch = s["batch_index"] == len(epoch_batches)
            if end_of_epoch:
                s["epoch"], s["batch_index"] = epoch + 1, 0
            interval = self.opts["validate_interval_updates"]  # None: at the end of every epoch
            if (interval and s["num_updates"] % interval == 0) or (not interval and end_of_epoch):
                self.validate(epoch)
        else:
            if not s["history"] or s["history"][-1]["update"] != s["num_updates"]:
                self.validate(s["epoch"])  # stopped by max_update between validations
            else:
                self.save(CHECKPOINT_LAST)
        return {"num_updates": s["num_updates"], **result, "best_update": s["best_update"],
                "best_similarity_error": s["best_similarity_error"]}


def train(data_dir, save_dir, settings: Mapping, *, rank: Rank, stop_requested: Callable[[], bool],
          log: Optional[logging.Logger] = None, device: Optional[torch.device] = None) -> dict:
    """Train (or resume from ``save_dir/checkpoint_last.pt``) a multi-encoder model on the N-way
    parallel data of ``data_dir`` (:mod:`laser_repro.models.multienc.data`) on ``device`` (None: the
    worker's, :func:`laser_repro.models.device.worker_device`).

    ``stop_requested`` is polled before every update; when true on any rank, ``checkpoint_last.pt``
    is saved and the run returns with ``preempted=True``. Returns ``{"num_updates", "start_updates",
    "preempted", "best_update", "best_similarity_error"}``."""
    log = log or logging.getLogger("laser_repro")
    settings = complete_settings(settings)
    save_dir = Path(save_dir)
    return run_training(lambda comm: _Training(Path(data_dir), save_dir, settings, rank, comm, log), save_dir,
                        rank=rank, device=device, stop_requested=stop_requested)
