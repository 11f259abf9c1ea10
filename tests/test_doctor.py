"""laser-repro doctor: the probes replaced by those of a GPU node (with and without visible GPUs) and a
CPU install, against the repository's SLURM profile and paper config."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys

import pytest

from conftest import REPO
from laser_repro import doctor

PROFILE = REPO / "profiles" / "slurm"
PAPER = REPO / "config" / "paper.yaml"
H100 = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "memory_gib": 79.2, "capability": [9, 0]}
V100 = {"index": 1, "name": "Tesla V100-SXM2-32GB", "memory_gib": 31.7, "capability": [7, 0]}
FAIRSEQ = {"version": "0.12.3.1", "distribution": "fairseq-fixed", "missing_extensions": []}
VERSIONS = {"python": "3.11.7", "snakemake": "9.27.1", "numpy": "2.4.6"}


# torch.cuda.get_arch_list() of the CUDA 13.0 and 12.6 builds (PyTorch's support matrix)
CU130_ARCHES = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120"]
CU126_ARCHES = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
DRIVER_580 = {"cuda": [13, 0], "version": "580.95.05", "gpus": None}
DRIVER_550 = {"cuda": [12, 4], "version": "550.54.15", "gpus": None}


def cuda_torch(gpus, cuda="13.0", arch_list=CU130_ARCHES):
    return {"version": "2.13.0", "cuda": cuda, "cudnn": 92000, "nccl": "2.29.7", "gpus": gpus,
            "cuda_visible_devices": None, "arch_list": arch_list}


CPU_TORCH = {"version": "2.13.0+cpu", "cuda": None, "cudnn": None, "nccl": None, "gpus": [],
             "cuda_visible_devices": None}
GPU_FAISS = {"version": "1.14.1", "distribution": "faiss-gpu-cu12", "gpu_support": True, "gpus": 1}
CPU_FAISS = {"version": "1.15.1", "distribution": "faiss-cpu", "gpu_support": False, "gpus": 0}


def fake(monkeypatch, torch, faiss, nvidia_device, fairseq=FAIRSEQ, driver=DRIVER_580):
    monkeypatch.setattr(doctor, "probe_torch", lambda: torch)
    monkeypatch.setattr(doctor, "probe_driver", lambda: driver)
    monkeypatch.setattr(doctor, "probe_faiss", lambda: faiss)
    monkeypatch.setattr(doctor, "probe_fairseq", lambda: fairseq)
    monkeypatch.setattr(doctor, "probe_versions", lambda: VERSIONS)
    monkeypatch.setattr(doctor, "probe_nvidia_device", lambda: nvidia_device)


def run(capsys, *argv):
    parser = argparse.ArgumentParser()
    doctor.add_cli(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["doctor", *map(str, argv)])
    try:
        args.func(args)
        status = 0
    except SystemExit as done:
        status = done.code
    return status, capsys.readouterr().out


def test_gpu_node_with_its_gpus_passes_and_lists_them(monkeypatch, capsys, tmp_path):
    fake(monkeypatch, cuda_torch([H100]), GPU_FAISS, nvidia_device=True)
    status, out = run(capsys, "--profile", PROFILE, "--configfile", PAPER, "--strict", "--json", tmp_path / "d.json")
    assert status == 0, out
    assert "torch       2.13.0 (CUDA 13.0), cuDNN 92000, NCCL 2.29.7" in out
    assert "cuda:0    NVIDIA H100 80GB HBM3, 79.2 GiB, compute capability 9.0, bf16 yes" in out
    assert "faiss       1.14.1 (faiss-gpu-cu12), GPU support yes, 1 GPU(s)" in out
    assert "compiled extensions import" in out and "ERROR" not in out and "WARNING" not in out
    assert "doctor: 0 error(s), 0 warning(s)" in out
    assert '"findings"' in (tmp_path / "d.json").read_text()


def test_gpu_node_without_visible_gpus_warns(monkeypatch, capsys):
    fake(monkeypatch, cuda_torch([]), dict(GPU_FAISS, gpus=0), nvidia_device=False)
    status, out = run(capsys, "--profile", PROFILE, "--configfile", PAPER)
    assert status == 0
    assert "WARNING: torch is a CUDA build but sees no GPU" in out
    status, _ = run(capsys, "--profile", PROFILE, "--configfile", PAPER, "--strict")
    assert status == 1


def test_cpu_torch_where_the_profile_asks_for_gpus_is_an_error(monkeypatch, capsys):
    fake(monkeypatch, CPU_TORCH, CPU_FAISS, nvidia_device=True)
    status, out = run(capsys, "--profile", PROFILE, "--configfile", PAPER)
    assert status == 1
    error = [line for line in out.splitlines() if line.startswith("ERROR:")]
    assert len(error) == 1 and "torch 2.13.0+cpu is a CPU build" in error[0]
    assert "set-resources laser_train gpu: 1" in error[0] or "models.base.train.gpus: 16" in error[0]
    assert "bash scripts/setup.sh --gpu" in error[0]
    assert "WARNING: faiss 1.15.1 (faiss-cpu) has no GPU support" in out


def test_cpu_torch_on_a_gpu_machine_without_a_profile_warns(monkeypatch, capsys):
    fake(monkeypatch, CPU_TORCH, CPU_FAISS, nvidia_device=True)
    status, out = run(capsys)
    assert status == 0 and "WARNING: this machine has an NVIDIA GPU but torch 2.13.0+cpu is a CPU build" in out
    fake(monkeypatch, CPU_TORCH, CPU_FAISS, nvidia_device=False)  # the CPU environment on a CPU machine: fine
    status, out = run(capsys, "--strict")
    assert status == 0 and "doctor: 0 error(s), 0 warning(s)" in out


def test_knn_device_gpu_needs_a_faiss_gpu_build():
    wants = doctor.Wants(knn_device="gpu")
    errors = doctor.diagnose({"torch": cuda_torch([H100]), "faiss": CPU_FAISS, "fairseq": FAIRSEQ}, wants)
    assert [f.level for f in errors] == ["OK", "ERROR"]
    assert "evaluation.knn_device is gpu but faiss 1.15.1 (faiss-cpu) has no GPU support" in errors[1].message
    login = doctor.diagnose({"torch": cuda_torch([]), "faiss": dict(GPU_FAISS, gpus=0), "fairseq": FAIRSEQ}, wants)
    assert [f.level for f in login] == ["WARNING"] and "faiss sees no GPU" in login[0].message


def test_missing_fairseq_extensions_and_bf16_on_old_gpus():
    broken = dict(FAIRSEQ, missing_extensions=["fairseq.data.data_utils_fast (ImportError: x)"])
    wants = doctor.Wants(bf16_models=["laser"])
    found = doctor.diagnose({"torch": cuda_torch([H100, V100], "12.6", CU126_ARCHES), "faiss": GPU_FAISS,
                             "fairseq": broken}, wants)
    text = "\n".join(f"{f.level}: {f.message}" for f in found)
    assert "ERROR: fairseq's compiled extensions do not import: fairseq.data.data_utils_fast" in text
    assert "WARNING: train.precision bf16 (laser) but Tesla V100-SXM2-32GB lack bf16" in text
    assert "H100" not in text.split("lack bf16")[0].split("but")[-1]


def test_v100_under_a_cuda13_torch_is_an_error_naming_the_build(monkeypatch, capsys):
    # torch's default wheel (CUDA 13.0) has no sm_70 kernels: a V100 node fails at its first kernel
    fake(monkeypatch, cuda_torch([V100]), GPU_FAISS, nvidia_device=True)
    status, out = run(capsys, "--profile", PROFILE, "--configfile", PAPER)
    errors = [line for line in out.splitlines() if line.startswith("ERROR:")]
    assert status == 1 and len(errors) == 1, out
    assert "Tesla V100-SXM2-32GB (compute capability 7.0) has no kernels in torch 2.13.0" in errors[0]
    assert "bash scripts/setup.sh --gpu --cuda 12.6" in errors[0]
    assert "OK: torch sees" not in out
    # the 12.6 build runs it
    fake(monkeypatch, cuda_torch([V100], "12.6", CU126_ARCHES), GPU_FAISS, nvidia_device=True)
    status, out = run(capsys, "--profile", PROFILE, "--configfile", PAPER)
    assert status == 0 and "OK: torch sees 1 GPU(s), built for CUDA 12.6" in out, out


def test_cuda13_torch_under_an_older_driver_is_an_error_naming_the_build(monkeypatch, capsys):
    # an R550 driver (CUDA 12.4): torch 13.0 sees no GPU; nvidia-smi still lists it
    driver = dict(DRIVER_550, gpus=[{"name": "NVIDIA H100 80GB HBM3", "capability": [9, 0], "driver_version": "550.54.15"}])
    fake(monkeypatch, cuda_torch([]), dict(GPU_FAISS, gpus=0), nvidia_device=True, driver=driver)
    status, out = run(capsys, "--profile", PROFILE, "--configfile", PAPER)
    errors = [line for line in out.splitlines() if line.startswith("ERROR:")]
    assert status == 1 and len(errors) == 1, out
    assert "built for CUDA 13.0 but this node's NVIDIA driver 550.54.15 supports CUDA 12.4 at most" in errors[0]
    assert "bash scripts/setup.sh --gpu --cuda 12.6" in errors[0]  # the build 12.4 runs fully
    assert "driver      NVIDIA 550.54.15, CUDA 12.4" in out
    # a 12.8 build on that driver runs (minor-version compatibility)
    fake(monkeypatch, cuda_torch([H100], "12.8", CU130_ARCHES[:-1]), GPU_FAISS, nvidia_device=True, driver=driver)
    status, out = run(capsys, "--profile", PROFILE, "--configfile", PAPER, "--strict")
    assert status == 0, out


@pytest.mark.parametrize("driver, capabilities, expected", [
    ((13, 0), [(7, 0)], "12.6"),          # V100 on a new driver: only 12.6 has sm_70
    ((13, 0), [(9, 0), (7, 0)], "12.6"),  # a mixed node: the build that runs both
    ((13, 0), [(9, 0)], "13.0"),
    ((12, 9), [(9, 0)], "12.8"),
    ((12, 4), [(8, 0)], "12.6"),          # no build <= 12.4: the least minor-version reliance
    ((12, 8), [(10, 0)], "12.8"),         # Blackwell: not in 12.6
    ((12, 4), [(8, 9)], "12.6"),          # L40: sm_86 kernels run on 8.9
    ((13, 0), [(12, 1)], "13.0"),         # only 13.0 has PTX for newer GPUs
    ((11, 8), [(8, 0)], None),            # no CUDA 12 driver
    ((13, 0), [(3, 7)], None),            # Kepler
])
def test_cuda_build_choice(driver, capabilities, expected):
    from laser_repro.core.cuda_builds import choose

    build, why = choose(driver, capabilities)
    assert (build.cuda if build else None) == expected, why


def test_nvidia_smi_query_parsed():
    from laser_repro.core.cuda_builds import parse_nvidia_smi

    gpus = parse_nvidia_smi("Tesla V100-SXM2-32GB, 7.0, 535.183.01\nNVIDIA H100 80GB HBM3, 9.0, 535.183.01\n")
    assert gpus == [{"name": "Tesla V100-SXM2-32GB", "capability": [7, 0], "driver_version": "535.183.01"},
                    {"name": "NVIDIA H100 80GB HBM3", "capability": [9, 0], "driver_version": "535.183.01"}]
    with pytest.raises(ValueError, match="line 1"):
        parse_nvidia_smi("garbage\n")


def test_profile_gpu_rules(tmp_path):
    (tmp_path / "config.yaml").write_text(
        "default-resources:\n  mem_mb: 100\n"
        "set-resources:\n"
        "  laser_train: {gpu: 2}\n  labse_train: {gres: 'gpu:a100:4'}\n  multienc_train: {slurm_extra: \"'--gpus-per-node=8'\"}\n"
        "  bucc_mine: {gpu: 0}\n  bpe_learn: {mem_mb: 100}\n", encoding="utf-8")
    rules = doctor.profile_gpu_rules(tmp_path)
    assert set(rules) == {"laser_train", "labse_train", "multienc_train"}
    assert rules["labse_train"].endswith("gres: gpu:a100:4")
    # with a config, only the families it trains (paper.yaml: LASER); rules of no family always count
    (tmp_path / "config.yaml").write_text("set-resources:\n  labse_train: {gpu: 1}\n  bucc_mine: {gpu: 1}\n",
                                          encoding="utf-8")
    assert set(doctor.wants_of(tmp_path, PAPER).gpu_rules) == {"bucc_mine", "models.base.train.gpus"}
    assert set(doctor.wants_of(tmp_path, None).gpu_rules) == {"labse_train", "bucc_mine"}
    (tmp_path / "bad.yaml").write_text("- a list\n", encoding="utf-8")
    with pytest.raises(ValueError, match="bad.yaml: a profile is a YAML mapping"):
        doctor.profile_gpu_rules(tmp_path / "bad.yaml")


def test_real_probes_run_here():
    env = doctor.probe()
    assert env["versions"]["python"] and "version" in env["torch"] and "version" in env["faiss"]
    assert set(env["fairseq"]) >= {"version", "missing_extensions"} or "error" in env["fairseq"]


def test_the_cli_starts_without_faiss_or_fairseq():
    """`laser-repro doctor` is the first command on a new GPU node, whose environment may lack faiss (it
    mines BUCC only) and fairseq: building the CLI's parser must import neither (it did import faiss through
    bucc-mine's option choices, seen on the lent H200)."""
    code = ("import sys; sys.modules['faiss'] = None; sys.modules['fairseq'] = None\n"
            "from laser_repro import cli\n"
            "cli.build_parser()\n"
            "assert 'faiss' not in [m for m, v in sys.modules.items() if v is not None]\n")
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
