"""How training processes are started: one process, several on one machine (torchrun), or one
per task of a SLURM job step (srun), and how a preempted run reports itself.

Roles of ``laser-repro train``:

* **launcher** (what a Snakemake rule runs): decides the world size and starts the workers --
  in-process when there is one, ``torchrun --standalone`` for several on this node, ``srun``
  (Snakemake's ``mpi`` resource) for one per task of the SLURM allocation, any number of nodes;
* **worker**: one rank; reads its rank from the environment torchrun or srun set.

The world size never changes the optimisation: ``update_freq`` is recomputed so that
``max_tokens x world_size x update_freq`` stays the configured tokens per update.

Preemption: SLURM sends SIGUSR1 (``--signal=USR1@<s>``) or SIGTERM (time limit, preemption)
to every process of the step.  Workers then save ``checkpoint_last.pt`` at the next update
boundary and exit with :data:`EXIT_PREEMPTED`; rerunning the rule resumes from it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

#: exit status of a training run that saved its state and stopped early (EX_TEMPFAIL)
EXIT_PREEMPTED = 75

#: signals that ask training to checkpoint and stop
PREEMPTION_SIGNALS = (signal.SIGTERM, signal.SIGUSR1)


@dataclass(frozen=True)
class Rank:
    """Where this process sits in the training job."""

    world_size: int = 1
    rank: int = 0
    local_rank: int = 0
    master_addr: str = "127.0.0.1"
    master_port: int = 0
    source: str = "single"  # single | torchrun | srun

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    @property
    def is_master(self) -> bool:
        return self.rank == 0


def update_freq_for(tokens_per_update: int, max_tokens: int, world_size: int) -> int:
    """Gradient-accumulation steps so that ``max_tokens * world_size * update_freq`` is at least
    the planned tokens per update (equal when it divides)."""
    if tokens_per_update < 1 or max_tokens < 1 or world_size < 1:
        raise ValueError(f"tokens_per_update={tokens_per_update}, max_tokens={max_tokens}, "
                         f"world_size={world_size} must all be positive")
    return max(1, -(-tokens_per_update // (max_tokens * world_size)))


def _first_slurm_host(nodelist: str) -> str:
    out = subprocess.run(["scontrol", "show", "hostnames", nodelist], check=True,
                         capture_output=True, text=True).stdout.split()
    if not out:
        raise RuntimeError(f"scontrol show hostnames {nodelist!r} printed no host")
    return out[0]


def slurm_port(job_id: str) -> int:
    """A rendezvous port derived from the SLURM job id (all tasks agree without talking)."""
    return 20000 + int(job_id) % 20000


def worker_rank(environ: Optional[Mapping[str, str]] = None) -> Rank:
    """The rank of a worker, from torchrun's variables or from an ``srun`` step's."""
    env = os.environ if environ is None else environ
    if all(k in env for k in ("WORLD_SIZE", "RANK", "MASTER_ADDR", "MASTER_PORT")):
        return Rank(int(env["WORLD_SIZE"]), int(env["RANK"]), int(env.get("LOCAL_RANK", 0)),
                    env["MASTER_ADDR"], int(env["MASTER_PORT"]), "torchrun")
    tasks = env.get("SLURM_STEP_NUM_TASKS") or env.get("SLURM_NTASKS")
    if "SLURM_PROCID" in env and tasks and int(tasks) > 1:
        nodelist = env.get("SLURM_STEP_NODELIST") or env["SLURM_JOB_NODELIST"]
        return Rank(int(tasks), int(env["SLURM_PROCID"]), int(env.get("SLURM_LOCALID", 0)),
                    _first_slurm_host(nodelist), slurm_port(env["SLURM_JOB_ID"]), "srun")
    return Rank()


def local_world_size(cpu_processes: int) -> int:
    """Processes to start on this machine: one per visible GPU, else ``cpu_processes``."""
    import torch

    gpus = torch.cuda.device_count()
    return gpus if gpus > 0 else max(1, int(cpu_processes))


def worker_command(worker_argv: Sequence[str]) -> list[str]:
    """The interpreter arguments that run ``laser-repro train <worker_argv>`` as a worker."""
    return ["-m", "laser_repro.cli", "train", *worker_argv, "--launcher", "worker"]


def launch_workers(launcher: str, world_size: int, worker_argv: Sequence[str]) -> int:
    """Start the workers of a multi-process run and wait; returns the launcher's exit status.

    ``launcher``: ``"torchrun"`` (``world_size`` processes on this machine) or ``"srun"`` (one per
    task of the SLURM allocation). SIGTERM / SIGUSR1 / SIGINT received here are passed on to
    the workers, which checkpoint and stop.
    """
    worker = worker_command(worker_argv)
    if launcher == "srun":
        cmd = ["srun", "--kill-on-bad-exit=1", sys.executable, *worker]
    elif launcher == "torchrun":
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               f"--nproc-per-node={world_size}", *worker]
    else:
        raise ValueError(f"unknown launcher {launcher!r} (torchrun or srun)")

    children: list[subprocess.Popen] = []
    pending: list[int] = []

    def forward(signum, _frame):
        signum = signal.SIGTERM if signum == signal.SIGINT else signum
        if not children:
            pending.append(signum)
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(children[0].pid, signum)

    previous = {s: signal.signal(s, forward) for s in (*PREEMPTION_SIGNALS, signal.SIGINT)}
    try:
        # torchrun's agent has no SIGUSR1 handler and would die of it; the workers install
        # their own. An ignored disposition is inherited through fork and exec (a handler is
        # not). srun keeps its own: it passes SIGUSR1 on to the tasks.
        if launcher == "torchrun":
            signal.signal(signal.SIGUSR1, signal.SIG_IGN)
        try:
            children.append(subprocess.Popen(cmd, start_new_session=True))
        finally:
            signal.signal(signal.SIGUSR1, forward)
        for signum in pending:
            forward(signum, None)
        return children[0].wait()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


class PreemptionFlag:
    """Set by SIGTERM / SIGUSR1 while installed; polled at every update boundary."""

    def __init__(self):
        self.signal_number: Optional[int] = None
        self._previous = {}

    def _handle(self, signum, _frame):
        self.signal_number = signum

    def __enter__(self):
        for s in PREEMPTION_SIGNALS:
            self._previous[s] = signal.signal(s, self._handle)
        return self

    def __exit__(self, *exc):
        for s, handler in self._previous.items():
            signal.signal(s, handler)
        self._previous.clear()
        return False

    @property
    def requested(self) -> bool:
        return self.signal_number is not None
