"""SLURM resources of the jobs: the GPUs of the training jobs (count from the config, layout from the
site: laser_repro.core.slurm), the conda environment of a job given GPUs, the threads of scoring jobs."""
from __future__ import annotations

from laser_repro.core import cuda_builds
from laser_repro.core import slurm as slurm_layout


class Resources:
    """Part of :class:`laser_repro.workflow.run.WorkflowRun` (its attributes are set there)."""

    def gpu_resources(self, gpus, where):
        """The SLURM layout of a training job on `gpus` GPUs ({} for 0: a CPU job)."""
        return slurm_layout.gpu_job_resources(gpus, gpus_per_node=self.site_gpus_per_node, cpus_per_gpu=self.site_cpus_per_gpu,
                                              where=where)

    def one_node_gpu_layout(self, gpus, where, key, threads):
        """`key` of the one-node SLURM layout of a per-model training job (multienc, LaBSE) on `gpus` GPUs
        (`where`: its config key). Several nodes are LASER's only (fairseq's srun workers); a model asking for
        more GPUs than a node has is an error naming its key."""
        layout = self.gpu_resources(gpus, where)
        if layout.get("mpi"):
            raise ValueError(f"{where}: {gpus} GPUs exceed one node ({self.site_gpus_per_node} GPUs): this family "
                             f"trains on one node")
        return layout.get(key, {"nodes": 1, "gpu": 0, "cpus_per_task": threads}[key])

    def one_node_gpu_resource(self, gpus_of, key):
        """A resource callable of a per-model training rule: `key` of its one-node layout; `gpus_of(wildcards)`
        -> (GPUs, config key)."""
        return lambda wildcards, threads: self.one_node_gpu_layout(*gpus_of(wildcards), key, threads)

    def nway_spm_mem_mb(self, data):
        """rule nway_spm's memory: learning the SentencePiece model (bounded by its sample, measured:
        laser_repro.data.spm.learn_resources), at least nway_bpe's (its time: profiles/slurm)."""
        from laser_repro.data import spm

        return max(8000, spm.learn_resources(self.nway[data]["subword"])["mem_mb"])

    def labse_pretrain_gpus(self, w):
        name = self.plan.labse_pretrainings[w.pretraining]
        return self.labse[name]["pretrain"]["gpus"], f"models.{name}.pretrain.gpus"

    def multienc_train_gpus(self, w):
        return self.multienc[w.model]["train"]["gpus"], f"models.{w.model}.train.gpus"

    def labse_train_gpus(self, w):
        return self.labse[w.model]["train"]["gpus"], f"models.{w.model}.train.gpus"

    def eval_threads(self, w):
        """Threads of a task's scoring jobs (mining, classifiers): the LASER model's embed.threads, else 2."""
        return self.laser_model["embed"]["threads"] if self.laser else 2

    def conda_env(self, gpus, where):
        """The conda file of a job given `gpus` GPUs (`where`: the config key saying so): the CPU one, or for
        GPUs the config's `cuda` build (only with --sdm conda; laser_repro.core.cuda_builds)."""
        return cuda_builds.conda_env_path(self.envs_dir, self.sdm_conda, self.cfg.get("cuda"), gpus, where)
