"""The CPU and GPU environments (workflow/envs) differ only in the builds of torch and faiss:
constraints-gpu.txt is constraints.txt with faiss-gpu-cu12 for faiss-cpu plus the CUDA libraries,
laser-gpu.yaml is laser.yaml without the CPU wheel index and with faiss-gpu-cu12."""
from __future__ import annotations

import re
from pathlib import Path

import yaml

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


def test_gpu_constraints_are_the_cpu_ones_with_the_gpu_builds():
    cpu, gpu = _pins(ENVS / "constraints.txt"), _pins(ENVS / "constraints-gpu.txt")
    assert "faiss-cpu" in cpu and "faiss-cpu" not in gpu and "faiss-gpu-cu12" in gpu
    assert gpu["torch"] == cpu["torch"]  # the same release, its CUDA build
    changed = {name: (version, gpu.get(name)) for name, version in cpu.items()
               if name != "faiss-cpu" and gpu.get(name) != version}
    assert not changed, f"constraints-gpu.txt differs from constraints.txt (cpu, gpu): {changed}"
    added = sorted(set(gpu) - set(cpu))
    assert added and all(GPU_ONLY.match(name) for name in added), added


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


def test_conda_gpu_env_is_the_cpu_one_with_the_gpu_builds():
    cpu_env = yaml.safe_load((ENVS / "laser.yaml").read_text(encoding="utf-8"))
    gpu_env = yaml.safe_load((ENVS / "laser-gpu.yaml").read_text(encoding="utf-8"))
    cpu_pip, gpu_pip = _conda_pip(ENVS / "laser.yaml"), _conda_pip(ENVS / "laser-gpu.yaml")
    cpu_index = [line for line in cpu_pip if line.startswith("--extra-index-url") and "/whl/cpu" in line]
    assert cpu_index, "laser.yaml installs torch from the PyTorch CPU index"
    assert not [line for line in gpu_pip if line.startswith("--")], gpu_pip
    pins = _pins(ENVS / "constraints-gpu.txt")
    expected = [f"faiss-gpu-cu12=={pins['faiss-gpu-cu12']}" if _norm(line.partition("==")[0]) == "faiss-cpu" else line
                for line in cpu_pip if line not in cpu_index]
    assert gpu_pip == expected
    assert [d for d in gpu_env["dependencies"] if not isinstance(d, dict)] == \
           [d for d in cpu_env["dependencies"] if not isinstance(d, dict)]
    assert gpu_env["channels"] == cpu_env["channels"]
    # every pip pin of the conda files is the constraints' pin
    for path, constraints in (("laser.yaml", "constraints.txt"), ("laser-gpu.yaml", "constraints-gpu.txt")):
        pinned = _pins(ENVS / constraints)
        for line in _conda_pip(ENVS / path):
            if "==" in line:
                name, _, version = line.partition("==")
                assert pinned.get(_norm(name)) == version, f"{path}: {line} but {constraints} pins {pinned.get(_norm(name))}"
