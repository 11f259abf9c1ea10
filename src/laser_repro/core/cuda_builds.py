"""The CUDA builds of torch that the GPU environment offers (``scripts/setup.sh --gpu --cuda X``) and which
one a machine can run: the NVIDIA driver must support the build's CUDA major version, and every GPU's
compute capability needs kernels (or PTX) in the build.

The architecture lists are PyTorch's published support matrix for its Linux x86 wheels (RELEASE.md,
"PyTorch CUDA support matrix", release 2.11: Volta left the 12.8 build, only 12.6 keeps it), used only to
*choose* a build before one is installed; ``laser-repro doctor`` checks an installed torch against its own
``torch.cuda.get_arch_list()``. Standard library only: ``setup.sh --cuda auto`` runs it before the
environment exists (``python3 -m laser_repro.core.cuda_builds``, with ``PYTHONPATH=src``).
"""
from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class CudaBuild:
    cuda: str                       # "12.6": the --cuda value
    tag: str                        # "cu126": PyTorch's wheel index and local version label
    min_driver: str                 # the oldest NVIDIA driver that runs it (minor-version compatibility)
    arches: tuple[str, ...]         # compute capabilities with kernels (SASS)
    ptx: str | None = None          # the newest capability also shipped as PTX (JIT-compiled for newer GPUs)

    @property
    def major(self) -> int:
        return int(self.cuda.split(".")[0])

    def arch_list(self) -> list[str]:
        """In torch.cuda.get_arch_list()'s form."""
        out = [f"sm_{a.replace('.', '')}" for a in self.arches]
        return out + ([f"compute_{self.ptx.replace('.', '')}"] if self.ptx else [])


# newest first: `choose` prefers the newest build a machine runs
BUILDS: dict[str, CudaBuild] = {b.cuda: b for b in (
    CudaBuild("13.0", "cu130", "580.65.06", ("7.5", "8.0", "8.6", "9.0", "10.0", "12.0"), ptx="12.0"),
    CudaBuild("12.8", "cu128", "525.60.13", ("7.5", "8.0", "8.6", "9.0", "10.0", "12.0")),
    CudaBuild("12.6", "cu126", "525.60.13", ("5.0", "6.0", "7.0", "7.5", "8.0", "8.6", "9.0")),
)}
CHOICES = tuple(BUILDS)


def version_tuple(text: str) -> tuple[int, ...]:
    """ "12.4" -> (12, 4); "sm_90" / "compute_120" -> (9, 0) / (12, 0); "8.6" -> (8, 6)."""
    m = re.fullmatch(r"(?:sm_|compute_)(\d+?)(\d)", text.strip())
    if m:
        return int(m.group(1)), int(m.group(2))
    m = re.fullmatch(r"(\d+)\.(\d+)(?:\.\d+)?", text.strip())
    if not m:
        raise ValueError(f"not a version or architecture: {text!r}")
    return int(m.group(1)), int(m.group(2))


def capability_supported(capability: tuple[int, int], arch_list: list[str]) -> bool:
    """Whether a GPU of `capability` runs a build with `arch_list` (torch.cuda.get_arch_list()'s form):
    kernels of the same major version and a lower or equal minor run (CUDA's binary compatibility);
    PTX of a lower or equal capability is JIT-compiled."""
    cap = tuple(capability)
    for arch in arch_list:
        kind = "ptx" if arch.startswith("compute_") else "sass"
        have = version_tuple(arch)
        if kind == "sass" and have[0] == cap[0] and have[1] <= cap[1]:
            return True
        if kind == "ptx" and have <= cap:
            return True
    return False


def driver_runs(build: CudaBuild, driver_cuda: tuple[int, int]) -> bool:
    """Whether a driver supporting CUDA `driver_cuda` (cuDriverGetVersion) runs `build`: the same or a newer
    major version (within a major version, older drivers run newer minor versions)."""
    return driver_cuda[0] >= build.major


def choose(driver_cuda: tuple[int, int] | None, capabilities: list[tuple[int, int]]) -> tuple[CudaBuild | None, str]:
    """The build for a machine, and why. Of the builds that the driver runs and that have kernels for every
    GPU, the newest whose CUDA the driver supports fully, else the oldest of them (the least reliance on
    minor-version compatibility)."""
    fits = [b for b in BUILDS.values()
            if (driver_cuda is None or driver_runs(b, driver_cuda))
            and all(capability_supported(c, b.arch_list()) for c in capabilities)]
    caps = ", ".join(sorted({f"{c[0]}.{c[1]}" for c in capabilities})) or "no GPU seen"
    driver = "unknown" if driver_cuda is None else f"{driver_cuda[0]}.{driver_cuda[1]}"
    if not fits:
        return None, (f"no CUDA build of the environment ({', '.join(CHOICES)}) runs here: driver CUDA {driver}, "
                      f"compute capabilities {caps}")
    full = [b for b in fits if driver_cuda is None or version_tuple(b.cuda) <= tuple(driver_cuda)]
    build = full[0] if full else fits[-1]
    return build, f"driver CUDA {driver}, compute capabilities {caps}"


def normalize_cuda(value) -> str | None:
    """The config's ``cuda`` (``--config cuda=12.6`` arrives as the float 12.6) as a key of BUILDS."""
    if value is None:
        return None
    text = f"{value:.1f}" if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)
    if text not in BUILDS:
        raise ValueError(f"cuda: {value!r} is not a CUDA build of the environment ({', '.join(CHOICES)})")
    return text


CPU_ENV = "laser.yaml"


def conda_env_file(cuda, gpus: int, where: str, conda: bool) -> str:
    """The file under workflow/envs/ of a rule's ``--sdm conda`` environment: the CPU one, or for a rule
    given GPUs the GPU build named by the config's ``cuda``. Under ``--sdm conda`` a GPU rule without
    ``cuda`` is an error: the CPU environment would train on the CPU of a GPU node."""
    cuda = normalize_cuda(cuda)
    if not gpus:
        return CPU_ENV
    if cuda is None:
        if conda:
            raise ValueError(f"{where}: {gpus} GPU(s) under --sdm conda need torch's CUDA build: set the config key "
                             f"cuda ({' | '.join(reversed(CHOICES))}; e.g. --config cuda=12.6 for V100s; "
                             "docs/cluster.md, 'The GPU environment')")
        return CPU_ENV
    return f"laser-gpu-{BUILDS[cuda].tag}.yaml"


def conda_env_path(envs_dir, conda: bool, cuda, gpus: int, where: str) -> str:
    """:func:`conda_env_file` under `envs_dir` (workflow/envs): what a rule's ``conda:`` names (the first three
    arguments are the run's, bound once by the workflow)."""
    return os.path.join(envs_dir, conda_env_file(cuda, gpus, where, conda))


# --------------------------------------------------------------------------- probes of the machine


def driver_cuda_version() -> tuple[int, int] | None:
    """The CUDA version the installed NVIDIA driver supports (libcuda's cuDriverGetVersion), or None."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    version = ctypes.c_int()
    if lib.cuDriverGetVersion(ctypes.byref(version)) != 0:
        return None
    return version.value // 1000, (version.value % 1000) // 10


def parse_nvidia_smi(text: str) -> list[dict]:
    """The GPUs of ``nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader``."""
    gpus = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = [f.strip() for f in line.rsplit(",", 2)]
        if len(fields) != 3:
            raise ValueError(f"nvidia-smi output line {number}: expected 'name, compute_cap, driver_version': {line!r}")
        name, cap, driver = fields
        gpus.append({"name": name, "capability": list(version_tuple(cap)), "driver_version": driver})
    return gpus


def nvidia_smi_gpus(timeout: float = 30) -> list[dict] | None:
    """The GPUs nvidia-smi lists (name, compute capability, driver version), None without nvidia-smi or
    when it fails (no driver)."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return None
    try:
        done = subprocess.run([exe, "--query-gpu=name,compute_cap,driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    try:
        return parse_nvidia_smi(done.stdout)
    except ValueError:
        return None


def main(argv: list[str]) -> int:
    """``--choose``: print the --cuda value for this machine (setup.sh --cuda auto); exit 1 with the reason
    on stderr where none fits or no GPU can be seen."""
    if argv != ["--choose"]:
        print("usage: python -m laser_repro.core.cuda_builds --choose", file=sys.stderr)
        return 2
    gpus, driver = nvidia_smi_gpus(), driver_cuda_version()
    if not gpus or driver is None:
        print("no NVIDIA GPU or driver seen here (nvidia-smi, libcuda.so.1): run this on a GPU node, or name the "
              f"build: --cuda {' | '.join(reversed(CHOICES))} (docs/cluster.md, 'The GPU environment')", file=sys.stderr)
        return 1
    build, why = choose(driver, [tuple(g["capability"]) for g in gpus])
    if build is None:
        print(why, file=sys.stderr)
        return 1
    print(build.cuda)
    print(f"cuda_builds: --cuda {build.cuda} ({why})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
