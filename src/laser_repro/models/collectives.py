"""What the training loops of the model families share: the collectives of their processes (gloo, no
DDP wrapper: the loops sum their gradients themselves), derived seeds and atomic checkpoint writes."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

import numpy as np
import torch
import torch.distributed as dist

from laser_repro.core.launch import Rank


def derived_seed(*parts: int) -> int:
    """A 32-bit seed derived from ``parts`` (e.g. seed, rank)."""
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(1)[0])


def atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    write(tmp)
    os.replace(tmp, path)


def restore_rng(states: list, rank: Rank, seed: int, num_updates: int) -> None:
    """This rank's torch RNG state (dropout) from a checkpoint's per-rank states; with another number of
    processes the masks cannot continue exactly anyway: a seed derived from (seed, rank, update)."""
    if len(states) == rank.world_size:
        torch.set_rng_state(states[rank.rank])
    else:
        torch.manual_seed(derived_seed(seed, rank.rank, num_updates))


class Comm:
    """The collectives training needs; no-ops for one process."""

    def __init__(self, rank: Rank):
        self.rank = rank
        self.owns_group = False
        if rank.distributed and not dist.is_initialized():
            if rank.source == "srun":  # torchrun sets these itself
                os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = rank.master_addr, str(rank.master_port)
            dist.init_process_group("gloo", init_method="env://", rank=rank.rank, world_size=rank.world_size)
            self.owns_group = True

    def sum_(self, tensor: torch.Tensor) -> None:
        if self.rank.distributed:
            dist.all_reduce(tensor, op=dist.ReduceOp.SUM)

    def any(self, flag: bool) -> bool:
        """Whether ``flag`` is true on any rank (a stop request must stop every rank at the same update)."""
        if not self.rank.distributed:
            return bool(flag)
        tensor = torch.tensor([int(bool(flag))])
        dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
        return bool(tensor.item())

    def broadcast_(self, tensor: torch.Tensor) -> None:
        if self.rank.distributed:
            dist.broadcast(tensor, src=0)

    def rng_states(self) -> list[torch.Tensor]:
        """Every rank's torch RNG state (dropout), in rank order."""
        state = torch.get_rng_state()
        if not self.rank.distributed:
            return [state]
        states = [torch.empty_like(state) for _ in range(self.rank.world_size)]
        dist.all_gather(states, state)
        return states

    def close(self) -> None:
        if self.owns_group:
            dist.destroy_process_group()
