"""The device policy (laser_repro.models.device) and the trainers' use of it, on the CPU.

The trainers run under ``torch.set_default_device("meta")`` with the CPU passed as their device: a tensor
made without the policy's device (a batch, a loss, a collective's buffer, the model) lands on ``meta``,
where it has no data, and the run fails -- the check that, on a GPU, nothing stays on the CPU."""
from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
import torch

from laser_repro.models import launch
from laser_repro.models.launch import Rank
from laser_repro.models import device as policy
from laser_repro.models.checkpoint_safety import load_model_file
from laser_repro.models.device import DeviceError, Precision, distributed_backend, worker_device

CPU = torch.device("cpu")


def visible_gpus(monkeypatch, n: int) -> None:
    monkeypatch.setattr(torch.cuda, "device_count", lambda: n)


# ---- the policy ------------------------------------------------------------------------------------------

def test_local_rank_maps_to_its_gpu_and_the_cpu_without_one(monkeypatch):
    visible_gpus(monkeypatch, 0)
    assert worker_device(Rank(), environ={}) == CPU
    visible_gpus(monkeypatch, 4)
    assert worker_device(Rank(8, 6, 2), environ={}) == torch.device("cuda", 2)
    # SLURM's per-task binding: every task sees its own GPU as the only one
    visible_gpus(monkeypatch, 1)
    assert worker_device(Rank(8, 6, 3), environ={policy.PLANNED_DEVICE_ENV: "cuda"}) == torch.device("cuda", 0)
    visible_gpus(monkeypatch, 2)
    with pytest.raises(DeviceError, match=f"{socket.gethostname()}.*local rank 3.*only 2 CUDA devices"):
        worker_device(Rank(8, 3, 3), environ={})


def test_a_rank_meant_for_a_gpu_that_sees_none_is_an_error_naming_its_node(monkeypatch):
    visible_gpus(monkeypatch, 0)
    with pytest.raises(DeviceError, match=f"{socket.gethostname()}: training rank 5 .* sees no CUDA device, "
                                          f"but its launcher planned one worker per GPU"):
        worker_device(Rank(8, 5, 1), environ={policy.PLANNED_DEVICE_ENV: "cuda"})
    with pytest.raises(DeviceError, match="SLURM allocated GPUs to this job \\(SLURM_JOB_GPUS=0,1\\)"):
        worker_device(Rank(), environ={"SLURM_JOB_GPUS": "0,1"})
    assert worker_device(Rank(), environ={"SLURM_JOB_GPUS": ""}) == CPU


def test_cpu_plans_and_cpu_families_stay_on_the_cpu_beside_gpus(monkeypatch):
    visible_gpus(monkeypatch, 8)
    assert worker_device(Rank(2, 1, 1), environ={policy.PLANNED_DEVICE_ENV: "cpu"}) == CPU
    assert worker_device(Rank(), uses_gpu=False, environ={}) == CPU
    assert policy.planned_device_type(True, environ={}) == "cuda"
    assert policy.planned_device_type(False, environ={}) == "cpu"
    # Bi-Sent2Vec is one process whatever GPUs the node has; the others one per GPU
    from laser_repro.models import registry

    assert not registry.get("bisent2vec").uses_gpu
    assert launch.local_world_size(1, uses_gpu=registry.get("bisent2vec").uses_gpu) == 1
    assert launch.local_world_size(1, uses_gpu=registry.get("labse").uses_gpu) == 8
    visible_gpus(monkeypatch, 0)
    assert policy.planned_device_type(True, environ={"SLURM_GPUS_ON_NODE": "4"}) == "cuda"
    assert policy.planned_device_type(True, environ={}) == "cpu"
    with pytest.raises(DeviceError, match="expected 'cpu' or 'cuda'"):
        worker_device(Rank(), environ={policy.PLANNED_DEVICE_ENV: "gpu"})


def test_backend_is_nccl_on_gpus_and_gloo_on_cpus():
    assert distributed_backend(CPU, environ={}) == "gloo"
    assert distributed_backend(torch.device("cuda", 3), environ={}) == "nccl"
    assert distributed_backend(torch.device("cuda", 0), environ={policy.BACKEND_ENV: "gloo"}) == "gloo"
    with pytest.raises(DeviceError, match="nccl needs CUDA"):
        distributed_backend(CPU, environ={policy.BACKEND_ENV: "nccl"})


def test_precision_names_and_fp16_needs_a_gpu():
    with pytest.raises(ValueError, match="fp16 needs a CUDA device"):
        Precision("fp16", CPU)
    with pytest.raises(ValueError, match="'fp8' is not one of"):
        Precision("fp8", CPU)
    bf16 = Precision("bf16", CPU)
    layer = torch.nn.Linear(4, 4)
    with bf16.autocast():
        out = layer(torch.ones(2, 4))
    assert out.dtype == torch.bfloat16 and bf16.widen(out).dtype == torch.float32
    with Precision("fp32", CPU).autocast():
        assert layer(torch.ones(2, 4)).dtype == torch.float32


def test_collectives_refuse_a_tensor_on_another_device():
    from laser_repro.models.collectives import Comm

    comm = Comm(Rank(), CPU)
    comm.sum_(torch.zeros(3))
    with pytest.raises(RuntimeError, match="collective on a tensor on meta; this worker computes on cpu"):
        comm.sum_(torch.zeros(3, device="meta"))


# ---- the trainers under a meta default device ------------------------------------------------------------

class MetaDefault:
    """``torch.set_default_device("meta")`` for the block (restored after)."""

    def __enter__(self):
        torch.set_default_device("meta")

    def __exit__(self, *exc):
        torch.set_default_device(None)
        return False


def never() -> bool:
    return False


def test_multienc_trains_validates_and_resumes_on_its_device_only(tmp_path, torch_single_thread):
    from test_multienc import LANGS, make_cipher_data, tiny_settings

    from laser_repro.models.multienc.trainer import train

    data = make_cipher_data(tmp_path / "data", n_train=60, n_valid=10)
    settings = tiny_settings({"sources": LANGS, "targets": "all"}, max_update=6, batch_size=16,
                             validate_interval_updates=3, dropout=0.1)
    calls = []
    with MetaDefault():
        first = train(data, tmp_path / "save", settings, rank=Rank(), device=CPU,
                      stop_requested=lambda: calls.append(1) or len(calls) > 4)
        result = train(data, tmp_path / "save", settings, rank=Rank(), device=CPU, stop_requested=never)
    assert first["preempted"] and result["num_updates"] == 6 and result["start_updates"] == 4
    ckpt = load_model_file(tmp_path / "save" / "checkpoint_last.pt", what="test", rebuild="-", weights_only=True)
    assert all(t.device == CPU and t.dtype == torch.float32 for t in ckpt["model"].values())
    assert ckpt["precision"] == "fp32" and ckpt["cuda_rng_states"] == [] and len(ckpt["torch_rng_states"]) == 1


@pytest.mark.parametrize("stage", ["dual", "pretrain"])
def test_labse_trains_and_validates_on_its_device_only(tmp_path, torch_single_thread, stage):
    from test_labse import make_data, settings

    from laser_repro.models.labse.trainer import train

    root = make_data(tmp_path / "d", n_train=20, n_valid=6)
    opts = settings(root, stage=stage, max_update=3, validate_interval_updates=2, batch_size=8)
    with MetaDefault():
        result = train(root, tmp_path / "save", opts, rank=Rank(), device=CPU, stop_requested=never)
    assert result["num_updates"] == 3


def _meta_worker(rank: int, world: int, port: int, data: str, save_dir: str, settings: dict):
    from laser_repro.models.multienc.trainer import train

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    torch.set_default_device("meta")
    train(data, save_dir, settings, rank=Rank(world, rank, rank, "127.0.0.1", port, "torchrun"), device=CPU,
          stop_requested=never)


def test_two_processes_reduce_only_tensors_of_their_device(tmp_path, torch_single_thread):
    """The collectives (gradients, stop flags, validation results, RNG states) of a 2-process run."""
    from test_multienc import LANGS, _free_port, make_cipher_data, tiny_settings

    data = make_cipher_data(tmp_path / "data", n_train=40, n_valid=8)
    settings = tiny_settings({"sources": LANGS, "targets": "all"}, max_update=3, batch_size=16,
                             validate_interval_updates=2)
    torch.multiprocessing.spawn(_meta_worker, nprocs=2, args=(2, _free_port(), str(data), str(tmp_path / "two"),
                                                               settings))
    ckpt = load_model_file(tmp_path / "two" / "checkpoint_last.pt", what="test", rebuild="-", weights_only=True)
    assert ckpt["num_updates"] == 3 and len(ckpt["torch_rng_states"]) == 2


def test_bf16_on_the_cpu_trains_float32_weights(tmp_path, torch_single_thread):
    """Autocast lowers the arithmetic, not the weights: checkpoints (and so the exported encoders) stay float32."""
    from test_labse import make_data, settings

    from laser_repro.models.labse.trainer import train

    root = make_data(tmp_path / "d", n_train=20, n_valid=6)
    opts = settings(root, max_update=2, validate_interval_updates=2, batch_size=8, precision="bf16")
    train(root, tmp_path / "save", opts, rank=Rank(), device=CPU, stop_requested=never)
    ckpt = load_model_file(tmp_path / "save" / "checkpoint_last.pt", what="test", rebuild="-", weights_only=True)
    assert ckpt["precision"] == "bf16"
    assert all(t.dtype == torch.float32 for t in ckpt["model"].values() if t.is_floating_point())
    with pytest.raises(ValueError, match="fp16 needs a CUDA device"):
        train(root, tmp_path / "fp16", {**opts, "train": {**opts["train"], "precision": "fp16"}}, rank=Rank(),
              device=CPU, stop_requested=never)


# ---- the learning curves of LASER move their batches to the model's device ------------------------------

def test_curves_feed_the_model_on_its_device():
    pytest.importorskip("fairseq")
    from laser_repro.models.laser.curves import CurveMonitor

    seen = []

    class Encoder(torch.nn.Module):
        padding_idx, output_units = 1, 2

        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.zeros(2, device="meta"))

        def forward(self, tokens, src_lengths):
            seen.append((tokens.device, src_lengths.device))
            return {"sentemb": torch.zeros(len(tokens), 2)}

    class Dataset:
        sentences = [torch.tensor([5, 6, 2]), torch.tensor([7, 2])]

        def __getitem__(self, i):
            return {"id": i, "source": self.sentences[i]}

        def collater(self, items):
            return {"net_input": {"src_tokens": torch.stack([torch.nn.functional.pad(x["source"], (0, 3 - len(x["source"])))
                                                             for x in items])}, "ntokens": 5}

        def pair_index(self, indices):  # one language pair
            return indices * 0

    def criterion(model, sample):
        seen.append((sample["net_input"]["src_tokens"].device,))
        return torch.tensor(2.0), 1, {"ntokens": 5}

    monitor = CurveMonitor(Path("unused.jsonl"), seed=1, languages=["fra"], interval_updates=10, loss_sentences=2)
    encoder = Encoder()
    monitor._embed(encoder, Dataset.sentences)
    monitor._loss(encoder, criterion, Dataset(), torch.arange(2).numpy())
    assert seen and all(d == torch.device("meta") for devices in seen for d in devices), seen


def test_exact_fp32_turns_tf32_off_and_restores_it():
    """Seen on an H200: cuDNN's default TF32 put an LSTM encoder's GPU embeddings 3e-4 from the CPU's."""
    from laser_repro.models.device import exact_fp32

    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = True
    try:
        with exact_fp32():
            assert not torch.backends.cudnn.allow_tf32 and not torch.backends.cuda.matmul.allow_tf32
        assert torch.backends.cudnn.allow_tf32 and torch.backends.cuda.matmul.allow_tf32
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved


def test_fairseq_bf16_stays_a_cuda_run(monkeypatch):
    """fairseq 0.12 turns --bf16 into a TPU run (it failed at start on an H200); bf16_on_gpu keeps CUDA."""
    import sys as _sys

    from fairseq import options

    from laser_repro.models.laser.fairseq_bridge import bf16_on_gpu

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(_sys, "argv", ["fairseq-train", "data", "--bf16"])
    parse = lambda: options.parse_args_and_arch(options.get_training_parser(), ["data", "--bf16", "--arch", "lstm"])
    assert parse().tpu  # fairseq's own reading
    with bf16_on_gpu():
        args = parse()
    assert args.bf16 and not args.tpu
    assert parse().tpu  # restored


def test_planned_gpus_that_the_process_does_not_see_stop_the_launch(monkeypatch):
    """SLURM's job step strips SLURM_GPUS_*: a step given no GPU planned "cpu" and trained on the CPU of a GPU
    node. The config's train.gpus is the plan now: fewer visible GPUs stop the launch in one line."""
    from laser_repro.core.errors import UserError
    from laser_repro.models import launch

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    with pytest.raises(UserError, match=r"train.gpus is 2 but this process sees 0 GPU\(s\)"):
        launch.local_world_size(1, uses_gpu=True, planned_gpus=2)
    assert launch.local_world_size(3, uses_gpu=True, planned_gpus=0) == 3  # CPU processes as before
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 8)
    # torchrun took every visible GPU: 8 workers for a plan of 2 (a wrong tokens per update)
    assert launch.local_world_size(1, uses_gpu=True, planned_gpus=2) == 2
    assert launch.local_world_size(1, uses_gpu=False, planned_gpus=2) == 1
