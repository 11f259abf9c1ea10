"""Multi-process training (torch.distributed over gloo on CPU, as on a GPU node) and
preemption: the effective batch does not depend on the number of processes, and a run killed
mid-epoch resumes from the update it saved and ends where an uninterrupted run ends."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from laser_repro.models import launch

pytest.importorskip("fairseq")

from laser_repro.models.laser import fairseq_bridge  # noqa: E402
from tiny_corpus import LANG_PAIRS, SMALL_MODEL, TARGETS, build_binarized  # noqa: E402

pytestmark = pytest.mark.slow


# -- launch helpers (no training) -------------------------------------------------------------


def test_update_freq_keeps_tokens_per_update():
    assert launch.update_freq_for(128000, 8000, 16) == 1
    assert launch.update_freq_for(128000, 8000, 4) == 4
    assert launch.update_freq_for(128000, 8000, 1) == 16
    with pytest.raises(ValueError, match="world_size=0"):
        launch.update_freq_for(128000, 8000, 0)


def test_tokens_per_update_other_than_planned_is_an_error():
    from laser_repro.core.errors import UserError

    # 3 GPUs (a local torchrun takes every visible one): update_freq 6 would train 144000 tokens per update
    with pytest.raises(UserError) as err:
        launch.update_freq_for(128000, 8000, 3)
    message = str(err.value)
    assert "\n" not in message
    assert "planned 128000 tokens per update" in message and "world size 3" in message
    assert "max_tokens 8000" in message and "update_freq 6 would make 144000" in message
    assert "divides 16 (train.gpus" in message and "train.tokens_per_update to a multiple of 24000" in message
    with pytest.raises(UserError, match="set train.max_tokens to a divisor of 128000"):
        launch.update_freq_for(128000, 7000, 1)


def test_worker_rank_from_torchrun_and_srun(monkeypatch):
    assert launch.worker_rank({}) == launch.Rank()
    r = launch.worker_rank({"WORLD_SIZE": "4", "RANK": "3", "LOCAL_RANK": "1",
                            "MASTER_ADDR": "n1", "MASTER_PORT": "29500"})
    assert (r.world_size, r.rank, r.local_rank, r.master_addr, r.master_port, r.source) == (
        4, 3, 1, "n1", 29500, "torchrun")
    monkeypatch.setattr(launch, "_first_slurm_host", lambda nodelist: nodelist.split(",")[0])
    env = {"SLURM_PROCID": "5", "SLURM_STEP_NUM_TASKS": "8", "SLURM_LOCALID": "1",
           "SLURM_STEP_NODELIST": "gpu07,gpu08", "SLURM_JOB_ID": "123456"}
    r = launch.worker_rank(env)
    assert (r.world_size, r.rank, r.local_rank, r.master_addr, r.source) == (8, 5, 1, "gpu07", "srun")
    assert r.master_port == launch.slurm_port("123456") and 20000 <= r.master_port < 40000
    # the batch step of a multi-task job is not a worker of a step
    assert launch.worker_rank({"SLURM_PROCID": "0", "SLURM_NTASKS": "1", "SLURM_JOB_ID": "1"}) == launch.Rank()


def test_slurm_durations_and_deadline(monkeypatch):
    assert launch.parse_slurm_duration("1-02:03:04") == 93784
    assert launch.parse_slurm_duration("02:03:04") == 7384
    assert launch.parse_slurm_duration("3:04") == 184
    assert launch.parse_slurm_duration("45") == 2700  # bare minutes
    assert launch.parse_slurm_duration("UNLIMITED") is None
    with pytest.raises(ValueError):
        launch.parse_slurm_duration("1:2:3:4")
    assert launch.training_deadline(300, {}) is None  # not in a SLURM job
    monkeypatch.setattr(launch, "slurm_time_left", lambda job: 1000)
    before = time.time()
    deadline = launch.training_deadline(300, {"SLURM_JOB_ID": "7"})
    assert before + 700 <= deadline <= time.time() + 700
    flag = launch.PreemptionFlag(deadline=time.time() - 1)
    assert flag.requested and flag.reason == "time limit"
    assert not launch.PreemptionFlag(deadline=time.time() + 60).requested


def test_distributed_argv():
    assert fairseq_bridge.distributed_argv(1, 0, torch.device("cpu")) == []
    argv = fairseq_bridge.distributed_argv(2, 1, torch.device("cpu"))
    assert argv[argv.index("--distributed-backend") + 1] == "gloo"
    assert argv[argv.index("--ddp-backend") + 1] == "legacy_ddp"
    argv = fairseq_bridge.distributed_argv(8, 5, torch.device("cuda", 1))
    assert argv[argv.index("--distributed-backend") + 1] == "nccl" and "--ddp-backend" not in argv
    assert argv[argv.index("--device-id") + 1] == "1" and "--distributed-no-spawn" in argv


# -- real training runs through the CLI --------------------------------------------------------


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return build_binarized(tmp_path_factory.mktemp("laser_dist"))


def settings(processes, update_freq, max_epoch=2, log_interval=1):
    return {
        "pairs": LANG_PAIRS.split(","), "targets": TARGETS.split(","),
        # no dropout: then one process x 2 accumulated steps and two processes x 1 step
        # compute the same gradient sums
        "model": dict(SMALL_MODEL, dropout=0.0),
        "train": {"lr": 0.005, "max_tokens": 60, "gpus": 0, "update_freq": update_freq,
                  "max_epoch": max_epoch, "seed": 3, "log_interval": log_interval,
                  "cpu_processes": processes},
    }


def train_cmd(data_dir, run_dir, conf, threads=1):
    return [sys.executable, "-m", "laser_repro.cli", "train", "--data", str(data_dir),
            "--save-dir", str(run_dir / "checkpoints"), "--final", str(run_dir / "final.pt"),
            "--threads", str(threads), "--settings", json.dumps(conf)]


def run_training(data_dir, run_dir, conf):
    run_dir.mkdir(parents=True, exist_ok=True)
    with open(run_dir / "train.log", "a") as log:
        proc = subprocess.run(train_cmd(data_dir, run_dir, conf), stdout=log, stderr=subprocess.STDOUT)
    assert proc.returncode == 0, (run_dir / "train.log").read_text()[-3000:]
    status = json.loads((run_dir / "checkpoints" / "train_status.json").read_text())
    return status, fairseq_bridge.load_checkpoint(run_dir / "final.pt")


def max_weight_diff(a, b):
    return max(float((a["model"][k] - b["model"][k]).abs().max()) for k in a["model"])


def test_two_gloo_processes_same_effective_batch_as_one(data_dir, tmp_path):
    one, one_ckpt = run_training(data_dir, tmp_path / "one", settings(processes=1, update_freq=2))
    two, two_ckpt = run_training(data_dir, tmp_path / "two", settings(processes=2, update_freq=2))
    assert (one["world_size"], one["update_freq"]) == (1, 2)
    assert (two["world_size"], two["update_freq"]) == (2, 1)
    assert one["tokens_per_update"] == two["tokens_per_update"] == 120
    assert one["num_updates"] == two["num_updates"] > 0
    diff = max_weight_diff(one_ckpt, two_ckpt)
    print(f"1 process x update_freq 2 vs 2 processes x 1: max |weight diff| = {diff:.2e}, "
          f"{one['num_updates']} updates")
    assert diff <= 1e-5
    # the comparison can fail: half the batch per update gives other weights
    _, small_batch = run_training(data_dir, tmp_path / "half", settings(processes=1, update_freq=1))
    assert max_weight_diff(one_ckpt, small_batch) > 1e-3


def wait_for_update(log_path, proc, at_least, timeout=300):
    """Poll the training log until it reports ``num_updates >= at_least``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "training ended before it could be interrupted"
        for line in reversed(log_path.read_text().splitlines()):
            if '"num_updates"' in line:
                n = int(json.loads(line[line.index("{"):])["num_updates"])
                if n >= at_least:
                    return n
                break
        time.sleep(0.05)
    raise AssertionError("training made no progress")


@pytest.mark.parametrize("processes", [1, 2])
def test_sigterm_mid_epoch_saves_and_rerun_resumes(data_dir, tmp_path, processes):
    # update_freq 1 and max_tokens 60: ~28 updates per epoch; 6 epochs leave time to interrupt
    conf = settings(processes=processes, update_freq=processes, max_epoch=6)
    reference, reference_ckpt = run_training(data_dir, tmp_path / "reference", conf)
    per_epoch = reference["num_updates"] // 6

    run_dir = tmp_path / "interrupted"
    run_dir.mkdir()
    log_path = run_dir / "train.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(train_cmd(data_dir, run_dir, conf), stdout=log, stderr=subprocess.STDOUT)
        try:
            # past the first epoch, in the middle of one
            seen = wait_for_update(log_path, proc, per_epoch + per_epoch // 2)
            os.kill(proc.pid, signal.SIGTERM)  # the launcher: it passes the signal on
            rc = proc.wait(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert rc == launch.EXIT_PREEMPTED, log_path.read_text()[-3000:]
    status = json.loads((run_dir / "checkpoints" / "train_status.json").read_text())
    assert status["status"] == "preempted" and status["reason"] == "SIGTERM"
    saved = status["num_updates"]
    assert seen <= saved < reference["num_updates"]
    state = fairseq_bridge.load_checkpoint(run_dir / "checkpoints" / "checkpoint_last.pt")
    assert fairseq_bridge.checkpoint_num_updates(state) == saved
    position = state["extra_state"]["train_iterator"]["iterations_in_epoch"]
    assert 0 < position < per_epoch * processes, "the checkpoint should be mid-epoch"
    assert not (run_dir / "final.pt").exists(), "an interrupted run must not look finished"
    print(f"{processes} process(es): interrupted at update {saved} "
          f"(epoch {state['extra_state']['train_iterator']['epoch']}, batch {position})")

    # rerun: resumes from the saved update and ends where the uninterrupted run ends
    resumed, resumed_ckpt = run_training(data_dir, run_dir, conf)
    log_text = log_path.read_text()
    assert f"@ {saved} updates" in log_text  # fairseq: "Loaded checkpoint ... (epoch E @ N updates)"
    assert resumed["num_updates"] == reference["num_updates"]
    history = resumed_ckpt["optimizer_history"]
    assert [h["num_updates"] for h in history][:1] == [saved]
    diff = max_weight_diff(reference_ckpt, resumed_ckpt)
    print(f"resumed vs uninterrupted: max |weight diff| = {diff:.2e}")
    assert diff <= 1e-5
