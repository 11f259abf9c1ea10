"""profiles/slurm for real: the toy config end to end through snakemake-executor-plugin-slurm on a
single-node SLURM cluster on localhost (scripts/local_slurm.sh), compared with the local run."""
from __future__ import annotations

import copy
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml
from conftest import REPO, TOY_CONFIG, VENV_BIN, run_snakemake

pytestmark = pytest.mark.slow

SCRIPT = REPO / "scripts" / "local_slurm.sh"
PROFILE = REPO / "profiles" / "slurm" / "config.yaml"

# What differs on the test cluster (one node: 2 CPUs, ~24 GB, no GPU), merged into
# profiles/slurm/config.yaml key by key: a profile's set-resources given on the command line would
# replace the profile's whole mapping, not amend it.
TEST_CLUSTER_PROFILE = {
    "cores": 2,                       # the node's CPUs
    "local-cores": 1,
    "latency-wait": 5,                # one file system
    "set-resources": {
        # no GPU: the toy config's CPU worker (train.cpu_processes) with the node's 2 CPUs
        "laser_train": {"gpu": 0, "cpus_per_task": 2, "mem_mb": 4000},
        # the profile's sizes above the node's memory (sbatch would reject the job or its group)
        "bpe_count": {"mem_mb": 4000},
        "bpe_learn": {"mem_mb": 4000},
        "bucc_mine": {"mem_mb": 4000},
        "xnli_classify": {"mem_mb": 4000},
        # two exports of 16 GB do not fit the node at once: 4 GB lets export and export_init run side by
        # side (CI time) instead of one after the other
        "laser_export": {"mem_mb": 4000},
        "laser_export_init": {"mem_mb": 4000},
    },
    # the 4 Tatoeba languages in 2 allocations and the 8 pairs' encoding in 2 (CI time: ~20 s of sbatch and
    # polling per allocation); the grouping assertion computes ceil(n / components) from this
    "group-components": {"tatoeba": 3, "encode": 4},
}
# plugin settings for a cluster without accounting database, and a fast first status check
PLUGIN_ARGS = ["--slurm-status-command", "squeue", "--slurm-init-seconds-before-status-checks", "5",
               "--slurm-keep-successful-logs"]
# Snakemake with the plugin's status-check interval capped at POLL_S. After every check that finds no job
# finished, the plugin waits 10 s longer (5, 15, 25, ... s: a back-off that spares a big cluster's
# slurmctld); here that left finished jobs unnoticed for up to ~35 s per stage, ~110 s of CI time in
# all. Only the waiting between checks changes: the jobs, their sbatch calls and the status command
# (squeue) are the plugin's own.
POLL_S = 3
FAST_POLL_SNAKEMAKE = [sys.executable, "-c", (
    "from snakemake_interface_executor_plugins.executors.remote import RemoteExecutor as R\n"
    "p = R.next_seconds_between_status_checks\n"
    f"R.next_seconds_between_status_checks = property(lambda self: min(p.fget(self), {POLL_S}), p.fset)\n"
    "from snakemake.cli import main\n"
    "main()\n")]
# compared byte for byte with the local run: everything but logs, benchmarks and checkpoints
# (fairseq checkpoints record wall-clock meters)
NOT_COMPARED = ("logs", "benchmarks")


def merged(base: dict, overlay: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


def local_slurm(*args, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, check=False)


class Cluster:
    def __init__(self, run_dir: Path):
        self.run_dir = run_dir
        self.conf = run_dir / "slurm.conf"
        self.env = dict(os.environ, SLURM_CONF=str(self.conf),
                        PATH=f"{run_dir / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")

    def run(self, *cmd) -> str:
        return subprocess.run(list(cmd), env=self.env, capture_output=True, text=True, check=True,
                              timeout=60).stdout


@pytest.fixture(scope="module")
def slurm_cluster(tmp_path_factory):
    """munged + slurmctld + slurmd started from a temporary run dir; stopped by PID at teardown."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the local SLURM cluster needs Linux")
    if os.geteuid() != 0:
        pytest.skip("the local SLURM cluster needs root (munged, slurmctld and slurmd run as root; "
                    "see scripts/local_slurm.sh)")
    if shutil.which("slurmctld") is None:
        proc = local_slurm("install", timeout=1200)
        assert proc.returncode == 0, f"local_slurm.sh install failed:\n{proc.stdout}\n{proc.stderr}"
    run_dir = tmp_path_factory.mktemp("slurm")
    try:
        proc = local_slurm("start", run_dir)
        if proc.returncode != 0:
            pytest.fail(f"local_slurm.sh start failed:\n{proc.stdout}\n{proc.stderr}")
        yield Cluster(run_dir)
    finally:
        stop = local_slurm("stop", run_dir, timeout=180)
        status = local_slurm("status", run_dir)
        assert stop.returncode == 0, f"local_slurm.sh stop failed:\n{stop.stdout}\n{stop.stderr}"
        assert status.returncode == 3, f"daemons left running:\n{status.stdout}"


def submissions(log: str) -> list[tuple[str, str]]:
    """(SLURM job id, group_<name> or rule_<name>) of every sbatch the plugin made. The plugin's log
    directory is group_<group>_<its rules> or rule_<rule> (rule names hold underscores: laser_train)."""
    found = re.findall(r"^Job \S+ has been submitted with SLURM jobid (\d+) \(log: \S+/slurm_logs/([a-z0-9_]+)/",
                       log, re.MULTILINE)
    return [(slurm_id, "group_" + unit.split("_")[1] if unit.startswith("group_") else unit)
            for slurm_id, unit in found]


def scheduled_units(log: str) -> dict:
    """What the main Snakemake process started: group jobs, ungrouped remote rules and local rules,
    and the rules of the jobs inside groups (indented)."""
    return {
        "groups": re.findall(r"^\[[^\]]+\] Group job (\S+) ", log, re.MULTILINE),
        "rules": re.findall(r"^rule (\S+):$", log, re.MULTILINE),
        "local": re.findall(r"^localrule (\S+):$", log, re.MULTILINE),
        "in_groups": re.findall(r"^    rule (\S+):$", log, re.MULTILINE),
    }


def compared_files(root: Path) -> set:
    """Result files that must be byte-identical: not logs, benchmarks, training state (checkpoints
    hold timings) or provenance records (hosts, times)."""
    return {p.relative_to(root) for p in (root / "results").rglob("*")
            if p.is_file() and not set(p.relative_to(root / "results").parts[1:2]) & set(NOT_COMPARED)
            and "checkpoints" not in p.parts and p.name not in ("checkpoint_final.pt", "checkpoint_init.pt")
            and not p.name.endswith(".prov.json")}


def test_toy_workflow_through_slurm_profile(slurm_cluster, toy_local_run, tmp_path):
    local = toy_local_run
    assert local.proc.returncode == 0, "the local toy run failed (see test_workflow.py)"
    profile_dir = tmp_path / "profile"
    profile_dir.mkdir()
    profile = merged(yaml.safe_load(PROFILE.read_text()), TEST_CLUSTER_PROFILE)
    (profile_dir / "config.yaml").write_text(yaml.safe_dump(profile, sort_keys=False))
    workdir = tmp_path / "work"
    workdir.mkdir()
    slurm_logs = tmp_path / "slurm_logs"
    args = ["--profile", str(profile_dir), "--configfile", str(TOY_CONFIG),
            "--config", f"data_root={local.data_root}", "--directory", str(workdir),
            *PLUGIN_ARGS, "--slurm-logdir", str(slurm_logs)]

    start = time.perf_counter()
    # the base model's Table 1: every stage and group of the profile (corpus, bpe, encode, flores,
    # train, export, evaluate, tables). The other tasks' rules run in the same groups and are not
    # run again here (CI time); the ablation variants are the same rules with another {model}
    table1 = ["results/tables/toy/table1.md", "results/tables/toy/table1.csv"]
    proc = run_snakemake(*args, *table1, env=slurm_cluster.env, timeout=2400, snakemake=FAST_POLL_SNAKEMAKE)
    elapsed = time.perf_counter() - start
    log = proc.stdout + proc.stderr
    (tmp_path / "snakemake.log").write_text(log)
    assert proc.returncode == 0, log[-8000:]

    # every job but the local `all` ran inside a SLURM allocation, one sbatch per group / rule job
    subs = submissions(log)
    units = scheduled_units(log)
    assert units["local"] == []
    assert len(subs) == len(units["groups"]) + len(units["rules"]), subs
    assert len({slurm_id for slurm_id, _ in subs}) == len(subs)
    jobs = units["rules"] + units["in_groups"]
    stats = dict(re.findall(r"^(\w+) +(\d+)$", log.split("Job stats:", 1)[1].split("Select jobs", 1)[0], re.MULTILINE))
    assert sorted(jobs) == sorted(rule for rule, n in stats.items() for _ in range(int(n))
                                  if rule != "total")
    # grouping: ceil(components / group-components) allocations per group (only jobs of minutes are
    # grouped, no chains: laser-repro slurm-requests); tatoeba: one component per language
    components = {"extract": jobs.count("extract_bitext") + jobs.count("extract_nway_bitext"),
                  "shards": jobs.count("preprocess_shard"), "moses": jobs.count("moses_lines"),
                  "encode": jobs.count("binarize_pair"), "tatoeba": jobs.count("tatoeba_evaluate"), "tables": 1}
    expected = {g: math.ceil(n / profile["group-components"].get(g, n)) for g, n in components.items() if n}
    assert {g: units["groups"].count(g) for g in expected} == expected
    assert units["groups"].count("flores") == 1  # the held-out FLORES lines: one allocation
    assert set(units["groups"]) == set(expected) | {"flores"}
    assert sorted(units["rules"]) == ["bpe_count", "bpe_learn", "fairseq_dict", "laser_export", "laser_export_init",
                                      "laser_train"]
    print(f"SLURM toy run: {elapsed:.0f} s, {len(subs)} sbatch jobs for {len(jobs)} jobs "
          f"(groups {expected}; local run: 1 process)")

    # the SLURM side: every job ran and exited 0, under this run's job name
    run_id = re.search(r"^SLURM run ID: (\S+)$", log, re.MULTILINE).group(1)
    ctld_log = (slurm_cluster.run_dir / "log" / "slurmctld.log").read_text()
    queue = {job_id: (state, name) for job_id, state, name in (
        line.split("|") for line in slurm_cluster.run(
            "squeue", "--states=all", "--noheader", "--format=%i|%T|%j").splitlines())}
    cpus = dict(re.findall(r"sched: Allocate JobId=(\d+) NodeList=\S+ #CPUs=(\d+) ", ctld_log))
    for slurm_id, unit in subs:
        assert re.search(rf"_job_complete: JobId={slurm_id} WEXITSTATUS 0\b", ctld_log), slurm_id
        if slurm_id in queue:  # finished jobs stay in squeue for MinJobAge (600 s)
            assert queue[slurm_id] == ("COMPLETED", run_id)
        # a group's jobs run one after another: its allocation has the CPUs of its largest job
        # (threads 1 in the toy config), not their sum; train has the node's 2 CPUs, and so has encode
        # (binarize_pair's 4 fairseq workers, capped at the node's 2 CPUs)
        # (jobs started by the backfill scheduler log no CPU count)
        if slurm_id in cpus:
            assert cpus[slurm_id] == ("2" if unit in ("rule_laser_train", "group_encode") else "1"), \
                (unit, cpus[slurm_id])
    assert any(slurm_id in queue for slurm_id, _ in subs) and cpus
    status = json.loads((workdir / "results" / "toy" / "models" / "base" / "checkpoints" / "train_status.json").read_text())
    train_log = (workdir / "results" / "toy" / "logs" / "base" / "train.log").read_text()

    # the same results as the local run (which also ran the ablation variants), byte for byte
    ours, theirs = compared_files(workdir), compared_files(local.workdir)
    assert ours <= theirs and not [f for f in ours if "layers2" in str(f) or "nli1" in str(f)]
    theirs = ours
    for must in ("results/tables/toy/table1.csv", "results/tables/toy/table1.md", "results/toy/bpe/codes",
                 "results/toy/tatoeba/base/scores/deu.json", "results/toy/models/base/encoder.pt"):
        assert Path(must) in ours
    different = sorted(str(f) for f in ours if (workdir / f).read_bytes() != (local.workdir / f).read_bytes())
    assert different == []
    same = subprocess.run([f"{VENV_BIN}/laser-repro", "lineage", "diff", str(local.workdir / "results/tables/toy/table1.md"),
                           str(workdir / "results/tables/toy/table1.md")], capture_output=True, text=True)
    assert same.returncode == 0 and "nothing differs" in same.stdout, same.stdout + same.stderr
    # Table 1: the 4 Tatoeba languages with training data (por, without, is Table 9's)
    assert len([f for f in ours if f.match("results/toy/tatoeba/base/scores/*.json")]) == 4

    # train ran inside its allocation as locally: one process, the node's 2 threads
    assert (status["world_size"], status["threads"]) == (1, 2), (status, train_log[-3000:])

    # Snakemake's `mpi` launcher pattern (the multi-node form, here on one node): train again as
    # two srun tasks of one allocation, up to the exported encoder (evaluation is the same rules as
    # above). Two processes x update_freq 1 train the model of one process x 2, up to float
    # summation order (tests/test_distributed.py measures it)
    shutil.rmtree(workdir / "results" / "toy" / "models" / "base" / "checkpoints")
    mpi_profile = merged(profile, {"set-resources": {"laser_train": {"mpi": "'srun'", "tasks": 2, "cpus_per_task": 1}}})
    (profile_dir / "config.yaml").write_text(yaml.safe_dump(mpi_profile, sort_keys=False))
    encoder = "results/toy/models/base/encoder.pt"
    proc = run_snakemake(*args, encoder, "--forcerun", "laser_train", env=slurm_cluster.env, timeout=1200,
                         snakemake=FAST_POLL_SNAKEMAKE)
    log = proc.stdout + proc.stderr
    (tmp_path / "snakemake-mpi.log").write_text(log)
    assert proc.returncode == 0, log[-8000:]
    # train and the export, nothing upstream
    assert {rule for _, rule in submissions(log)} == {"rule_laser_export", "rule_laser_train"}, submissions(log)
    status = json.loads((workdir / "results" / "toy" / "models" / "base" / "checkpoints" / "train_status.json").read_text())
    train_log = (workdir / "results" / "toy" / "logs" / "base" / "train.log").read_text()
    assert "--launcher srun" in log, log[-3000:]
    assert (status["world_size"], status["update_freq"], status["tokens_per_update"]) == (2, 1, 3000), (
        status, train_log[-3000:])
    ours = torch.load(workdir / encoder, weights_only=True)["model"]
    theirs = torch.load(local.workdir / encoder, weights_only=True)["model"]
    assert ours.keys() == theirs.keys()
    diff = max(float((ours[k] - theirs[k]).abs().max()) for k in theirs)
    print(f"srun 2 tasks vs local 1 process: max |weight diff| of the encoder = {diff:.2e}")
    assert 0 < diff <= 1e-4
    # lineage diff (issue 40) names the job where the two encoders first differ, and why: the world size
    why = subprocess.run([f"{VENV_BIN}/laser-repro", "lineage", "diff", "--json", str(local.workdir / encoder),
                          str(workdir / encoder)], capture_output=True, text=True)
    assert why.returncode == 1, why.stdout + why.stderr
    first = json.loads(why.stdout)["divergences"][0]
    assert first["rule"] == "laser_train" and first["settings"]["runtime.world_size"] == {"a": 1, "b": 2}, first


def test_srun_workers_stop_before_the_time_limit_and_resume(slurm_cluster, tmp_path):
    """The `mpi`/srun launcher inside a real allocation of 2 tasks, with the SLURM_* variables a
    Snakemake job step strips removed: 2 workers; 45 s before the 1-minute limit they checkpoint
    and exit 75; a second job resumes from that update and completes."""
    sys.path.insert(0, str(REPO / "tests"))
    from tiny_corpus import LANG_PAIRS, SMALL_MODEL, TARGETS, build_binarized

    (tmp_path / "corpus").mkdir()
    data = build_binarized(tmp_path / "corpus")
    settings = {"pairs": LANG_PAIRS.split(","), "targets": TARGETS.split(","),
                "model": dict(SMALL_MODEL, dropout=0.0),
                "train": {"lr": 0.005, "max_tokens": 60, "gpus": 0, "update_freq": 2, "max_epoch": 120,
                          "seed": 3, "log_interval": 5, "cpu_processes": 1}}
    (tmp_path / "settings.json").write_text(json.dumps(settings))
    save_dir, final = tmp_path / "checkpoints", tmp_path / "final.pt"

    def sbatch(limit_minutes: int, margin_s: int, log_name: str) -> str:
        wrap = ("unset SLURM_NTASKS SLURM_NPROCS SLURM_NNODES SLURM_TASKS_PER_NODE SLURM_CPUS_PER_TASK; "
                f"{sys.executable} -m laser_repro.cli train --launcher srun --data {data} --save-dir {save_dir} "
                f"--final {final} --threads 1 --stop-before-limit {margin_s} "
                f"--settings \"$(cat {tmp_path / 'settings.json'})\"; echo exit=$?")
        out = tmp_path / log_name
        # not `sbatch --wait`: it looks at the job after 2, 10, 42, 74, ... s (its sleep grows x4 up to 32 s),
        # which noticed the first job's end ~25 s late (CI time). The same wait, squeue every second
        # (finished jobs stay listed for MinJobAge); COMPLETING counts as running, as for --wait
        job_id = subprocess.run(["sbatch", "--parsable", "--ntasks=2", "--cpus-per-task=1", "--mem=3000",
                                 f"--time={limit_minutes}", f"--output={out}", "--wrap", wrap],
                                env=slurm_cluster.env, capture_output=True, text=True, timeout=60,
                                check=True).stdout.strip().split(";")[0]
        deadline = time.monotonic() + limit_minutes * 60 + 120
        while slurm_cluster.run("squeue", "--noheader", "--states=all", "--jobs", job_id, "--format=%T").strip() in (
                "PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED"):
            assert time.monotonic() < deadline, f"SLURM job {job_id} still running after {limit_minutes} min + 120 s"
            time.sleep(1)
        return out.read_text()

    first = sbatch(1, 45, "first.out")
    status = json.loads((save_dir / "train_status.json").read_text())
    assert "exit=75" in first, first[-4000:]
    assert (status["status"], status["reason"], status["world_size"]) == ("preempted", "time limit", 2), status
    saved = status["num_updates"]
    assert saved > 0 and not final.exists()

    second = sbatch(10, 45, "second.out")
    assert "exit=0" in second, second[-4000:]
    assert f"@ {saved} updates" in second  # resumed from the checkpoint of the first job
    done = json.loads((save_dir / "train_status.json").read_text())
    assert done["status"] == "completed" and done["world_size"] == 2 and done["num_updates"] > saved
    print(f"srun: 2 workers stopped at update {saved} before the 1-min limit; resumed to {done['num_updates']}")


def test_start_refuses_bad_arguments_before_starting_anything(tmp_path):
    """`start` without RUN_DIR prints the usage; a node count other than 1 or 2 (--nodes 2: two slurmd on
    this host) or an unknown option is refused in one line naming it, before any daemon or file exists."""
    proc = local_slurm("start")
    assert proc.returncode == 2 and "start  RUN_DIR [--nodes 2]" in proc.stderr, proc.stderr
    for args, message in ((["--nodes", "3"], "local_slurm.sh: --nodes 3: 1 or 2 (two slurmd on this host)"),
                          (["--nodes=0"], "local_slurm.sh: --nodes 0: 1 or 2 (two slurmd on this host)"),
                          (["--bogus"], "local_slurm.sh: start: unknown option '--bogus'")):
        run_dir = tmp_path / "run"
        proc = local_slurm("start", run_dir, *args)
        assert (proc.returncode, proc.stderr.strip()) == (1, message), proc.stderr
        assert not run_dir.exists()
