"""What the training loops of the model families share: the collectives of their processes (no DDP
wrapper: the loops sum their gradients themselves) on the worker's device (NCCL between GPUs, gloo
between CPUs: laser_repro.models.device), derived seeds, RNG states and atomic checkpoint writes."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Optional

import numpy as np
import torch
import torch.distributed as dist

from laser_repro.models.device import distributed_backend
from laser_repro.models.launch import Rank


def derived_seed(*parts: int) -> int:
    """A 32-bit seed derived from ``parts`` (e.g. seed, rank)."""
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(1)[0])


def atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    write(tmp)
    os.replace(tmp, path)


def restore_rng(states: list, cuda_states: Optional[list], rank: Rank, seed: int, num_updates: int,
                device: torch.device) -> None:
    """This rank's torch RNG states (dropout: the CPU's and, on a GPU, the device's) from a checkpoint's
    per-rank states; with another number of processes, or a checkpoint without this device's states, the
    masks cannot continue exactly anyway: a seed derived from (seed, rank, update)."""
    if len(states) != rank.world_size or (device.type == "cuda" and len(cuda_states or []) != rank.world_size):
        torch.manual_seed(derived_seed(seed, rank.rank, num_updates))  # seeds the CPU and every GPU
        return
    torch.set_rng_state(states[rank.rank])
    if device.type == "cuda":
        torch.cuda.set_rng_state(cuda_states[rank.rank], device)


class Comm:
    """The collectives training needs, on ``device`` (no-ops for one process). A tensor on another device
    than the worker's is an error, also in a one-process run (where nothing is communicated): a run on
    several GPUs would fail (NCCL) or copy (gloo) there."""

    def __init__(self, rank: Rank, device: torch.device):
        self.rank, self.device = rank, torch.device(device)
        self.owns_group = False
        if rank.distributed and not dist.is_initialized():
            if rank.source == "srun":  # torchrun sets these itself
                os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = rank.master_addr, str(rank.master_port)
            if self.device.type == "cuda":
                torch.cuda.set_device(self.device)  # NCCL's communicator binds to the current device
            dist.init_process_group(distributed_backend(self.device), init_method="env://", rank=rank.rank,
                                    world_size=rank.world_size)
            self.owns_group = True

    def _check(self, tensor: torch.Tensor) -> torch.Tensor:
        if tensor.device != self.device:
            raise RuntimeError(f"collective on a tensor on {tensor.device}; this worker computes on {self.device}")
        return tensor

    def sum_(self, tensor: torch.Tensor) -> None:
        if self.rank.distributed:
            dist.all_reduce(self._check(tensor), op=dist.ReduceOp.SUM)
        else:
            self._check(tensor)

    def any(self, flag: bool) -> bool:
        """Whether ``flag`` is true on any rank (a stop request must stop every rank at the same update)."""
        if not self.rank.distributed:
            return bool(flag)
        tensor = torch.tensor([int(bool(flag))], device=self.device)
        dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
        return bool(tensor.item())

    def barrier(self) -> None:
        """Return on every rank once all have reached it. An all-reduce on the worker's device, waited for
        on the host (NCCL's returns before it ran; dist.barrier would guess the device)."""
        if self.rank.distributed:
            tensor = torch.zeros(1, device=self.device)
            dist.all_reduce(tensor)
            tensor.item()

    def broadcast_(self, tensor: torch.Tensor) -> None:
        self._check(tensor)
        if self.rank.distributed:
            dist.broadcast(tensor, src=0)

    def gather(self, tensor: torch.Tensor) -> list[torch.Tensor]:
        """Every rank's ``tensor`` (same shape everywhere), in rank order, on the CPU."""
        if not self.rank.distributed:
            return [tensor.cpu()]
        local = tensor.to(self.device)
        parts = [torch.empty_like(local) for _ in range(self.rank.world_size)]
        dist.all_gather(parts, local)
        return [p.cpu() for p in parts]

    def rng_states(self) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """Every rank's torch RNG states (dropout), in rank order: the CPU's, and the GPU's (empty on CPU)."""
        cpu = self.gather(torch.get_rng_state())
        cuda = self.gather(torch.cuda.get_rng_state(self.device)) if self.device.type == "cuda" else []
        return cpu, cuda

    def close(self) -> None:
        if self.owns_group:
            dist.destroy_process_group()
