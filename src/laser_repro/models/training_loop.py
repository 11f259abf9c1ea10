"""The checkpointed training loop of the families that train with their own code (multienc, LaBSE; Bi-Sent2Vec
shares its checkpoint reading): the worker's device and precision, the collectives, start / resume / save
with every rank's RNG states (CPU and GPU), the summed gradients and the optimiser step, stop requests.

A family's loop subclasses :class:`CheckpointedTraining`, sets ``model`` (built with :meth:`place`),
``optimizer`` and ``state`` (the JSON-able progress saved in checkpoints), and is run by :func:`run_training`.
Every tensor a step makes goes to ``self.device``: the model, the batches (:meth:`to_device`), the losses and
the tensors of the collectives (:class:`laser_repro.models.collectives.Comm` refuses others)."""
from __future__ import annotations

import copy
import json
import logging
import time
from pathlib import Path
from typing import Callable, ClassVar, Optional, Sequence

import torch

from laser_repro.models.checkpoint_safety import load_model_file
from laser_repro.models.collectives import Comm, atomic_write, derived_seed, restore_rng
from laser_repro.models.device import Precision, worker_device
from laser_repro.models.launch import Rank

CHECKPOINT_LAST, CHECKPOINT_BEST, CHECKPOINT_INIT = "checkpoint_last.pt", "checkpoint_best.pt", "checkpoint_init.pt"
#: the learning curves: the state's "history" (JSON)
CURVES_FILE = "curves.json"


def load_resume_checkpoint(path: Path, family: str, settings: dict, fixed_settings: Sequence[str]) -> dict:
    """The training checkpoint ``path`` a run resumes from; one trained with other ``fixed_settings`` raises."""
    ckpt = load_model_file(path, what=f"{family} training checkpoint", rebuild="delete it to train from scratch",
                           weights_only=True, map_location="cpu")
    changed = [k for k in fixed_settings if ckpt["settings"][k] != settings[k]]
    if changed:
        raise ValueError(f"{path}: trained with other {changed} settings than these; use another save_dir or delete it")
    return ckpt


def _on_cpu(value):
    """``value`` (a state dict, nested) with its tensors on the CPU: a checkpoint loads on any machine."""
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, dict):
        return {k: _on_cpu(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_on_cpu(v) for v in value)
    return value


class CheckpointedTraining:
    """State and shared steps of one rank's training run (see the module docstring)."""

    #: the family's name (messages, checkpoint checks)
    family: ClassVar[str]
    #: the settings a resumed run must share with its checkpoint
    fixed_settings: ClassVar[tuple[str, ...]]

    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    state: dict

    def __init__(self, save_dir: Path, settings: dict, rank: Rank, comm: Comm, log: logging.Logger):
        self.save_dir, self.settings, self.rank, self.comm, self.log = save_dir, settings, rank, comm, log
        self.opts = settings["train"]
        self.device = comm.device
        self.precision = Precision(self.opts["precision"], self.device)
        self._last_log = (time.perf_counter(), 0)

    # ---- device ---------------------------------------------------------------------------------
    def place(self, build: Callable[[], torch.nn.Module]) -> torch.nn.Module:
        """``build()`` on the CPU (the seed gives the same initial weights whatever the device), in training
        mode, moved to this worker's device."""
        with torch.device("cpu"):
            model = build()
        model.train()
        return model.to(self.device)

    def to_device(self, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple(t.to(self.device, non_blocking=True) for t in tensors)

    # ---- hooks of the family ------------------------------------------------------------------------
    def check_compatible(self, ckpt: dict, path: Path) -> None:
        """Raise when the checkpoint ``path`` was trained on other data (its dictionary / vocabulary)."""

    def restore(self, ckpt: dict) -> None:
        """Load the checkpoint's model and optimiser (``self.state`` is already the checkpoint's)."""
        self.model.load_state_dict(ckpt["model"])
        self.optimizer.load_state_dict(ckpt["optimizer"])

    def checkpoint_fields(self) -> dict:
        """What the family's checkpoints hold besides the model, optimiser, state, settings and RNG states."""
        return {}

    def position(self) -> str:
        """Where in the data the state is (for the log line of a resume)."""
        return f"epoch {self.state['epoch']}, batch {self.state['batch_index']}"

    # ---- checkpoints ----------------------------------------------------------------------------
    def resume_or_start(self) -> None:
        last = self.save_dir / CHECKPOINT_LAST
        if not last.exists():
            for param in self.model.state_dict().values():  # one initialisation on every rank
                self.comm.broadcast_(param)
            torch.manual_seed(derived_seed(self.opts["seed"], self.rank.rank))
            if not (self.save_dir / CHECKPOINT_INIT).exists():
                self.save(CHECKPOINT_INIT)
            return
        ckpt = load_resume_checkpoint(last, self.family, self.settings, self.fixed_settings)
        self.check_compatible(ckpt, last)
        self.state = {key: ckpt[key] for key in self.state}
        self.restore(ckpt)
        self.precision.load_state_dict(ckpt.get("loss_scaler") or {})
        restore_rng(ckpt["torch_rng_states"], ckpt.get("cuda_rng_states"), self.rank, self.opts["seed"],
                    self.state["num_updates"], self.device)
        if self.rank.is_master:
            self.log.info("resumed from %s at update %d (%s)", last, self.state["num_updates"], self.position())

    def save(self, name: str) -> None:
        """Write ``save_dir/name`` (master; every rank must call it: the RNG states are gathered) and return on
        every rank only once it is written: a rank that stops and exits earlier would have torchrun kill the
        master mid-write (30 s after, and LaBSE's checkpoints are GBs on shared file systems)."""
        cpu_states, cuda_states = self.comm.rng_states()
        if self.rank.is_master:
            payload = {"format": 1, **self.checkpoint_fields(), "model": _on_cpu(self.model.state_dict()),
                       "optimizer": _on_cpu(self.optimizer.state_dict()), **copy.deepcopy(self.state),
                       "settings": self.settings, "precision": self.precision.name,
                       "loss_scaler": self.precision.state_dict(), "torch_rng_states": cpu_states,
                       "cuda_rng_states": cuda_states}
            atomic_write(self.save_dir / name, lambda tmp: torch.save(payload, tmp))
        self.comm.barrier()

    # ---- one update -------------------------------------------------------------------------------
    def reduce_gradients(self, params: list, counts: Sequence[float],
                         divisor: Callable[[list[float]], float]) -> list[float]:
        """Sum the gradients of ``params`` and ``counts`` (e.g. the loss and its tokens) over the ranks in one
        all-reduce, then set each gradient to the sum divided by ``divisor(summed counts)``; returns the
        summed counts. A parameter this rank did not use counts as zeros: every rank reduces the same tensors."""
        flat = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in params]
                         + [torch.tensor(list(counts), dtype=params[0].dtype, device=self.device)])
        self.comm.sum_(flat)
        totals = flat[-len(counts):].tolist()
        scale = divisor(totals)
        offset = 0
        for p in params:
            p.grad = flat[offset:offset + p.numel()].view_as(p) / scale
            offset += p.numel()
        return totals

    def optimizer_step(self, params: list) -> None:
        self.precision.step(self.optimizer, params, self.opts["clip_norm"])

    def stopped(self, stop_requested: Callable[[], bool]) -> bool:
        """When any rank was asked to stop: save ``checkpoint_last.pt`` (every rank at the same update)."""
        if not self.comm.any(stop_requested()):
            return False
        self.save(CHECKPOINT_LAST)
        if self.rank.is_master:
            self.log.warning("stop requested: saved %s at update %d", CHECKPOINT_LAST, self.state["num_updates"])
        return True

    def save_validation(self, improved: bool) -> None:
        """After a validation: the curves (master), ``checkpoint_last.pt`` and, when ``improved``, the best."""
        if self.rank.is_master:
            history = json.dumps(self.state["history"], indent=1) + "\n"
            atomic_write(self.save_dir / CURVES_FILE, lambda tmp: tmp.write_text(history))
        self.save(CHECKPOINT_LAST)
        if improved:
            self.save(CHECKPOINT_BEST)

    def share_from_master(self, values: Optional[Sequence[float]], n: int) -> list[float]:
        """The master's ``values`` (float64) on every rank (others pass None)."""
        tensor = torch.zeros(n, dtype=torch.float64, device=self.device)
        if values is not None:
            tensor[:] = torch.tensor(list(values), dtype=torch.float64, device=self.device)
        self.comm.broadcast_(tensor)
        return tensor.tolist()

    def log_progress(self, loss: float, examples: int, what: str, lr: float, loss_format: str = "%.3f") -> None:
        start, seen = self._last_log
        seen += examples
        self._last_log = (start, seen)
        n = self.state["num_updates"]
        if self.rank.is_master and self.opts["log_interval"] and n % self.opts["log_interval"] == 0:
            now = time.perf_counter()
            self.log.info(f"update %d | loss {loss_format} | lr %.3g | %.1f %s/s", n, loss, lr,
                          seen / max(now - start, 1e-9), what)
            self._last_log = (now, 0)


def run_training(make: Callable[[Comm], CheckpointedTraining], save_dir, *, rank: Rank,
                 device: Optional[torch.device], stop_requested: Callable[[], bool]) -> dict:
    """Make the run on ``device`` (None: :func:`laser_repro.models.device.worker_device` of ``rank``) with its
    collectives, resume or start it, and train until the end or a stop request."""
    Path(save_dir).mkdir(parents=True, exist_ok=True)
    comm = Comm(rank, worker_device(rank) if device is None else device)
    try:
        training = make(comm)
        training.resume_or_start()
        return training.run(stop_requested)
    finally:
        comm.close()
