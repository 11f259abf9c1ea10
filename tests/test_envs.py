"""The CPU and GPU environments (workflow/envs) differ only in the builds of torch and faiss: each
constraints-gpu-cuXY.txt is constraints.txt with torch's CUDA X.Y build, faiss-gpu-cu12 for faiss-cpu plus
the CUDA libraries, each laser-gpu-cuXY.yaml is laser.yaml with that build's wheel index and faiss-gpu-cu12;
scripts/setup.sh --gpu --cuda X.Y installs them (checked with --dry-run)."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from laser_repro.core.cuda_builds import BUILDS

ENVS = Path(__file__).resolve().parents[1] / "workflow" / "envs"
# what only the GPU environment installs: faiss's GPU build and the CUDA packages of torch and faiss
GPU_ONLY = re.compile(r"^(faiss-gpu-cu12|nvidia-[a-z0-9-]+|cuda-(bindings|pathfinder|toolkit)|triton)$")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, version = line.partition("==")
        assert sep and version, f"{path.name}:{number}: not a name==version pin: {line!r}"
        assert _norm(name) not in pins, f"{path.name}:{number}: {name} pinned twice"
        pins[_norm(name)] = version
    return pins


@pytest.mark.parametrize("build", BUILDS.values(), ids=lambda b: b.tag)
def test_gpu_constraints_are_the_cpu_ones_with_the_gpu_builds(build):
    cpu, gpu = _pins(ENVS / "constraints.txt"), _pins(ENVS / f"constraints-gpu-{build.tag}.txt")
    assert "faiss-cpu" in cpu and "faiss-cpu" not in gpu and "faiss-gpu-cu12" in gpu
    # the same release; 12.x with PyTorch's local label, which only their wheel index has
    assert gpu["torch"] == (cpu["torch"] if build.major == 13 else f"{cpu['torch']}+{build.tag}")
    changed = {name: (version, gpu.get(name)) for name, version in cpu.items()
               if name not in ("faiss-cpu", "torch") and gpu.get(name) != version}
    assert not changed, f"constraints-gpu-{build.tag}.txt differs from constraints.txt (cpu, gpu): {changed}"
    added = sorted(set(gpu) - set(cpu))
    assert added and all(GPU_ONLY.match(name) for name in added), added
    # a CUDA library of the other major version would hold back pip's resolution of torch's exact pins
    if build.major == 12:
        assert not [n for n in added if n.endswith("-cu13") or n.startswith("cuda-")], added


def test_faiss_variant_requirements_name_only_their_build():
    def names(path):
        return [_norm(line.strip()) for line in path.read_text(encoding="utf-8").splitlines()
                if line.strip() and not line.lstrip().startswith("#")]

    assert names(ENVS / "requirements-cpu.txt") == ["faiss-cpu"]
    assert names(ENVS / "requirements-gpu.txt") == ["faiss-gpu-cu12"]
    assert not [n for n in names(ENVS / "requirements.txt") if n.startswith("faiss")]


def _conda_pip(path: Path) -> list[str]:
    env = yaml.safe_load(path.read_text(encoding="utf-8"))
    pip = [dep["pip"] for dep in env["dependencies"] if isinstance(dep, dict) and "pip" in dep]
    assert len(pip) == 1, f"{path.name}: expected one pip section"
    return pip[0]


@pytest.mark.parametrize("build", BUILDS.values(), ids=lambda b: b.tag)
def test_conda_gpu_env_is_the_cpu_one_with_the_gpu_builds(build):
    name = f"laser-gpu-{build.tag}.yaml"
    cpu_env = yaml.safe_load((ENVS / "laser.yaml").read_text(encoding="utf-8"))
    gpu_env = yaml.safe_load((ENVS / name).read_text(encoding="utf-8"))
    cpu_pip, gpu_pip = _conda_pip(ENVS / "laser.yaml"), _conda_pip(ENVS / name)
    cpu_index = [line for line in cpu_pip if line.startswith("--extra-index-url") and "/whl/cpu" in line]
    assert cpu_index, "laser.yaml installs torch from the PyTorch CPU index"
    gpu_index = [] if build.major == 13 else [f"--extra-index-url https://download.pytorch.org/whl/{build.tag}"]
    assert [line for line in gpu_pip if line.startswith("--")] == gpu_index, gpu_pip
    pins = _pins(ENVS / f"constraints-gpu-{build.tag}.txt")
    swap = {"faiss-cpu": f"faiss-gpu-cu12=={pins['faiss-gpu-cu12']}", "torch": f"torch=={pins['torch']}"}
    expected = gpu_index + [swap.get(_norm(line.partition("==")[0]), line) for line in cpu_pip if line not in cpu_index]
    assert gpu_pip == expected
    assert [d for d in gpu_env["dependencies"] if not isinstance(d, dict)] == \
           [d for d in cpu_env["dependencies"] if not isinstance(d, dict)]
    assert gpu_env["channels"] == cpu_env["channels"]
    # every pip pin of the conda files is the constraints' pin
    for path, constraints in (("laser.yaml", "constraints.txt"), (name, f"constraints-gpu-{build.tag}.txt")):
        pinned = _pins(ENVS / constraints)
        for line in _conda_pip(ENVS / path):
            if "==" in line:
                pkg, _, version = line.partition("==")
                assert pinned.get(_norm(pkg)) == version, f"{path}: {line} but {constraints} pins {pinned.get(_norm(pkg))}"


def _setup(tmp_path, *args):
    """scripts/setup.sh run on a copy of the scripts and the env files (no .venv: it refuses another build)."""
    root = Path(__file__).resolve().parents[1]
    shutil.copytree(root / "scripts", tmp_path / "scripts")
    shutil.copytree(ENVS, tmp_path / "workflow" / "envs")
    shutil.copytree(root / "src", tmp_path / "src")
    return subprocess.run(["bash", str(tmp_path / "scripts" / "setup.sh"), *args], capture_output=True, text=True,
                          cwd=tmp_path, timeout=60)


@pytest.mark.parametrize("build", BUILDS.values(), ids=lambda b: b.tag)
def test_setup_gpu_installs_the_chosen_cuda_build(tmp_path, build):
    done = _setup(tmp_path, "--gpu", "--cuda", build.cuda, "--dry-run")
    assert done.returncode == 0, done.stderr
    pips = [line for line in done.stdout.splitlines() if " pip install " in line]
    assert len(pips) == 5 and all(f"-c workflow/envs/constraints-gpu-{build.tag}.txt" in line for line in pips), pips
    index = f"--extra-index-url https://download.pytorch.org/whl/{build.tag}"
    assert all((index in line) == (build.major == 12) for line in pips), pips
    # fairseq is built without a login node's CUDA toolkit: its setup.py compiles CUDA extensions with CUDA_HOME
    fairseq = [line for line in pips if "requirements-fairseq.txt" in line]
    assert fairseq and fairseq[0].startswith("env -u CUDA_HOME -u CUDA_PATH "), fairseq
    assert any("requirements-gpu.txt" in line for line in pips)
    # laser-encoders without its dependencies (it pins sacremoses 0.1.0 and asks for a `fairseq` distribution)
    assert any("--no-deps -r workflow/envs/requirements-nodeps.txt" in line for line in pips), pips


@pytest.mark.parametrize("args, message", [
    (["--gpu"], "--gpu needs --cuda 12.6|12.8|13.0|auto"),
    (["--gpu", "--cuda", "11.8"], "--cuda 11.8: expected 12.6, 12.8, 13.0 or auto"),
    (["--cuda", "12.6"], "--cuda 12.6 needs --gpu"),
])
def test_setup_refuses_a_gpu_environment_without_a_known_cuda(tmp_path, args, message):
    done = _setup(tmp_path, *args, "--dry-run")
    assert done.returncode == 2 and message in done.stderr, done.stderr


def test_gpu_rules_conda_env_is_the_configured_cuda_build():
    from laser_repro.core.cuda_builds import conda_env_file

    assert conda_env_file(None, 0, "models.base.train.gpus", conda=True) == "laser.yaml"
    assert conda_env_file(12.6, 8, "models.base.train.gpus", conda=True) == "laser-gpu-cu126.yaml"  # --config cuda=12.6
    assert conda_env_file("13.0", 1, "evaluation.knn_device", conda=True) == "laser-gpu-cu130.yaml"
    assert conda_env_file(13, 1, "evaluation.knn_device", conda=True) == "laser-gpu-cu130.yaml"
    assert conda_env_file(None, 8, "models.base.train.gpus", conda=False) == "laser.yaml"  # .venv decides
    with pytest.raises(ValueError, match=r"models.base.train.gpus: 8 GPU\(s\) under --sdm conda need torch's CUDA build"):
        conda_env_file(None, 8, "models.base.train.gpus", conda=True)
    with pytest.raises(ValueError, match="cuda: 11.8 is not a CUDA build"):
        conda_env_file(11.8, 8, "models.base.train.gpus", conda=True)
    for build in BUILDS.values():
        assert (ENVS / conda_env_file(build.cuda, 1, "x", conda=True)).exists()


def test_sdm_conda_with_gpus_and_no_cuda_build_is_refused(tmp_path):
    """The training rules named the CPU environment under --sdm conda: a GPU job trained on CPU."""
    from conftest import REPO, run_snakemake

    config = yaml.safe_load((REPO / "config" / "small.yaml").read_text(encoding="utf-8"))
    config["models"]["base"]["train"]["gpus"] = 2
    (tmp_path / "gpu.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    proc = run_snakemake("--configfile", str(tmp_path / "gpu.yaml"), "--directory", str(tmp_path), "--sdm", "conda",
                         "-n", timeout=300)
    assert proc.returncode != 0
    assert "models.base.train.gpus: 2 GPU(s) under --sdm conda need torch's CUDA build" in proc.stderr + proc.stdout
