"""The GPU cluster setup without a cluster: the training jobs' SLURM layout (rendered by
snakemake-executor-plugin-slurm's own code), the launcher's srun, the LASER checkpoint interval and
data-loader keys from the config to fairseq."""
from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml

from laser_repro import config as run_config
from laser_repro.core import slurm
from laser_repro.models import launch, training_guard
from laser_repro.models.laser import fairseq_bridge
from conftest import laser_model

REPO = Path(__file__).resolve().parents[1]
PROFILE = REPO / "profiles" / "slurm" / "config.yaml"


class _Resources(dict):
    __getattr__ = dict.__getitem__


class _Job:
    def __init__(self, resources: dict, threads: int):
        self.resources, self.threads = _Resources(resources), threads


def _profile_job_resources(rule: str, gpus: int) -> tuple[dict, int]:
    """A training job's resources as Snakemake gives them to the plugin: the profile's defaults, the
    rule's GPU layout (from the config's GPU count and the profile's site geometry), the profile's
    set-resources of the rule last (they win)."""
    profile = yaml.safe_load(PROFILE.read_text())
    threads = profile["cores"]  # the training rules: threads = workflow.cores
    resources = {k: (threads if v == "threads" else v) for k, v in profile["default-resources"].items()}
    per_node, cpus_per_gpu = slurm.site_geometry(profile["resources"])
    resources.update(slurm.gpu_job_resources(gpus, gpus_per_node=per_node, cpus_per_gpu=cpus_per_gpu))
    resources.update(profile["set-resources"][rule])
    return resources, threads


def _sbatch_options(resources: dict, threads: int) -> dict:
    from snakemake_executor_plugin_slurm.submit_string import get_submit_command
    from snakemake_executor_plugin_slurm.utils import set_gres_string

    job = _Job(resources, threads)
    params = {"run_uuid": "u", "slurm_logfile": "log", "comment_str": "c", "account": "", "partition": "",
              "workdir": None}
    call = get_submit_command(job, params) + set_gres_string(job)  # the plugin appends the gres string
    options = {}
    for word in shlex.split(call)[1:]:
        if word.startswith("--"):
            key, _, value = word.partition("=")
            options[key] = value
    return options


def test_paper_laser_job_is_two_nodes_of_eight_gpus_without_conflicting_options():
    paper = run_config.load(REPO / "config" / "paper.yaml")
    resources, threads = _profile_job_resources("laser_train", laser_model(paper)["train"]["gpus"])
    sbatch = _sbatch_options(resources, threads)
    assert sbatch["--nodes"] == "2" and sbatch["--ntasks-per-node"] == "8" and sbatch["--gres"] == "gpu:8"
    # --gpus / --ntasks-per-gpu with srun --cpus-per-task: "SLURM_TRES_PER_TASK is mutually exclusive
    # with --ntasks-per-gpu" (plugin issues #342, #373)
    assert "--ntasks-per-gpu" not in sbatch and "--gpus" not in sbatch and "--cpus-per-gpu" not in sbatch
    assert resources["mpi"] == "srun" and "--time" not in sbatch
    cpus_per_task = int(sbatch["--cpus-per-task"])
    # what scontrol reports for that job, and the launcher's srun of it
    scontrol = (f"JobId=7 NumNodes=2 NumCPUs={2 * 8 * cpus_per_task} NumTasks=16 CPUs/Task={cpus_per_task} "
                f"TresPerNode=gres/gpu:8")
    srun = launch.srun_command(launch.parse_job_geometry(scontrol), ["-m", "x"])
    assert srun[:6] == ["srun", "--kill-on-bad-exit=1", "--ntasks=16", "--nodes=2", "--ntasks-per-node=8",
                        f"--cpus-per-task={cpus_per_task}"]
    assert "--gres=gpu:8" in srun and not any(a.startswith(("--gpus", "--ntasks-per-gpu")) for a in srun)


def test_one_node_jobs_and_cpu_jobs():
    assert slurm.gpu_job_resources(0) == {}
    assert slurm.gpu_job_resources(4, gpus_per_node=8, cpus_per_gpu=6) == {"nodes": 1, "gpu": 4,
                                                                            "cpus_per_task": 24}
    assert slurm.gpu_job_resources(16) == {"nodes": 1, "gpu": 16, "cpus_per_task": 128}  # local: one machine
    resources = {**slurm.gpu_job_resources(8, gpus_per_node=8), "runtime": 60}
    sbatch = _sbatch_options(resources, 8)
    assert (sbatch["--nodes"], sbatch["--gpus"], sbatch["--cpus-per-task"]) == ("1", "8", "64")
    assert not {"--ntasks-per-gpu", "--gres", "--ntasks-per-node", "--cpus-per-gpu"} & set(sbatch)
    # the job step that runs the launcher asks for the GPUs itself (issue 36, item 8): the jobstep plugin's
    # srun -n1 gets --gpus=8, where it got none with `gres` and relied on the job's GRES being its default
    from snakemake_executor_plugin_slurm_jobstep import get_cpu_setting, get_gpu_setting

    job = _Job(resources, 8)
    assert get_gpu_setting(job) == "--gpus=8" and get_cpu_setting(job, True) == "--cpus-per-task=64"
    job_before = _Job({"nodes": 1, "gres": "gpu:8", "cpus_per_task": 64}, 8)
    assert get_gpu_setting(job_before) == ""
    assert slurm.gpu_job_resources(12, gpus_per_node=5)["tasks_per_node"] == 4  # 3 nodes x 4
    with pytest.raises(ValueError, match="train.gpus: 10 GPUs do not split evenly over 3 nodes"):
        slurm.gpu_job_resources(10, gpus_per_node=4, where="train.gpus")
    with pytest.raises(ValueError, match="one task per node"):
        slurm.gpu_job_resources(2, gpus_per_node=1)


def test_site_geometry_from_the_profile():
    profile = yaml.safe_load(PROFILE.read_text())
    assert slurm.site_geometry(profile["resources"]) == (8, 8)
    assert slurm.site_geometry(None) == (None, slurm.DEFAULT_CPUS_PER_GPU)
    with pytest.raises(ValueError, match="site_gpus_per_node"):
        slurm.site_geometry({"site_gpus_per_node": 0})


def test_gpu_rules_share_the_site_keys_and_ask_no_gpu_themselves():
    profile = yaml.safe_load(PROFILE.read_text())
    rules = ("laser_train", "multienc_train", "labse_pretrain", "labse_train")
    for rule in rules:  # the GPU count is the config's: a profile `gpu` / `gres` would override it
        assert not {"gpu", "gres", "nodes", "tasks", "tasks_per_gpu"} & set(profile["set-resources"][rule]), rule
        assert profile["set-resources"][rule]["runtime"] == profile["set-resources"]["laser_train"]["runtime"]
    assert profile["slurm-requeue"] is True


def test_save_interval_and_num_workers_reach_fairseq():
    train = {"lr": 0.001, "max_tokens": 8000, "update_freq": 1, "max_epoch": 17, "seed": 1, "log_interval": 100}
    argv = fairseq_bridge.fairseq_train_argv("d", "s", "deu-eng", "eng", {}, dict(train), cpu=True)
    assert argv[argv.index("--num-workers") + 1] == "0" and "--save-interval-updates" not in argv
    argv = fairseq_bridge.fairseq_train_argv("d", "s", "deu-eng", "eng", {}, {**train, "save_interval_updates": 4000,
                                                                              "num_workers": 2}, cpu=True)
    assert argv[argv.index("--save-interval-updates") + 1] == "4000"
    assert argv[argv.index("--keep-interval-updates") + 1] == str(fairseq_bridge.KEEP_INTERVAL_CHECKPOINTS)
    assert argv[argv.index("--num-workers") + 1] == "2" and argv.count("--num-workers") == 1


def test_schema_accepts_the_keys_and_they_do_not_change_the_model():
    train = laser_model(run_config.load(REPO / "config" / "paper.yaml"))["train"]
    assert train["save_interval_updates"] == 4000 and train["num_workers"] == 2
    settings = {"model": {}, "pairs": ["deu-eng"], "targets": ["eng"], "train": dict(train)}
    other = {**settings, "train": {**train, "save_interval_updates": 100, "num_workers": 0}}
    assert training_guard.model_settings(settings) == training_guard.model_settings(other)
    toy = run_config.read_yaml(REPO / "tests" / "toy" / "config.yaml")
    with pytest.raises(run_config.ConfigError, match="save_interval_updates: expected integer"):
        laser_model(toy)["train"]["save_interval_updates"] = "often"
        run_config.validate(toy)


def test_save_interval_with_early_stopping_is_refused(tmp_path):
    small = run_config.read_yaml(REPO / "config" / "small.yaml")
    assert laser_model(small)["train"].get("early_stopping")
    laser_model(small)["train"]["save_interval_updates"] = 50
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(small, sort_keys=False))
    with pytest.raises(run_config.ConfigError, match=r"run.yaml:\d+: models.base.train.save_interval_updates: early_stopping"):
        run_config.load(path)


def test_every_data_job_of_the_paper_run_asks_slurm_for_less_than_two_hours(tmp_path):
    """Snakemake sums the runtimes of a group's jobs into one allocation: the corpus group asked for 17 h
    (4 bitexts x (15 + 8 shards x 30 min)) for work of < 1 h, and the full dry run failed ("Error in group
    evaluate"). laser-repro slurm-requests computes each request with Snakemake's own group arithmetic."""
    import json
    import subprocess
    import sys

    out = tmp_path / "requests.json"
    proc = subprocess.run([sys.executable, "-m", "laser_repro.cli", "slurm-requests", "--profile", str(PROFILE.parent),
                           "--configfile", str(REPO / "config" / "paper.yaml"), "--snakefile",
                           str(REPO / "workflow" / "Snakefile"), "--directory", str(tmp_path), "--limit-min", "119",
                           "--json", str(out), "--", "data"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    requests = {r["name"]: r for r in json.loads(out.read_text())}
    # the paper's data stage: 491 OPUS zips -> 1,704 Moses shards -> BPE -> 184 binarized pairs
    assert {"extract", "shards", "encode", "bpe_count", "bpe_learn", "fairseq_dict"} <= set(requests), sorted(requests)
    assert requests["shards"]["submissions"] >= 1704 // 8 and requests["encode"]["submissions"] == 184
    assert all(0 < r["runtime_min"] < 120 for r in requests.values()), requests
    assert "| shards | group |" in proc.stdout
