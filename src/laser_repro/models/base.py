"""The model-family interface: what the harness asks of each way of training a sentence encoder.

A family (LASER, multienc = Schwenk & Douze 2017, ...) is chosen by config -- the top-level
``model`` section is LASER, ``models.<name>.family`` names the others -- and looked up in
:mod:`laser_repro.models.registry`. The shared stages call only these methods:

* ``prepare(lines, lang, codes=..., lowercase=...)``: raw text -> the model's input text (Moses +
  BPE for both families here, each with its own codes);
* ``train_worker(...)``: one rank of a training run, started by the shared launcher
  (:mod:`laser_repro.models.training`: lock, fingerprint check, torchrun / srun, preemption,
  resume, publication) on the device the policy gives it (:mod:`laser_repro.models.device`; a family
  with ``uses_gpu`` false trains on the CPU in one process per node); ``fingerprint_settings`` / ``data_files`` / ``stopping_settings`` say
  what makes a checkpoint directory belong to a run;
* ``export(checkpoint, out)``: a training checkpoint -> an encoder file of tensors and plain types
  (loads with ``torch.load(weights_only=True)``), which names its family;
* ``load_encoder(path).embed(lines, lang)``: the model's input text -> float32 embeddings.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Callable, ClassVar, Mapping, Optional, Sequence

import numpy as np


class Encoder(ABC):
    """An exported sentence encoder."""

    #: embedding dimension
    dim: int

    @abstractmethod
    def embed(self, lines: Sequence[str], lang: str) -> np.ndarray:
        """float32 ``(len(lines), dim)`` embeddings of ``lines`` (the model's input text) in ``lang``."""


class LoadedEncoder(Encoder):
    """An :class:`Encoder` over a family's own encoder object (``.dim``, ``.embed(list, lang)``)."""

    def __init__(self, encoder):
        self._encoder = encoder
        self.dim = encoder.dim

    def embed(self, lines, lang):
        return self._encoder.embed(list(lines), lang)


class MosesInputFamily:
    """``prepare`` of a family whose input is the Moses-preprocessed line: its own vocabulary (LaBSE's
    WordPiece in the encoder file) or none (Bi-Sent2Vec's words) applies after it; ``codes`` is unused."""

    takes_codes = False

    def prepare(self, lines, lang, *, codes=None, lowercase: bool = True) -> list[str]:
        from laser_repro.data.preprocess import language_preprocessor

        preprocess = language_preprocessor(lang, lowercase=lowercase)
        return [preprocess(line) for line in lines]

    @staticmethod
    def text_data_files(data_dir, languages) -> dict[str, Path]:
        """``{"train.LANG" | "valid.LANG": path}``: the N-way text training reads (for ``data_files``)."""
        from laser_repro.data.nway import tok_files

        return {f"{split}.{lang}": path for split in ("train", "valid")
                for lang, path in tok_files(data_dir, split, languages).items()}


def run_training_loop(trainer, data_dir, save_dir, settings: Mapping, *, rank, device, stop_requested,
                      process_keys: Sequence[str]) -> dict:
    """``train_worker`` of a family with its own training loop (a module with ``train(...)`` and
    ``CHECKPOINT_BEST``, :mod:`laser_repro.models.training_loop`): the process settings are the launcher's,
    the kept model is the best checkpoint."""
    train = {k: v for k, v in settings["train"].items() if k not in process_keys}
    outcome = trainer.train(data_dir, save_dir, {**settings, "train": train}, rank=rank, device=device,
                            stop_requested=stop_requested)
    return {**outcome, "model": Path(save_dir) / trainer.CHECKPOINT_BEST, "kept_update": outcome.get("best_update"),
            "runtime": {"batch_size": train.get("batch_size"), "device": str(device)}}


class ModelFamily(ABC):
    """One family of models; stateless (one instance per process)."""

    #: the ``family`` value in the config and in exported encoder files
    name: ClassVar[str]
    #: whether ``prepare`` applies BPE codes given from outside (the encoder file names them:
    #: laser_repro.models.subword); False: the family's vocabulary is inside its encoder file
    takes_codes: ClassVar[bool] = True
    #: learning curves the worker writes into the checkpoint directory (None: none)
    curves_file: ClassVar[Optional[str]] = None
    #: whether the family trains on GPUs where they are visible (one worker per GPU); false: the CPU
    uses_gpu: ClassVar[bool] = True

    def prepare(self, lines: Sequence[str], lang: str, *, codes, lowercase: bool = True) -> list[str]:
        """Raw sentences -> the model's input: Moses preprocessing of ``lang`` and the BPE ``codes``, or LASER2's
        normalisation and a SentencePiece model (``codes``: either file, laser_repro.data.subword_text)."""
        from laser_repro.data.subword_text import SubwordText

        return list(SubwordText(codes).prepare(lines, lang, lowercase=lowercase))

    @abstractmethod
    def fingerprint_settings(self, settings: Mapping) -> dict:
        """The part of the training settings that determines the weights (process geometry,
        stopping criteria and logging left out: a resume may change them)."""

    @abstractmethod
    def stopping_settings(self, settings: Mapping) -> dict:
        """When training ends (kept in train_status.json: a completed run with other stopping
        criteria trains on)."""

    @abstractmethod
    def data_files(self, data_dir, settings: Mapping) -> dict[str, Path]:
        """``{name: path}`` of every file training reads, ``dict.txt`` included (hashed into the fingerprint)."""

    @abstractmethod
    def train_worker(self, data_dir: Path, save_dir: Path, settings: Mapping, *, rank, threads: int, device,
                     stop_requested: Callable[[], bool]) -> dict:
        """Train one rank on ``device`` (a ``torch.device``, :func:`laser_repro.models.device.worker_device`)
        until the end or ``stop_requested()``, resuming from ``save_dir``. Returns
        ``{"num_updates", "start_updates", "preempted", "model": path of the checkpoint to publish,
        "runtime": {...}}`` (runtime: how it ran, for the status and the provenance record)."""

    @staticmethod
    def train_settings_without(settings: Mapping, keys) -> dict:
        """``settings`` with the ``train`` keys in ``keys`` left out (process geometry, logging, ...: what a
        resume may change), for ``fingerprint_settings``."""
        train = {k: v for k, v in settings["train"].items() if k not in keys}
        return {**{k: v for k, v in settings.items() if k != "train"}, "train": train}

    def checkpoint_updates(self, path) -> int:
        """The number of updates of a training checkpoint (one of ours: a dict with ``num_updates``)."""
        from laser_repro.models.checkpoint_safety import load_model_file

        state = load_model_file(path, what="training checkpoint", rebuild="delete it and train again",
                                map_location="cpu", weights_only=True)
        return int(state["num_updates"])

    @abstractmethod
    def export(self, checkpoint, out) -> dict:
        """Write the encoder of a training checkpoint to ``out``; returns a summary."""

    @abstractmethod
    def load_encoder(self, path) -> Encoder:
        """Load an exported encoder file of this family."""
