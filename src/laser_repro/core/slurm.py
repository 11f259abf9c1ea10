"""What a training rule asks SLURM for, and what that costs in attempts.

* :func:`gpu_job_resources` -- the Snakemake resources of a training job on ``gpus`` GPUs, laid out
  for snakemake-executor-plugin-slurm: one node (``nodes: 1, gpu: N``: ``sbatch --nodes=1 --gpus=N``, and
  the jobstep plugin's ``srun -n1 --gpus=N`` for the one launcher task, which starts a worker per GPU with
  torchrun), or several (``--nodes=M --ntasks-per-node=G --gres=gpu:G``, ``mpi: srun``: one worker per
  task, the launcher's own ``srun ... --gres=gpu:G``). Never ``tasks`` / ``tasks_per_gpu``: with those the
  plugin emits ``--ntasks-per-gpu=...``, and Slurm then refuses any ``srun --cpus-per-task`` in the job
  ("SLURM_TRES_PER_TASK is mutually exclusive with --ntasks-per-gpu", snakemake-executor-plugin-slurm
  issues #342 / #373).
* :func:`site_geometry` -- the site's GPUs and CPUs per node (the profile's ``resources``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Optional

#: the profile's global ``resources`` that describe the site's GPU nodes (no job requests them)
SITE_GPUS_PER_NODE = "site_gpus_per_node"
SITE_CPUS_PER_GPU = "site_cpus_per_gpu"
#: CPUs per GPU where the profile does not say (data loading, the launcher)
DEFAULT_CPUS_PER_GPU = 8


def read_profile(profile) -> tuple[Path, dict]:
    """``(path, settings)`` of a Snakemake profile (its directory or its config.yaml); a ValueError naming
    the file when it cannot be read or is not a YAML mapping."""
    import yaml

    path = Path(profile)
    path = path / "config.yaml" if path.is_dir() else path
    try:
        settings = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as err:
        raise ValueError(f"{path}: cannot read the profile: {type(err).__name__}: {err}") from None
    if not isinstance(settings, dict):
        raise ValueError(f"{path}: a profile is a YAML mapping")
    return path, settings


def site_geometry(global_resources: Optional[Mapping]) -> tuple[Optional[int], int]:
    """``(gpus_per_node, cpus_per_gpu)`` from a Snakemake run's global resources (``resources:`` of
    the profile); gpus_per_node None when unset (a local run: every job on this one machine)."""
    resources = {k: getattr(v, "value", v) for k, v in (global_resources or {}).items()}  # Snakemake: Resource
    per_node = resources.get(SITE_GPUS_PER_NODE)
    cpus = resources.get(SITE_CPUS_PER_GPU) or DEFAULT_CPUS_PER_GPU
    for name, value in ((SITE_GPUS_PER_NODE, per_node), (SITE_CPUS_PER_GPU, cpus)):
        if value is not None and (not isinstance(value, int) or value < 1):
            raise ValueError(f"profile resources: {name}={value!r} must be a positive integer")
    return per_node, cpus


def gpu_job_resources(gpus: int, *, gpus_per_node: Optional[int] = None,
                      cpus_per_gpu: int = DEFAULT_CPUS_PER_GPU, where: str = "gpus") -> dict:
    """Snakemake resources of a job on ``gpus`` GPUs (``{}`` for 0: a CPU job, sized by the
    profile). Several nodes when ``gpus`` exceeds ``gpus_per_node`` (None: no limit, one node),
    the same number of GPUs on each; ``where`` names the config key in errors."""
    if gpus < 0:
        raise ValueError(f"{where}: {gpus} GPUs")
    if gpus == 0:
        return {}
    if gpus_per_node is None or gpus <= gpus_per_node:
        # one task, the launcher: torchrun starts a worker per GPU of the node. `gpu` (sbatch --gpus=N), not
        # `gres`: the jobstep plugin passes --gpus=N to the step's `srun -n1` for `gpu` only, so the step asks
        # for its GPUs instead of relying on the job's GRES being the step's default (not so where a site's
        # srun defaults differ, and SLURM_* is stripped from the step's environment)
        return {"nodes": 1, "gpu": gpus, "cpus_per_task": cpus_per_gpu * gpus}
    nodes = -(-gpus // gpus_per_node)
    if gpus % nodes:
        raise ValueError(f"{where}: {gpus} GPUs do not split evenly over {nodes} nodes of at most "
                         f"{gpus_per_node} GPUs ({SITE_GPUS_PER_NODE} of the profile); use a multiple of {nodes}")
    per_node = gpus // nodes
    if per_node < 2:
        raise ValueError(f"{where}: {gpus} GPUs on {nodes} nodes is one task per node, which the SLURM "
                         f"plugin refuses for srun jobs (tasks_per_node must be > 1)")
    return {"nodes": nodes, "tasks_per_node": per_node, "gres": f"gpu:{per_node}", "mpi": "srun",
            "cpus_per_task": cpus_per_gpu}
