"""Learning curves measured during LASER's training: how a researcher sees whether the model converges
and whether its sentence embeddings align languages.

At update 0, every ``interval_updates`` updates and at the end of every epoch, :class:`CurveMonitor`
measures on the master process, in eval mode (no dropout, no random numbers drawn, so the training
run itself is unchanged):

* ``train_loss``: the translation cross-entropy (bits per target token, as fairseq's ``loss``) of a
  fixed, seeded sample of training pairs;
* ``heldout_loss``: the same on a sample of the held-out pairs (``valid.*``: the FLORES lines never
  trained on); ``valid_loss``: fairseq's loss on all of them, where it validated (early stopping);
* ``xsim``: the similarity-search error (%) of a few languages against English on the held-out
  lines, both directions (:func:`laser_repro.models.similarity.xsim_error`); ``xsim_train``: the same on as many
  training lines (a seeded sample of the xx-English training pair): memorization beside generalization.

One JSON object per measurement is appended to ``curves.jsonl`` in the checkpoint directory; a
resumed run first drops the rows past its checkpoint, so the file always describes one run.
:func:`laser_repro.evaluation.curves.plot_curves` draws them (one PNG per model).
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Iterable, Optional, Sequence

import numpy as np

CURVES_FILE = "curves.jsonl"


def read_curves(path) -> list[dict]:
    path = Path(path)
    if not path.exists():
        return []
    rows = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as err:
                    raise ValueError(f"{path}:{lineno}: not a JSON object ({err})") from None
    return rows


def truncate_curves(path, num_updates: int) -> None:
    """Keep the rows measured at or before ``num_updates`` (a resumed run continues from there)."""
    _write_rows(path, [r for r in read_curves(path) if r["update"] <= num_updates])


def _write_rows(path, rows) -> None:
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows), encoding="utf-8")
    os.replace(tmp, path)


def mark_kept(path, update: int) -> None:
    """Flag the row of the model that was kept (early stopping: the lowest held-out loss)."""
    _write_rows(path, [dict(r, kept=r["update"] == update) for r in read_curves(path)])


def _translation_dataset(dataset):
    """The MultiPairDataset of a task split (the NLI multitask wraps it)."""
    return getattr(dataset, "translation", dataset)


def _device_of(module):
    """The device of a module's weights (fairseq puts the model on the worker's GPU)."""
    return next(module.parameters()).device


def _sample_indices(dataset, count: int, seed: int) -> np.ndarray:
    """``count`` global indices spread over every pair (seeded), sorted."""
    n = len(dataset)
    if n <= count:
        return np.arange(n, dtype=np.int64)
    return np.sort(np.random.RandomState(seed).choice(n, size=count, replace=False)).astype(np.int64)


def _pair_chunks(dataset, indices: np.ndarray, max_sentences: int) -> Iterable[np.ndarray]:
    pairs = dataset.pair_index(indices)
    for pair in np.unique(pairs):
        sel = indices[pairs == pair]
        for start in range(0, len(sel), max_sentences):
            yield sel[start:start + max_sentences]


class CurveMonitor:
    """Measures the curves of one training run (see the module docstring)."""

    def __init__(self, out_path, *, interval_updates: int, languages: Sequence[str], pivot: str = "eng",
                 loss_sentences: int = 400, seed: int = 1, batch_sentences: int = 64):
        self.out_path = Path(out_path)
        self.interval = int(interval_updates)
        self.languages = list(languages)
        self.pivot = pivot
        self.loss_sentences = int(loss_sentences)
        self.seed = int(seed)
        self.batch_sentences = int(batch_sentences)
        self._ready = False
        self._last_update = None

    # -- set-up on the first call (the task and its datasets exist then) ------------------------
    def _setup(self, trainer, task) -> None:
        self.train_ds = _translation_dataset(task.dataset("train"))
        self.train_idx = _sample_indices(self.train_ds, self.loss_sentences, self.seed)
        try:
            task.load_dataset("valid")
            self.valid_ds = _translation_dataset(task.dataset("valid"))
        except FileNotFoundError:
            self.valid_ds = None
        self.valid_idx = (None if self.valid_ds is None
                          else _sample_indices(self.valid_ds, self.loss_sentences, self.seed))
        # xsim: the held-out xx-eng pairs (source = xx, target = English, line-aligned)
        self.xsim_pairs = self._pivot_pairs(self.valid_ds, None) if self.valid_ds is not None else {}
        # the same measure on as many training lines (seeded): memorization beside generalization
        size = max((len(rows) for _, rows in self.xsim_pairs.values()), default=0)
        self.xsim_train_pairs = self._pivot_pairs(self.train_ds, size) if size else {}
        if self.out_path.exists():
            truncate_curves(self.out_path, trainer.get_num_updates())
        self._ready = True

    def _pivot_pairs(self, dataset, size) -> dict:
        """{xx: (LanguagePairDataset of xx-pivot, line indices)} for the curve languages."""
        out = {}
        for p, name in enumerate(dataset.pair_names):
            src, tgt = name.split("-")
            if tgt == self.pivot and src in self.languages:
                pair = dataset.datasets[p]
                n = len(pair)
                rows = (np.arange(n) if size is None or n <= size
                        else np.sort(np.random.RandomState(self.seed).choice(n, size=size, replace=False)))
                out[src] = (pair, rows)
        return out

    # -- measurements ------------------------------------------------------------------------------
    def _loss(self, model, criterion, dataset, indices) -> float:
        import torch
        from fairseq import utils

        device = _device_of(model)
        total, tokens = 0.0, 0
        with torch.no_grad():
            for chunk in _pair_chunks(dataset, indices, self.batch_sentences):
                # the collater makes CPU tensors; the model may be on a GPU
                sample = utils.apply_to_sample(lambda t: t.to(device), dataset.collater([dataset[int(i)] for i in chunk]))
                loss, _, log = criterion(model, sample)
                total += float(loss)
                tokens += int(log["ntokens"])
        return total / max(tokens, 1) / math.log(2)

    def _embed(self, encoder, sentences) -> np.ndarray:
        import torch
        from fairseq.data import data_utils

        pad = encoder.padding_idx
        device = _device_of(encoder)
        out = []
        with torch.no_grad():
            for start in range(0, len(sentences), self.batch_sentences):
                chunk = sentences[start:start + self.batch_sentences]
                tokens = data_utils.collate_tokens(chunk, pad, left_pad=False).to(device)
                lengths = torch.tensor([len(s) for s in chunk], dtype=torch.long, device=device)
                out.append(encoder(tokens, src_lengths=lengths)["sentemb"].float().cpu().numpy())
        return np.concatenate(out) if out else np.zeros((0, encoder.output_units), dtype=np.float32)

    def _xsim(self, model, pairs) -> dict:
        from laser_repro.models.similarity import xsim_error

        result = {}
        for lang, (pair, rows) in sorted(pairs.items()):
            xx = self._embed(model.encoder, [pair.src[int(i)] for i in rows])
            en = self._embed(model.encoder, [pair.tgt[int(i)] for i in rows])
            err = xsim_error(xx, en)
            result[lang] = {"en_xx": round(err["en_xx_error"], 2), "xx_en": round(err["xx_en_error"], 2)}
        return result

    def measure(self, trainer, task, epoch: int, end_of_epoch: bool, valid_loss=None) -> Optional[dict]:
        """``valid_loss``: fairseq's validation loss on all held-out pairs at this update, when it
        validated (early stopping); recorded as ``valid_loss`` (what early stopping compares)."""
        if not self._ready:
            self._setup(trainer, task)
        update = trainer.get_num_updates()
        if update == self._last_update:
            return None
        if not (update == 0 or end_of_epoch or update % self.interval == 0 or valid_loss is not None):
            return None
        model = trainer.get_model()  # not the DistributedDataParallel wrapper: no collective operation here
        was_training = model.training
        model.eval()
        try:
            row = {"update": update, "epoch": epoch, "end_of_epoch": bool(end_of_epoch),
                   "train_loss": round(self._loss(model, trainer.get_criterion(), self.train_ds, self.train_idx), 4)}
            if self.valid_ds is not None:
                row["heldout_loss"] = round(self._loss(model, trainer.get_criterion(), self.valid_ds, self.valid_idx), 4)
            if valid_loss is not None:
                row["valid_loss"] = round(float(valid_loss), 4)
            row["xsim"] = self._xsim(model, self.xsim_pairs)
            row["xsim_train"] = self._xsim(model, self.xsim_train_pairs)
        finally:
            model.train(was_training)
        self.out_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.out_path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(row, sort_keys=True) + "\n")
        self._last_update = update
        return row
