"""LaBSE training, both stages, one rank at a time under the shared launcher (laser_repro.models.training):

* ``stage: pretrain`` -- MLM + TLM (Section 3.4) on the training lines, with progressive stacking
  (L/4 -> L/2 -> L layers for 400k : 800k : 1.8M of the updates, each deeper model starting from the
  shallower one's layers stacked twice, Gong et al. 2019); the kept model is the last;
* ``stage: dual`` -- the dual encoder with the bidirectional additive-margin ranking loss (Section 2),
  from scratch or from a pre-training checkpoint (``init_checkpoint``); validation every
  ``validate_interval_updates``: dev loss and the similarity error of the held-out lines of every
  language pair (as the multienc family, Algorithm 1); the kept model has the lowest error.

AdamW, linear warm-up then linear decay to 0 at ``max_update`` (Section 3.2). Several processes
(torchrun / srun) split each global batch into contiguous slices; embeddings are gathered with their
gradients (cross-accelerator negatives, Section 3.3) and the gradients summed, so k processes make the
update of one process with the whole batch; ``micro_batch`` bounds the pairs a process embeds at once
(gradient caching, laser_repro.models.labse.grad_cache: the same gradient). Batches and masks come from
RNGs seeded with (seed, epoch) and (seed, update): a resumed run continues exactly. Device, precision,
checkpoints and collectives: laser_repro.models.training_loop.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Callable, Mapping, Optional

import numpy as np
import torch
import torch.nn.functional as F

from laser_repro.models.checkpoint_safety import load_model_file
from laser_repro.models.collectives import Comm
from laser_repro.models.device import PRECISIONS
from laser_repro.models.labse import data as labse_data
from laser_repro.models.labse import token_store, vocab
from laser_repro.models.labse.grad_cache import dual_encoder_step
from laser_repro.models.labse.model import (DEFAULT_ENCODER, DEFAULT_LOSS, bidirectional_ams_loss, build_encoder,
                                            build_masked_lm, complete, sentence_embedding)
from laser_repro.models.launch import Rank
from laser_repro.models.similarity import similarity_error_matrix
from laser_repro.models.training_loop import (CHECKPOINT_BEST, CHECKPOINT_INIT, CHECKPOINT_LAST,  # noqa: F401
                                              CURVES_FILE, CheckpointedTraining, run_training)

STAGES = ("dual", "pretrain")
#: the paper's dual-encoder training (Section 3.2: AdamW, lr 1e-3 decayed linearly, batch 4096, 50k updates
#: after pre-training); weight decay and warm-up are not stated: AdamW's usual 0.01, no warm-up
DEFAULT_TRAIN = {"batch_size": 4096, "lr": 1e-3, "weight_decay": 0.01, "warmup_updates": 0, "max_update": 50000,
                 "clip_norm": None, "validate_interval_updates": 1000, "seed": 1, "log_interval": 100,
                 "precision": "fp32", "micro_batch": None}
#: pre-training only (Section 3.4): 20% of the tokens masked, at most 80; progressive stacking
PRETRAIN_TRAIN = {"mask_prob": 0.2, "max_masked": 80, "progressive_stacking": True}
#: progressive stacking: (fraction of the layers, share of the updates) of the paper's three stages
STACKING = ((4, 400), (2, 800), (1, 1800))
SETTINGS_KEYS = ("stage", "languages", "pivot", "tokenizer", "init_checkpoint", "encoder", "loss", "train")
#: what a resumed run must share with its checkpoint
FIXED_SETTINGS = ("stage", "languages", "pivot", "init_checkpoint", "encoder", "loss")


def complete_settings(settings: Mapping) -> dict:
    """Validated settings with the defaults filled in, as plain JSON types (checkpoint-safe)."""
    unknown = set(settings) - set(SETTINGS_KEYS)
    if unknown:
        raise ValueError(f"labse settings: unknown key(s) {sorted(unknown)} (known: {list(SETTINGS_KEYS)})")
    stage = settings.get("stage", "dual")
    if stage not in STAGES:
        raise ValueError(f"labse settings: stage {stage!r} is not one of {STAGES}")
    train = complete(settings.get("train", {}), {**DEFAULT_TRAIN, **(PRETRAIN_TRAIN if stage == "pretrain" else {})},
                     "train")
    for key in ("batch_size", "max_update", "validate_interval_updates"):
        if not isinstance(train[key], int) or train[key] < 1:
            raise ValueError(f"labse settings: 'train' {key} must be a positive integer, not {train[key]!r}")
    if train["precision"] not in PRECISIONS:
        raise ValueError(f"labse settings: 'train' precision {train['precision']!r} is not one of {PRECISIONS}")
    if stage == "dual" and not (train["micro_batch"] is None or isinstance(train["micro_batch"], int)
                                and train["micro_batch"] >= 0):
        raise ValueError(f"labse settings: 'train' micro_batch must be null or an integer >= 0, not {train['micro_batch']!r}")
    languages = list(settings["languages"])
    pivot = settings.get("pivot", "eng")
    if pivot not in languages or len(languages) < 2:
        raise ValueError(f"labse settings: pivot {pivot!r} must be one of 'languages' {languages} (at least 2)")
    if stage == "pretrain" and settings.get("init_checkpoint"):
        raise ValueError("labse settings: a pre-training stage starts from scratch (init_checkpoint is for 'dual')")
    out = {"stage": stage, "languages": languages, "pivot": pivot, "tokenizer": str(settings["tokenizer"]),
           "init_checkpoint": settings.get("init_checkpoint"),
           "encoder": complete(settings.get("encoder", {}), DEFAULT_ENCODER, "encoder"),
           "loss": complete(settings.get("loss", {}), DEFAULT_LOSS, "loss"), "train": train}
    return json.loads(json.dumps(out))


def stacking_schedule(layers: int, max_update: int, enabled: bool) -> list[tuple[int, int]]:
    """[(depth, first update), ...] of the pre-training stages (one stage without stacking or < 4 layers)."""
    if not enabled or layers < 4:
        return [(layers, 0)]
    total = sum(share for _, share in STACKING)
    schedule, start = [], 0
    for divisor, share in STACKING:
        schedule.append((layers // divisor, start))
        start += round(max_update * share / total)
    return schedule


def stack_layers(state: Mapping[str, torch.Tensor], depth: int) -> dict[str, torch.Tensor]:
    """A deeper model's state: layer j (>= depth) starts as a copy of layer j - depth."""
    out = dict(state)
    for key, value in state.items():
        parts = key.split(".")
        if "layer" in parts:
            at = parts.index("layer") + 1
            parts[at] = str(int(parts[at]) + depth)
            out[".".join(parts)] = value.clone()
    return out


def learning_rate(opts: Mapping, update: int) -> float:
    """Linear warm-up to ``lr`` over ``warmup_updates``, then linear decay to 0 at ``max_update``."""
    warm, total, lr = opts["warmup_updates"], opts["max_update"], opts["lr"]
    if warm and update < warm:
        return lr * (update + 1) / warm
    return lr * max(0.0, (total - update) / max(1, total - warm))


class _Training(CheckpointedTraining):
    family, fixed_settings = "labse", FIXED_SETTINGS

    def __init__(self, data_dir: Path, save_dir: Path, settings: dict, rank: Rank, comm: Comm, log: logging.Logger):
        super().__init__(save_dir, settings, rank, comm, log)
        self.stage = settings["stage"]
        self.enc = settings["encoder"]
        self.tokenizer_json = Path(settings["tokenizer"]).read_text(encoding="utf-8")
        self.tokenizer = vocab.load(settings["tokenizer"])
        self.vocab_size = self.tokenizer.get_vocab_size()
        langs, self.pivot = settings["languages"], settings["pivot"]
        # token ids tokenized once (rule labse_tokenize), mapped read-only: one copy in the page cache for all ranks
        store = token_store.open_for_training(data_dir, settings["tokenizer"], langs, save_dir,
                                              is_master=rank.is_master, barrier=comm.barrier, log_=log)
        self.train_data = store.split("train", langs, self.enc["max_len"])
        self.valid_data = store.split("valid", langs, self.enc["max_len"])
        if self.stage == "pretrain":
            self.examples = labse_data.PretrainingExamples(langs, self.pivot, len(self.train_data[self.pivot]))
        self.schedule = (stacking_schedule(self.enc["layers"], self.opts["max_update"], self.opts["progressive_stacking"])
                         if self.stage == "pretrain" else [(self.enc["layers"], 0)])
        torch.manual_seed(self.opts["seed"])
        self.depth = self.schedule[0][0]
        self.model = self._build(self.depth)
        if self.stage == "dual" and settings["init_checkpoint"]:
            self._load_pretrained(settings["init_checkpoint"])
        self.optimizer = self._optimizer()
        self.state = {"num_updates": 0, "epoch": 1, "batch_index": 0, "depth": self.depth,
                      "best_similarity_error": None, "best_update": None, "best_valid_loss": None,
                      "history": [], "train_loss_sum": 0.0, "train_batches": 0}
        self._epoch_batches: tuple[int, list] = (0, [])

    # ---- model ---------------------------------------------------------------------------------
    def _build(self, depth: int):
        return self.place(lambda: (build_encoder if self.stage == "dual" else build_masked_lm)(
            self.enc, self.vocab_size, depth))

    def _optimizer(self):
        return torch.optim.AdamW(self.model.parameters(), lr=learning_rate(self.opts, self.state_updates()),
                                 weight_decay=self.opts["weight_decay"])

    def state_updates(self) -> int:
        return getattr(self, "state", {}).get("num_updates", 0)

    def encoder(self):
        return self.model if self.stage == "dual" else self.model.bert

    def _load_pretrained(self, path) -> None:
        ckpt = load_model_file(path, what="labse pre-training checkpoint", rebuild="rerun the pre-training",
                               weights_only=True, map_location="cpu")
        if ckpt.get("stage") != "pretrain" or ckpt["settings"]["encoder"] != self.enc:
            raise ValueError(f"{path}: not a pre-training checkpoint of this encoder ({self.enc})")
        if ckpt["tokenizer"] != self.tokenizer_json:
            raise ValueError(f"{path}: pre-trained with another vocabulary than {self.settings['tokenizer']}")
        bert = {k[len("bert."):]: v for k, v in ckpt["model"].items() if k.startswith("bert.")}
        self.model.load_state_dict(bert)

    def _grow(self, depth: int) -> None:
        """Progressive stacking: the next, deeper model starts from this one's layers, stacked."""
        state = self.model.state_dict()
        while self.depth < depth:
            state = stack_layers(state, self.depth)
            self.depth *= 2
        self.model = self._build(depth)
        self.model.load_state_dict(state)
        self.optimizer = self._optimizer()
        self.state["depth"] = depth
        if self.rank.is_master:
            self.log.info("progressive stacking: %d layers from update %d", depth, self.state["num_updates"])

    # ---- checkpoints ----------------------------------------------------------------------------
    def check_compatible(self, ckpt: dict, path: Path) -> None:
        if ckpt["tokenizer"] != self.tokenizer_json:
            raise ValueError(f"{path}: trained with another vocabulary than {self.settings['tokenizer']}")

    def restore(self, ckpt: dict) -> None:
        if self.state["depth"] != self.depth:
            self.depth = self.state["depth"]
            self.model = self._build(self.depth)
        self.model.load_state_dict(ckpt["model"])
        self.optimizer = self._optimizer()
        self.optimizer.load_state_dict(ckpt["optimizer"])

    def position(self) -> str:
        return f"{super().position()}, {self.depth} layers"

    def checkpoint_fields(self) -> dict:
        return {"family": "labse", "stage": self.stage, "tokenizer": self.tokenizer_json, "vocab_size": self.vocab_size}

    # ---- training --------------------------------------------------------------------------------
    def finished(self) -> bool:
        return self.state["num_updates"] >= self.opts["max_update"]

    def epoch_batches(self) -> list:
        if self._epoch_batches[0] != self.state["epoch"]:
            seed = [self.opts["seed"], self.state["epoch"]]
            if self.stage == "dual":
                batches = labse_data.PairBatches(self.settings["languages"], self.pivot,
                                                 len(self.train_data[self.pivot]), self.opts["batch_size"], seed)
            else:
                batches = labse_data.ShuffledBatches(self.examples, self.opts["batch_size"], np.random.default_rng(seed))
            self._epoch_batches = (self.state["epoch"], batches)
        return self._epoch_batches[1]

    def _slices(self, batch: list) -> tuple[list, list[int], int]:
        """This rank's contiguous slice of ``batch``, every rank's slice size, and this slice's offset."""
        parts = np.array_split(np.arange(len(batch)), self.rank.world_size)
        sizes = [len(p) for p in parts]
        mine = parts[self.rank.rank]
        return [batch[i] for i in mine], sizes, int(sum(sizes[:self.rank.rank]))

    def dual_step(self, mine: list, sizes: list[int], offset: int) -> torch.Tensor:
        """The loss of this slice, backpropagated (in chunks of ``micro_batch`` pairs: gradient caching; the
        embeddings under the precision's autocast, the loss over the whole batch in float32)."""
        def embed(sentences):
            with self.precision.autocast():
                return self.precision.widen(self._embed_batch(sentences))

        scaler = self.precision.scaler
        return dual_encoder_step(embed, [self.train_data[lang][i] for lang, i in mine],
                                 [self.train_data[self.pivot][i] for _, i in mine], sizes=sizes, offset=offset,
                                 loss=self.settings["loss"], chunk=self.opts["micro_batch"],
                                 device=next(self.model.parameters()).device,
                                 scale_loss=scaler.scale if scaler else (lambda value: value))

    def _embed_batch(self, sentences) -> torch.Tensor:
        if not sentences:  # an empty slice (more processes than pairs): no rows, but a graph for all_gather
            return (torch.zeros(0, self.enc["hidden"], device=self.device)
                    + 0 * sum(p.sum() for p in self.model.parameters()))
        ids, mask, _ = labse_data.collate(sentences)
        return sentence_embedding(self.encoder(), *self.to_device(ids, mask))

    def masked_lm_loss(self, mine: list, rng: np.random.Generator) -> tuple[torch.Tensor, float]:
        """Summed cross-entropy of this slice's masked tokens, and their number."""
        tokens = [labse_data.example_tokens(ex, self.train_data, self.pivot, self.enc["max_len"]) for ex in mine]
        ids, mask, types = labse_data.collate([t[0] for t in tokens], [t[1] for t in tokens])
        ids, labels = labse_data.mask_tokens(ids, mask, rng, vocab_size=self.vocab_size,
                                             prob=self.opts["mask_prob"], max_masked=self.opts["max_masked"])
        n_masked = float((labels != labse_data.IGNORE).sum())
        ids, mask, types, labels = self.to_device(ids, mask, types, labels)
        with self.precision.autocast():
            logits = self.model(input_ids=ids, attention_mask=mask, token_type_ids=types).logits
        loss = F.cross_entropy(self.precision.widen(logits).view(-1, logits.shape[-1]), labels.view(-1),
                               ignore_index=labse_data.IGNORE, reduction="sum")
        return loss, n_masked

    def update(self, batch: list) -> None:
        s = self.state
        for depth, start in self.schedule:
            if s["num_updates"] >= start and depth > self.depth:
                self._grow(depth)
        lr = learning_rate(self.opts, s["num_updates"])
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        mine, sizes, offset = self._slices(batch)
        self.optimizer.zero_grad(set_to_none=True)
        params = list(self.model.parameters())
        if self.stage == "dual":
            loss = self.dual_step(mine, sizes, offset)  # already divided by the global batch size; backpropagated
            counts = [loss.item(), 1.0 if self.rank.is_master else 0.0]
        else:
            rng = np.random.default_rng([self.opts["seed"], s["num_updates"], self.rank.rank])
            loss, n_masked = self.masked_lm_loss(mine, rng) if mine else (None, 0.0)
            if loss is not None:
                self.precision.backward(loss)
            counts = [loss.item() if loss is not None else 0.0, n_masked]
        dual = self.stage == "dual"
        loss_sum, n_masked = self.reduce_gradients(params, counts, lambda totals: 1.0 if dual else max(totals[1], 1.0))
        loss_value = loss_sum / (1.0 if dual else max(n_masked, 1.0))
        self.optimizer_step(params)
        s["num_updates"] += 1
        s["batch_index"] += 1
        s["train_loss_sum"] += loss_value
        s["train_batches"] += 1
        self.log_progress(loss_value, len(batch), "pairs" if dual else "examples", lr, loss_format="%.4f")

    # ---- validation -------------------------------------------------------------------------------
    @torch.no_grad()
    def evaluate(self) -> tuple[float, dict]:
        """Dev loss (dual: the ranking loss over batches of the held-out pairs; pretrain: masked-token
        cross-entropy with a fixed mask) and the similarity error matrix of the [CLS] embeddings."""
        self.model.eval()
        size = self.opts["batch_size"]
        langs = self.settings["languages"]
        n_valid = len(self.valid_data[self.pivot])
        embeddings = {}
        for lang in langs:
            with self.precision.autocast():
                chunks = [sentence_embedding(self.encoder(),
                                             *self.to_device(*labse_data.collate(self.valid_data[lang][j:j + size])[:2]))
                          for j in range(0, n_valid, size)]
            embeddings[lang] = self.precision.widen(torch.cat(chunks))
        if self.stage == "dual":
            loss_opts, losses = self.settings["loss"], []
            for lang in (lang for lang in langs if lang != self.pivot):
                for j in range(0, n_valid, size):
                    x, y = embeddings[lang][j:j + size], embeddings[self.pivot][j:j + size]
                    losses.append(bidirectional_ams_loss(x, y, x, y, margin=loss_opts["margin"],
                                                         scale=loss_opts["scale"],
                                                         bidirectional=loss_opts["bidirectional"]).item())
            valid_loss = float(np.mean(losses))
        else:
            rng = np.random.default_rng([self.opts["seed"], 0])  # the same masks at every validation
            examples = labse_data.PretrainingExamples(langs, self.pivot, n_valid)
            total, count = 0.0, 0.0
            for j in range(0, len(examples), size):
                tokens = [labse_data.example_tokens(ex, self.valid_data, self.pivot, self.enc["max_len"])
                          for ex in examples[j:j + size]]
                ids, mask, types = labse_data.collate([t[0] for t in tokens], [t[1] for t in tokens])
                ids, labels = labse_data.mask_tokens(ids, mask, rng, vocab_size=self.vocab_size,
                                                     prob=self.opts["mask_prob"], max_masked=self.opts["max_masked"])
                count += float((labels != labse_data.IGNORE).sum())
                ids, mask, types, labels = self.to_device(ids, mask, types, labels)
                with self.precision.autocast():
                    logits = self.model(input_ids=ids, attention_mask=mask, token_type_ids=types).logits
                total += F.cross_entropy(self.precision.widen(logits).view(-1, logits.shape[-1]), labels.view(-1),
                                         ignore_index=labse_data.IGNORE, reduction="sum").item()
            valid_loss = total / max(count, 1.0)
        self.model.train()
        matrix = similarity_error_matrix({lang: e.cpu().numpy().astype(np.float32) for lang, e in embeddings.items()},
                                         langs)
        return valid_loss, matrix

    def validate(self) -> None:
        values, pairs = None, {}
        if self.rank.is_master:
            valid_loss, matrix = self.evaluate()
            values, pairs = (valid_loss, matrix["mean"]), matrix["pairs"]
        valid_loss, error = self.share_from_master(values, 2)
        s = self.state
        record = {"update": s["num_updates"], "epoch": s["epoch"], "lr": learning_rate(self.opts, s["num_updates"]),
                  "train_loss": s["train_loss_sum"] / s["train_batches"] if s["train_batches"] else None,
                  "valid_loss": valid_loss, "valid_similarity_error": error, "pairs": pairs, "layers": self.depth}
        s["history"].append(record)
        s["train_loss_sum"], s["train_batches"] = 0.0, 0
        # dual: keep the lowest similarity error (ties: the lower dev loss); pre-training: the last model
        improved = (self.stage == "pretrain" or s["best_similarity_error"] is None or error < s["best_similarity_error"]
                    or (error == s["best_similarity_error"] and valid_loss < s["best_valid_loss"]))
        if improved:
            s["best_similarity_error"], s["best_update"], s["best_valid_loss"] = error, s["num_updates"], valid_loss
        if self.rank.is_master:
            self.log.info("validation at update %d | valid loss %.4f | similarity error %.2f%% | kept: update %d (%.2f%%)",
                          s["num_updates"], valid_loss, error, s["best_update"], s["best_similarity_error"])
        self.save_validation(improved)

    def run(self, stop_requested: Callable[[], bool]) -> dict:
        s = self.state
        result = {"start_updates": s["num_updates"], "preempted": False}
        if not s["history"]:
            self.validate()  # update 0: the curves start at the initialisation
        while not self.finished():
            if self.stopped(stop_requested):
                result["preempted"] = True
                break
            batches = self.epoch_batches()
            self.update(batches[s["batch_index"]])
            if s["batch_index"] == len(batches):
                s["epoch"], s["batch_index"] = s["epoch"] + 1, 0
            if s["num_updates"] % self.opts["validate_interval_updates"] == 0 or self.finished():
                self.validate()
        return {"num_updates": s["num_updates"], **result, "best_update": s["best_update"],
                "best_similarity_error": s["best_similarity_error"]}


def train(data_dir, save_dir, settings: Mapping, *, rank: Rank, stop_requested: Callable[[], bool],
          log: Optional[logging.Logger] = None, device: Optional[torch.device] = None) -> dict:
    """Train (or resume from ``save_dir/checkpoint_last.pt``) one LaBSE stage on the N-way text of
    ``data_dir`` (``tok/{train,valid}.LANG``) with the vocabulary ``settings['tokenizer']``, on ``device``
    (None: the worker's, :func:`laser_repro.models.device.worker_device`)."""
    log = log or logging.getLogger("laser_repro")
    settings = complete_settings(settings)
    save_dir = Path(save_dir)
    return run_training(lambda comm: _Training(Path(data_dir), save_dir, settings, rank, comm, log), save_dir,
                        rank=rank, device=device, stop_requested=stop_requested)
