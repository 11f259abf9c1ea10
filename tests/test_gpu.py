"""The GPU suite (``pytest -m gpu``; skipped without CUDA): the checks of scripts/gpu_smoke.py as tests.

Every GPU family trains 20 updates on the GPU in fp32 and bf16 with a stop and a resume, and exports float32
encoders whose GPU embeddings equal their CPU ones within 1e-4; two processes sharing one GPU (gloo with CUDA
tensors) compute the gradients of one process; the policy puts a worker on its GPU with NCCL."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from laser_repro.models.device import distributed_backend, worker_device
from laser_repro.models.launch import Rank

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import gpu_smoke  # noqa: E402

CUDA = torch.device("cuda", 0)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    from laser_repro.models.labse import vocab
    from laser_repro.models.multienc.model import Dictionary

    root = tmp_path_factory.mktemp("nway")
    lines = gpu_smoke.write_nway(root, 300, 40, 16, (2, 7))
    Dictionary.build([x for lang in gpu_smoke.LANGS for x in lines["train", lang]]).save(root / "dict.txt")
    tok, _ = vocab.learn({lang: root / "tok" / f"train.{lang}" for lang in gpu_smoke.LANGS}, 120)
    tok.save(str(root / "tokenizer.json"))
    return root, lines


def test_the_policy_puts_a_worker_on_its_gpu_with_nccl():
    assert worker_device(Rank(), environ={}) == CUDA
    assert distributed_backend(CUDA, environ={}) == "nccl"


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
@pytest.mark.parametrize("family", ["multienc", "labse"])
def test_train_resume_export_on_the_gpu(data, tmp_path, family, precision):
    if precision == "bf16" and not torch.cuda.is_bf16_supported():
        pytest.skip(f"{torch.cuda.get_device_name(0)} has no bfloat16")
    root, lines = data
    settings = (gpu_smoke.multienc_settings(precision) if family == "multienc"
                else gpu_smoke.labse_settings(root, precision))
    result = gpu_smoke.train_resume_export(family, root, tmp_path, settings, CUDA, lines)
    assert result["failed_checks"] == [], result


@pytest.mark.parametrize("family", ["multienc", "labse"])
def test_two_processes_on_one_gpu_compute_the_gradients_of_one(data, tmp_path, family):
    root, _ = data
    if family == "multienc":
        settings = gpu_smoke.multienc_settings("fp32", max_update=1, batch_size=25)
        settings["model"]["dropout"] = 0.0
    else:
        settings = gpu_smoke.labse_settings(root, "fp32", max_update=1, batch_size=15)
        settings["encoder"]["dropout"] = 0.0
    result = gpu_smoke.two_processes_one_gpu(family, root, tmp_path, settings, CUDA)
    assert result["failed_checks"] == [], result


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_laser_trains_resumes_and_exports_on_the_gpu(tmp_path, precision):
    pytest.importorskip("fairseq")
    result = gpu_smoke.laser_run(tmp_path / "laser", precision, CUDA)
    assert result["failed_checks"] == [], result
