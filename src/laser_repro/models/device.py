"""Where a training worker computes, and in which precision: the one device policy of every family.

* :func:`worker_device`: rank -> ``cuda:<local rank>`` where CUDA devices are visible (``cuda:0`` when a
  task sees only its own GPU, as under SLURM's per-task GPU binding), else the CPU. A worker that was
  meant to have a GPU (its launcher planned one worker per GPU, or SLURM allocated GPUs to the job) but
  sees none is an error naming its node: a silent CPU rank would join the GPU ranks' run with another
  backend, or train for days on the CPU while holding a GPU.
* :func:`distributed_backend`: NCCL between CUDA workers, gloo between CPU workers.
* :class:`Precision`: ``train.precision`` (fp32 | fp16 | bf16) as autocast and, for fp16, a loss scaler.

The launcher (laser_repro.models.training) records its plan for its workers in :data:`PLANNED_DEVICE_ENV`.
"""
from __future__ import annotations

import contextlib
import os
import socket
from typing import Mapping, Optional

import torch

#: set by the launcher for its workers: "cuda" (one worker per GPU) or "cpu"
PLANNED_DEVICE_ENV = "LASER_REPRO_DEVICE"
#: the torch.distributed backend instead of the policy's: "gloo" lets several workers share one GPU
#: (NCCL refuses two ranks on one device; the GPU smoke test runs two processes on one GPU this way)
BACKEND_ENV = "LASER_REPRO_DIST_BACKEND"
#: SLURM's variables of a job or step with GPUs (set by --gpus, --gpus-per-node, --gres=gpu, ...)
SLURM_GPU_VARIABLES = ("SLURM_STEP_GPUS", "SLURM_JOB_GPUS", "SLURM_GPUS_ON_NODE")

PRECISIONS = ("fp32", "fp16", "bf16")


class DeviceError(RuntimeError):
    """A worker cannot use the device its run planned for it."""


def _env(environ: Optional[Mapping[str, str]]) -> Mapping[str, str]:
    return os.environ if environ is None else environ


def slurm_gpus_allocated(environ: Optional[Mapping[str, str]] = None) -> bool:
    """Whether SLURM gave this job (step) GPUs on this node."""
    env = _env(environ)
    return any(env.get(k, "").strip() not in ("", "0", "(null)") for k in SLURM_GPU_VARIABLES)


def planned_device_type(uses_gpu: bool, environ: Optional[Mapping[str, str]] = None) -> str:
    """The launcher's plan for its workers: "cuda" when the family trains on GPUs and this node sees one
    or SLURM allocated GPUs to the job, else "cpu"."""
    if not uses_gpu:
        return "cpu"
    return "cuda" if torch.cuda.device_count() > 0 or slurm_gpus_allocated(environ) else "cpu"


def worker_device(rank, *, uses_gpu: bool = True, environ: Optional[Mapping[str, str]] = None) -> torch.device:
    """The device of the worker ``rank`` (a :class:`laser_repro.models.launch.Rank`).

    ``uses_gpu`` false (Bi-Sent2Vec: a CPU kernel): the CPU, whatever is visible. A launcher's plan
    (:data:`PLANNED_DEVICE_ENV`) is followed: "cpu" keeps every worker on the CPU, "cuda" makes a worker
    without a visible GPU an error; without a plan (a run in the launcher's process, a test), a visible
    GPU is used and SLURM's GPU allocation counts as the plan."""
    if not uses_gpu:
        return torch.device("cpu")
    env = _env(environ)
    planned = env.get(PLANNED_DEVICE_ENV)
    if planned not in (None, "", "cpu", "cuda"):
        raise DeviceError(f"{PLANNED_DEVICE_ENV}={planned!r}: expected 'cpu' or 'cuda'")
    if planned == "cpu":
        return torch.device("cpu")
    visible = torch.cuda.device_count()
    where = f"{socket.gethostname()}: training rank {rank.rank} (local rank {rank.local_rank})"
    if visible == 0:
        if planned == "cuda" or slurm_gpus_allocated(env):
            why = ("its launcher planned one worker per GPU" if planned == "cuda"
                   else "SLURM allocated GPUs to this job (" + ", ".join(
                       f"{k}={env[k]}" for k in SLURM_GPU_VARIABLES if env.get(k)) + ")")
            raise DeviceError(
                f"{where} sees no CUDA device, but {why}. Check CUDA_VISIBLE_DEVICES and that this environment "
                f"has the CUDA build of torch (torch {torch.__version__}, CUDA {torch.version.cuda}); "
                f"a CPU rank would not train with the GPU ranks")
        return torch.device("cpu")
    if rank.local_rank < visible:
        return torch.device("cuda", rank.local_rank)
    if visible == 1:  # each task sees only its own GPU (SLURM's per-task binding), or ranks share one
        return torch.device("cuda", 0)
    raise DeviceError(f"{where}: only {visible} CUDA devices are visible; start at most one worker per GPU "
                      f"(or bind one GPU to each task)")


def distributed_backend(device: torch.device, environ: Optional[Mapping[str, str]] = None) -> str:
    """NCCL between CUDA workers, gloo between CPU workers (or :data:`BACKEND_ENV`'s choice)."""
    chosen = _env(environ).get(BACKEND_ENV) or ("nccl" if device.type == "cuda" else "gloo")
    if chosen not in ("gloo", "nccl"):
        raise DeviceError(f"{BACKEND_ENV}={chosen!r}: expected 'gloo' or 'nccl'")
    if chosen == "nccl" and device.type != "cuda":
        raise DeviceError(f"{BACKEND_ENV}=nccl needs CUDA devices; this worker computes on {device}")
    return chosen


@contextlib.contextmanager
def exact_fp32():
    """IEEE float32 on CUDA while it lasts. PyTorch lets cuDNN's RNNs and convolutions compute in TF32 (a 10-bit
    mantissa) by default: an exported LSTM encoder's embeddings on the GPU then differ from the CPU's by ~3e-4
    (measured on an H200). Embeddings are what every evaluation measures: they are computed exactly."""
    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved


class Precision:
    """``train.precision`` of a trainer with its own loop: fp32; bf16 (autocast, no scaler); fp16 (autocast
    and a dynamic loss scaler). The weights, the optimiser and the checkpoints stay float32: autocast only
    lowers the precision of the operations that benefit (matrix products)."""

    def __init__(self, name: str, device: torch.device):
        if name not in PRECISIONS:
            raise ValueError(f"train.precision {name!r} is not one of {PRECISIONS}")
        if name == "fp16" and device.type != "cuda":
            raise ValueError(f"train.precision fp16 needs a CUDA device (a loss-scaled float16 run); this worker "
                             f"computes on {device}: use bf16 or fp32 there")
        if name == "bf16" and device.type == "cuda" and not torch.cuda.is_bf16_supported():
            raise ValueError(f"train.precision bf16: {torch.cuda.get_device_name(device)} has no bfloat16 "
                             f"support; use fp16 or fp32")
        self.name, self.device = name, device
        self.dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(name)
        self.scaler = torch.amp.GradScaler("cuda") if name == "fp16" else None

    def autocast(self):
        """The context of a forward pass (and its loss)."""
        if self.dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.dtype)

    def widen(self, tensor: torch.Tensor) -> torch.Tensor:
        """``tensor`` in float32 when autocast lowered it (a loss over a whole batch wants the range)."""
        return tensor.float() if tensor.dtype in (torch.float16, torch.bfloat16) else tensor

    def backward(self, loss: torch.Tensor) -> None:
        (self.scaler.scale(loss) if self.scaler else loss).backward()

    def step(self, optimizer, params, clip_norm) -> None:
        """Unscale (fp16), clip and step; with fp16 a step whose gradients overflowed is skipped and the
        scale lowered (the gradients are summed over the ranks first, so every rank skips alike)."""
        if self.scaler:
            self.scaler.unscale_(optimizer)
        if clip_norm:
            torch.nn.utils.clip_grad_norm_(params, clip_norm)
        if self.scaler:
            self.scaler.step(optimizer)
            self.scaler.update()
        else:
            optimizer.step()

    def state_dict(self) -> dict:
        return self.scaler.state_dict() if self.scaler else {}

    def load_state_dict(self, state: dict) -> None:
        if self.scaler and state:
            self.scaler.load_state_dict(state)
