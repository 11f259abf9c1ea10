"""How training processes are started: one process, several on one machine (torchrun), or one
per task of a SLURM job step (srun), and how a preempted run reports itself.

Roles of ``laser-repro train``:

* **launcher** (what a Snakemake rule runs): decides the world size and starts the workers --
  in-process when there is one, ``torchrun --standalone`` for several on this node, ``srun``
  (Snakemake's ``mpi`` resource) for one per task of the SLURM allocation, any number of nodes;
* **worker**: one rank; reads its rank from the environment torchrun or srun set.

The world size does not change the batches of an update: ``update_freq`` is recomputed so that
``max_tokens x world_size x update_freq`` equals the planned tokens per update, and a world size for which no
whole ``update_freq`` does is an error (:func:`update_freq_for`). (Dropout masks are drawn per process: with
dropout the weights are not bit-identical across world sizes.) A LASER checkpoint resumed on another world size
continues at the same batch of its epoch or is refused
(:func:`laser_repro.models.laser.fairseq_bridge.resume_position`).

SLURM queries (``scontrol``, ``squeue``) have a timeout; when one fails, the worker takes the first host from
the node list itself and the master trains without a deadline, each with a warning.

Stopping early: on SIGTERM / SIGUSR1 (preemption, ``scancel --signal``) and, inside a SLURM job,
a few minutes before its time limit, workers save ``checkpoint_last.pt`` at the next update
boundary and exit with :data:`EXIT_PREEMPTED`; rerunning the rule resumes from it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

from laser_repro.core.errors import UserError

#: exit status of a training run that saved its state and stopped early (EX_TEMPFAIL)
EXIT_PREEMPTED = 75

#: signals that ask training to checkpoint and stop
PREEMPTION_SIGNALS = (signal.SIGTERM, signal.SIGUSR1)

#: seconds a ``squeue`` / ``scontrol`` query may take: a hung slurmctld must not hang training
SLURM_QUERY_TIMEOUT_S = 60

log = logging.getLogger(__name__)


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
    """Gradient-accumulation steps so that ``max_tokens * world_size * update_freq`` equals the planned
    tokens per update; a UserError (one line, naming the settings to change) when no whole number does:
    rounding up would silently train with more tokens per update than planned."""
    if tokens_per_update < 1 or max_tokens < 1 or world_size < 1:
        raise ValueError(f"tokens_per_update={tokens_per_update}, max_tokens={max_tokens}, "
                         f"world_size={world_size} must all be positive")
    per_step = max_tokens * world_size
    if tokens_per_update % per_step:
        steps = tokens_per_update // max_tokens
        hint = (f"run on a number of processes that divides {steps} (train.gpus / train.cpu_processes, the SLURM "
                f"job's tasks, CUDA_VISIBLE_DEVICES for a local run)" if tokens_per_update % max_tokens == 0
                else f"set train.max_tokens to a divisor of {tokens_per_update}")
        rounded = -(-tokens_per_update // per_step)
        raise UserError(
            f"planned {tokens_per_update} tokens per update (train.tokens_per_update, else max_tokens x gpus x "
            f"update_freq) is not max_tokens {max_tokens} x world size {world_size} x a whole update_freq "
            f"(update_freq {rounded} would make {rounded * per_step}): {hint}, or set train.tokens_per_update "
            f"to a multiple of {per_step}")
    return tokens_per_update // per_step


def _slurm_query(cmd: Sequence[str]) -> str:
    """stdout of a SLURM command; RuntimeError (one line: the command, its status or timeout, its stderr)."""
    try:
        proc = subprocess.run(list(cmd), capture_output=True, text=True, timeout=SLURM_QUERY_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{' '.join(cmd)}: no answer within {SLURM_QUERY_TIMEOUT_S} s") from None
    except OSError as err:
        raise RuntimeError(f"{' '.join(cmd)}: {err}") from None
    if proc.returncode != 0:
        why = " ".join(proc.stderr.split())[:300] or "no message"
        raise RuntimeError(f"{' '.join(cmd)}: exit status {proc.returncode} ({why})")
    return proc.stdout


def first_host_of_nodelist(nodelist: str) -> str:
    """The first host of a SLURM host list (``gpu[07-08,10],cpu1`` -> ``gpu07``): the first name before a
    top-level comma, each bracket replaced by its first number (zero padding kept)."""
    import re

    depth, first = 0, len(nodelist)
    for i, ch in enumerate(nodelist):
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            first = i
            break
    host = re.sub(r"\[([^\]\-,]*)[^\]]*\]", r"\1", nodelist[:first].strip())
    if not host or "[" in host or "]" in host:
        raise ValueError(f"not a SLURM host list: {nodelist!r}")
    return host


def _first_slurm_host(nodelist: str) -> str:
    """The rendezvous host: ``scontrol show hostnames``'s first; where that query fails, the host list read
    here (every rank reads the same list, so they agree), with a warning."""
    try:
        out = _slurm_query(["scontrol", "show", "hostnames", nodelist]).split()
        if not out:
            raise RuntimeError(f"scontrol show hostnames {nodelist!r} printed no host")
        return out[0]
    except RuntimeError as err:
        host = first_host_of_nodelist(nodelist)
        log.warning("%s; the rendezvous host is %s, read from the node list %s", err, host, nodelist)
        return host


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


def slurm_job_geometry(job_id: str) -> dict:
    """``{"tasks", "nodes", "cpus", "gpus_per_node"}`` of a SLURM job, from ``scontrol show job``
    (gpus_per_node: its ``--gres=gpu:N``, 0 without)."""
    try:
        text = _slurm_query(["scontrol", "show", "job", str(job_id)])
    except RuntimeError as err:  # no fallback: without the job's geometry srun would start one task
        raise RuntimeError(f"{err}: the job's tasks, nodes and CPUs are unknown, so its workers cannot be "
                           f"started; rerun when slurmctld answers") from None
    return parse_job_geometry(text, job_id)


def parse_job_geometry(text: str, job_id: str = "?") -> dict:
    """:func:`slurm_job_geometry` of the text of ``scontrol show job``."""
    import re

    fields = dict(item.split("=", 1) for item in text.split() if "=" in item)
    try:
        geometry = {"tasks": int(fields["NumTasks"]), "nodes": int(fields["NumNodes"].split("-")[0]),
                    "cpus": int(fields["NumCPUs"])}
    except (KeyError, ValueError) as err:
        raise RuntimeError(f"scontrol show job {job_id}: no NumTasks/NumNodes/NumCPUs in {text!r}") from err
    # TresPerNode=gres/gpu:8 (or gres:gpu:a100:8, depending on the Slurm version)
    gpus = re.search(r"gpu(?::[A-Za-z0-9_.-]+)?:(\d+)", fields.get("TresPerNode", ""))
    geometry["gpus_per_node"] = int(gpus.group(1)) if gpus else 0
    return geometry


def srun_command(job: Mapping[str, int], worker: Sequence[str]) -> list[str]:
    """``srun`` of one worker per task of the job (:func:`slurm_job_geometry`): the tasks spread evenly
    over the nodes, each task sees its node's GPUs (its local rank picks one), the job's CPUs split over
    the tasks. No --ntasks-per-gpu / --gpus-per-task (see laser_repro.core.slurm)."""
    tasks, nodes = job["tasks"], job["nodes"]
    if tasks % nodes:
        raise ValueError(f"{tasks} tasks on {nodes} nodes: not the same number per node")
    cmd = ["srun", "--kill-on-bad-exit=1", f"--ntasks={tasks}", f"--nodes={nodes}",
           f"--ntasks-per-node={tasks // nodes}", f"--cpus-per-task={max(1, job['cpus'] // tasks)}"]
    if job.get("gpus_per_node"):
        cmd.append(f"--gres=gpu:{job['gpus_per_node']}")  # every GPU of the node to the step's tasks
    return [*cmd, sys.executable, *worker]


def parse_slurm_duration(text: str) -> Optional[int]:
    """Seconds of a SLURM duration (``[D-]HH:MM:SS``, ``MM:SS``, ``MM``); None for
    ``UNLIMITED`` / ``NOT_SET`` / ``INVALID``."""
    text = text.strip()
    if text.upper() in {"UNLIMITED", "NOT_SET", "INVALID", ""}:
        return None
    days, _, clock = text.rpartition("-")
    parts = [int(x) for x in clock.split(":")]
    if len(parts) == 1:
        h, m, sec = 0, parts[0], 0
    elif len(parts) == 2:
        h, m, sec = 0, parts[0], parts[1]
    elif len(parts) == 3:
        h, m, sec = parts
    else:
        raise ValueError(f"not a SLURM duration: {text!r}")
    return ((int(days) if days else 0) * 24 + h) * 3600 + m * 60 + sec


def slurm_time_left(job_id: str) -> Optional[int]:
    """Seconds until the job's time limit (``squeue -o %L``); None when unlimited. RuntimeError (one
    line) when squeue fails, times out or prints no duration."""
    out = _slurm_query(["squeue", "-h", "-j", str(job_id), "-o", "%L"])
    try:
        return parse_slurm_duration(out.splitlines()[0] if out.strip() else "")
    except ValueError as err:
        raise RuntimeError(f"squeue -h -j {job_id} -o %L: {err}") from None


def local_world_size(cpu_processes: int, uses_gpu: bool = True, planned_gpus: int = 0) -> int:
    """Processes to start on this machine: one per planned GPU (the config's ``train.gpus``), else one per
    visible GPU (when the family trains on GPUs), else ``cpu_processes``. Fewer visible GPUs than planned is
    an error (:func:`check_visible_gpus`), more are left idle: the plan's tokens per update stay."""
    import torch

    gpus = torch.cuda.device_count() if uses_gpu else 0
    if uses_gpu and planned_gpus > 0:
        check_visible_gpus(planned_gpus, gpus)
        return planned_gpus
    return gpus if gpus > 0 else max(1, int(cpu_processes))


def check_visible_gpus(planned: int, visible: int, environ: Optional[Mapping[str, str]] = None) -> None:
    """The config gave this job ``planned`` GPUs: fewer visible ones stop it here, in one line, instead of a
    run on the CPU of a GPU node. Under SLURM a job step sees only the GPUs it asked for: a step that did not
    ask (snakemake's job step `srun -n1` without --gres, an `srun --exact`) sees none."""
    if visible >= planned:
        return
    env = os.environ if environ is None else environ
    raise UserError(f"train.gpus is {planned} but this process sees {visible} GPU(s) (CUDA_VISIBLE_DEVICES="
                    f"{env.get('CUDA_VISIBLE_DEVICES')!r}, host {socket.gethostname()}): the job (or its SLURM "
                    "step) was given fewer GPUs than the config plans; check the job's --gres and "
                    "`laser-repro doctor` on the node")


def worker_command(worker_argv: Sequence[str]) -> list[str]:
    """The interpreter arguments that run ``laser-repro train <worker_argv>`` as a worker."""
    return ["-m", "laser_repro.cli", "train", *worker_argv, "--launcher", "worker"]


def launch_workers(launcher: str, world_size: int, worker_argv: Sequence[str],
                   job: Optional[Mapping[str, int]] = None, env: Optional[Mapping[str, str]] = None) -> int:
    """Start the workers of a multi-process run and wait; returns the launcher's exit status.

    ``launcher``: ``"torchrun"`` (``world_size`` processes on this machine) or ``"srun"`` (one per
    task of the SLURM allocation; ``job``: its :func:`slurm_job_geometry`); ``env``: variables added to
    the workers' environment (the launcher's plan for them). SIGTERM / SIGUSR1 / SIGINT received here are passed on to
    the workers, which checkpoint and stop. If this process dies without passing anything on
    (SIGKILL), torchrun / srun get SIGKILL from the kernel (Linux), and with them torchrun's workers;
    srun's tasks end with their SLURM step / job.
    """
    from laser_repro.models import training_guard

    worker = worker_command(worker_argv)
    extra = dict(env or {})
    env = dict(os.environ, **extra) if extra else None
    if launcher == "srun":
        # Snakemake's SLURM job step strips SLURM_NTASKS & co. from our environment (srun would
        # start one task): pass the geometry of the job itself (from the caller)
        if job is None:
            raise ValueError("srun needs the job geometry (slurm_job_geometry)")
        cmd = srun_command(job, worker)
    elif launcher == "torchrun":
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               f"--nproc-per-node={world_size}", *worker]
        # each worker checks that torchrun's parent is still this process (training_guard.die_with_parent)
        env = dict(os.environ, **extra, **{training_guard.LAUNCHER_PID_ENV: str(os.getpid())})
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
            # its own session: our signals reach it by process group, a terminal's Ctrl-C does
            # not; SIGKILL when this process dies (a killed launcher must not leave workers)
            children.append(subprocess.Popen(
                cmd, env=env, start_new_session=True,
                preexec_fn=training_guard.die_with_parent_preexec(os.getpid())))
        finally:
            signal.signal(signal.SIGUSR1, forward)
        for signum in pending:
            forward(signum, None)
        return children[0].wait()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


class PreemptionFlag:
    """Set by SIGTERM / SIGUSR1 while installed, or by passing ``deadline`` (``time.time()``
    seconds); polled at every update boundary."""

    def __init__(self, deadline: Optional[float] = None):
        self.signal_number: Optional[int] = None
        self.deadline = deadline
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
        return self.signal_number is not None or (self.deadline is not None and time.time() >= self.deadline)

    @property
    def reason(self) -> Optional[str]:
        if self.signal_number is not None:
            return signal.Signals(self.signal_number).name
        if self.deadline is not None and time.time() >= self.deadline:
            return "time limit"
        return None


def training_deadline(margin_s: int, environ: Optional[Mapping[str, str]] = None) -> Optional[float]:
    """Inside a SLURM job with a time limit: the time at which to checkpoint and stop, ``margin_s``
    before the limit. Snakemake's job steps do not pass SLURM's ``--signal`` warning on to a
    rule's processes reliably, so workers watch the clock themselves. When ``squeue`` fails or hangs,
    training goes on without a deadline (a warning says so): the time limit only costs the updates
    since the last checkpoint, a failed query would cost the whole attempt."""
    env = os.environ if environ is None else environ
    job_id = env.get("SLURM_JOB_ID")
    if not job_id or margin_s <= 0:
        return None
    try:
        left = slurm_time_left(job_id)
    except RuntimeError as err:
        log.warning("%s; training without a deadline: at SLURM job %s's time limit it is killed without a "
                    "checkpoint and resumes from the last one saved (train.save_interval_updates)", err, job_id)
        return None
    return None if left is None else time.time() + left - margin_s
