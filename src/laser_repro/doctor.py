"""``laser-repro doctor``: what a user checks on a login node and on a GPU node before a run.

It prints the software (Python, torch and its CUDA / cuDNN / NCCL, faiss and its GPUs, fairseq and
its compiled extensions, Snakemake), the GPUs this process sees (name, memory, compute capability,
bf16), and compares them with what a SLURM profile and a config ask for: training rules given GPUs
(profile ``set-resources``/``default-resources`` keys gpu, gpus, gres or slurm_extra, or a config's
``models.<m>.train.gpus`` / ``.pretrain.gpus``) need torch's CUDA build; ``evaluation.knn_device: gpu`` needs faiss with GPU support;
``train.precision: bf16`` needs GPUs of compute capability 8.0 or newer. A CUDA build of torch must
match the node: the NVIDIA driver must support its CUDA major version (13.0 needs driver >= 580) and every
GPU's compute capability must have kernels in ``torch.cuda.get_arch_list()`` (CUDA 12.8 and 13.0 builds
have none for V100s); a mismatch is an error naming the ``setup.sh --gpu --cuda`` that fits
(:mod:`laser_repro.core.cuda_builds`). Every probe is a function
of this module (the tests replace them). Exit status 1 on an ERROR, and with ``--strict`` on a WARNING.
"""
from __future__ import annotations

import importlib
import json
import os
import platform
import re
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from laser_repro.core import cuda_builds

# fairseq's Cython extensions that training needs (batching by size, token blocks)
FAIRSEQ_EXTENSIONS = ("fairseq.data.data_utils_fast", "fairseq.data.token_block_utils_fast")
FAISS_DISTRIBUTIONS = ("faiss-gpu-cu12", "faiss-gpu", "faiss-cpu")
# the first compute capability with bf16 arithmetic (Ampere)
BF16_CAPABILITY = (8, 0)
GPU_SETUP = "bash scripts/setup.sh --gpu --cuda 12.6|12.8|13.0|auto (after rm -r .venv)"


@dataclass(frozen=True)
class Finding:
    level: str  # ERROR, WARNING or OK
    message: str


@dataclass
class Wants:
    """What a profile and a config ask of the environment."""

    gpu_rules: dict[str, str] = field(default_factory=dict)  # training rule -> where its GPUs are asked for
    knn_device: str | None = None
    bf16_models: list[str] = field(default_factory=list)


def _error(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}"


def _dist_version(*names: str) -> tuple[str, str] | None:
    for name in names:
        try:
            return name, metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


# --------------------------------------------------------------------------- probes


def probe_torch() -> dict:
    try:
        import torch
    except Exception as err:  # a broken CUDA install raises more than ImportError
        return {"error": _error(err)}
    info = {"version": torch.__version__, "cuda": torch.version.cuda, "cudnn": None, "nccl": None, "gpus": [],
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")}
    if not torch.version.cuda:
        return info
    info["arch_list"] = _torch_arch_list(torch)
    if torch.backends.cudnn.is_available():
        info["cudnn"] = torch.backends.cudnn.version()
    try:
        version = torch.cuda.nccl.version()
        info["nccl"] = ".".join(map(str, version)) if isinstance(version, tuple) else str(version)
    except Exception as err:
        info["nccl"] = f"unavailable ({_error(err)})"
    for i in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(i)
        info["gpus"].append({"index": i, "name": props.name, "memory_gib": round(props.total_memory / 2**30, 1),
                             "capability": [props.major, props.minor]})
    return info


def _torch_arch_list(torch) -> list[str]:
    """The architectures a CUDA build of torch has kernels (sm_XY) or PTX (compute_XY) for; read from the
    build's flags when CUDA cannot start (get_arch_list() is empty then: an old driver, no GPU)."""
    try:
        arches = torch.cuda.get_arch_list()
    except Exception:
        arches = []
    if not arches:
        flags = getattr(torch._C, "_cuda_getArchFlags", lambda: "")() or ""
        arches = flags.split()
    return list(arches)


def probe_driver() -> dict:
    """What the NVIDIA driver offers, whatever torch can use: the CUDA version it supports (libcuda) and
    the GPUs nvidia-smi lists (with their compute capability: torch sees none under a too-old driver)."""
    cuda = cuda_builds.driver_cuda_version()
    gpus = cuda_builds.nvidia_smi_gpus()
    return {"cuda": list(cuda) if cuda else None, "gpus": gpus,
            "version": gpus[0]["driver_version"] if gpus else None}


def probe_faiss() -> dict:
    try:
        import faiss

        from laser_repro.evaluation.mining import faiss_gpus
    except Exception as err:
        return {"error": _error(err)}
    dist = _dist_version(*FAISS_DISTRIBUTIONS)
    return {"version": faiss.__version__, "distribution": dist[0] if dist else None,
            "gpu_support": hasattr(faiss, "StandardGpuResources"), "gpus": faiss_gpus()}


def probe_fairseq() -> dict:
    dist = _dist_version("fairseq-fixed", "fairseq")
    try:
        import fairseq
    except Exception as err:
        return {"error": _error(err), "distribution": dist}
    missing = []
    for name in FAIRSEQ_EXTENSIONS:
        try:
            importlib.import_module(name)
        except Exception as err:
            missing.append(f"{name} ({_error(err)})")
    return {"version": getattr(fairseq, "__version__", None), "distribution": dist[0] if dist else None,
            "missing_extensions": missing}


def probe_versions() -> dict:
    versions = {"python": platform.python_version()}
    for name in ("snakemake", "numpy"):
        found = _dist_version(name)
        versions[name] = found[1] if found else None
    return versions


def probe_nvidia_device() -> bool:
    """An NVIDIA driver's device node on this machine (a GPU node, whatever torch sees)."""
    return Path("/dev/nvidiactl").exists()


# --------------------------------------------------------------------------- what a run asks for


def _asks_for_gpus(resources: dict) -> str | None:
    for key in ("gpu", "gpus"):
        value = resources.get(key)
        if value not in (None, 0, "0", "", False):
            return f"{key}: {value}"
    gres = str(resources.get("gres") or "")
    if "gpu" in gres:
        return f"gres: {gres}"
    extra = str(resources.get("slurm_extra") or "")
    if re.search(r"--(gpus|gres=gpu|gpus-per-\w+)", extra):
        return f"slurm_extra: {extra}"
    return None


def profile_gpu_rules(profile: str | os.PathLike) -> dict[str, str]:
    """Rule -> the resource that gives it GPUs, in a Snakemake profile (its directory or config.yaml);
    ``*``: every rule (default-resources)."""
    from laser_repro.core.slurm import read_profile

    path, settings = read_profile(profile)
    found = {}
    default = _asks_for_gpus(settings.get("default-resources") or {})
    if default:
        found["*"] = f"{path} default-resources {default}"
    for rule, resources in (settings.get("set-resources") or {}).items():
        asked = _asks_for_gpus(resources or {})
        if asked:
            found[rule] = f"{path} set-resources {rule} {asked}"
    return found


def config_wants(config: dict) -> tuple[set[str], Wants]:
    """The families a (validated) config trains, and what its settings ask of the environment."""
    from laser_repro.config.plan import Plan

    plan = Plan(config)
    families = {"laser"} if plan.laser else set()
    wants = Wants(knn_device=config.get("evaluation", {}).get("knn_device"))
    trains = {f"models.{plan.laser_name}.train": plan.laser_setup.entry["train"]} if plan.laser else {}
    for name, model in plan.models.items():
        families.add(model["family"])
        trains[f"models.{name}.train"] = model.get("train", {})
        if model.get("pretrain", {}).get("enabled"):
            trains[f"models.{name}.pretrain"] = model["pretrain"]
    for key, train in trains.items():
        if (train.get("gpus") or 0) > 0:
            wants.gpu_rules[f"{key}.gpus"] = f"config {key}.gpus: {train['gpus']}"
        if train.get("precision") == "bf16" and key.split(".")[1] not in wants.bf16_models:
            wants.bf16_models.append(key.split(".")[1])
    return families, wants


def wants_of(profile: str | os.PathLike | None, configfile: str | os.PathLike | None) -> Wants:
    """What `profile` and `configfile` ask for; of the profile's GPU rules of a family (``<family>_...``),
    only those of the families the config trains (all of them without a config)."""
    from laser_repro.models.registry import FAMILIES

    wants, families = Wants(), None
    if configfile is not None:
        from laser_repro.config import load

        families, wants = config_wants(load(configfile))
    if profile is not None:
        for rule, where in profile_gpu_rules(profile).items():
            family = rule.split("_")[0]
            if families is None or family not in FAMILIES or family in families:
                wants.gpu_rules[rule] = where
    return wants


# --------------------------------------------------------------------------- diagnosis


def diagnose(env: dict, wants: Wants) -> list[Finding]:
    torch, faiss, fairseq = env["torch"], env["faiss"], env["fairseq"]
    out = []
    for name, info in (("torch", torch), ("faiss", faiss), ("fairseq", fairseq)):
        if "error" in info:
            out.append(Finding("ERROR", f"{name} does not import: {info['error']} (bash scripts/setup.sh)"))
    if fairseq.get("missing_extensions"):
        out.append(Finding("ERROR", "fairseq's compiled extensions do not import: "
                                    + "; ".join(fairseq["missing_extensions"])
                                    + " (it must be built --no-build-isolation against this torch: bash scripts/setup.sh)"))
    gpus = torch.get("gpus") or []
    cuda_build = bool(torch.get("cuda"))
    mismatch = cuda_mismatch(torch, env.get("driver") or {}) if cuda_build and "error" not in torch else []
    if "error" not in torch:
        if wants.gpu_rules and not cuda_build:
            out.append(Finding("ERROR", f"GPUs are asked for ({'; '.join(wants.gpu_rules.values())}) but torch "
                                        f"{torch['version']} is a CPU build: training would run on CPU. "
                                        f"Install the GPU environment: {GPU_SETUP}"))
        elif not cuda_build and env.get("nvidia_device"):
            out.append(Finding("WARNING", f"this machine has an NVIDIA GPU but torch {torch['version']} is a CPU "
                                          f"build: {GPU_SETUP}"))
        elif wants.gpu_rules and not gpus:
            out.append(Finding("WARNING", "torch is a CUDA build but sees no GPU: expected on a login node; on a "
                                          "GPU node check the job's GPUs (--gpus, CUDA_VISIBLE_DEVICES="
                                          f"{torch.get('cuda_visible_devices')!r}) and the driver (nvidia-smi)"))
        elif cuda_build and gpus and not mismatch:
            out.append(Finding("OK", f"torch sees {len(gpus)} GPU(s), built for CUDA {torch['cuda']} with "
                                     f"kernels for all of them"))
        out += [Finding("ERROR", message) for message in mismatch]
    if "error" not in faiss:
        knn = wants.knn_device
        if knn == "gpu" and not faiss["gpu_support"]:
            out.append(Finding("ERROR", f"evaluation.knn_device is gpu but faiss {faiss['version']} "
                                        f"({faiss['distribution']}) has no GPU support: {GPU_SETUP}"))
        elif knn == "gpu" and not faiss["gpus"]:
            out.append(Finding("WARNING", "evaluation.knn_device is gpu but faiss sees no GPU: expected on a login "
                                          "node; bucc-mine fails on a node without one"))
        elif knn == "auto" and not faiss["gpu_support"] and (gpus or wants.gpu_rules):
            out.append(Finding("WARNING", f"faiss {faiss['version']} ({faiss['distribution']}) has no GPU support: "
                                          f"BUCC mining (evaluation.knn_device auto) runs on CPU; {GPU_SETUP}"))
    if wants.bf16_models and gpus:
        old = [g["name"] for g in gpus if tuple(g["capability"]) < BF16_CAPABILITY]
        if old:
            out.append(Finding("WARNING", f"train.precision bf16 ({', '.join(wants.bf16_models)}) but {', '.join(old)} "
                                          f"lack bf16 (compute capability < {BF16_CAPABILITY[0]}.{BF16_CAPABILITY[1]})"))
    return out


def cuda_mismatch(torch: dict, driver: dict) -> list[str]:
    """Why this CUDA build of torch cannot run on this node's driver and GPUs ([] where it can), each
    message naming the ``--cuda`` build to install instead."""
    driver_cuda = tuple(driver["cuda"]) if driver.get("cuda") else None
    # torch's GPUs, or nvidia-smi's where torch sees none (it sees none under a too-old driver)
    gpus = [(g["name"], tuple(g["capability"])) for g in (torch.get("gpus") or driver.get("gpus") or [])]
    problems = []
    build_cuda = cuda_builds.version_tuple(torch["cuda"])
    if driver_cuda is not None and driver_cuda[0] < build_cuda[0]:
        problems.append(f"torch {torch['version']} is built for CUDA {torch['cuda']} but this node's NVIDIA driver "
                        f"{driver.get('version') or ''} supports CUDA {driver_cuda[0]}.{driver_cuda[1]} at most "
                        f"(CUDA 13 needs driver >= {cuda_builds.BUILDS['13.0'].min_driver}): torch cannot use the GPUs")
    arch_list = torch.get("arch_list") or []
    if arch_list:
        for name, cap in gpus:
            if not cuda_builds.capability_supported(cap, arch_list):
                problems.append(f"{name} (compute capability {cap[0]}.{cap[1]}) has no kernels in torch "
                                f"{torch['version']} (built for {' '.join(arch_list)}): 'no kernel image is "
                                "available for execution on the device'")
    if problems:
        build, why = cuda_builds.choose(driver_cuda, [cap for _, cap in gpus])
        fix = (f"install the CUDA {build.cuda} build: rm -r .venv && bash scripts/setup.sh --gpu --cuda {build.cuda}"
               if build else why)
        problems = [f"{problem}; {fix} ({why})" if build else f"{problem}; {fix}" for problem in problems]
    return problems


def probe() -> dict:
    return {"versions": probe_versions(), "torch": probe_torch(), "faiss": probe_faiss(),
            "fairseq": probe_fairseq(), "nvidia_device": probe_nvidia_device(), "driver": probe_driver()}


def render(env: dict, findings: list[Finding]) -> str:
    torch, faiss, fairseq, versions = env["torch"], env["faiss"], env["fairseq"], env["versions"]
    lines = [f"python      {versions['python']}"]
    if "error" in torch:
        lines.append(f"torch       not importable: {torch['error']}")
    else:
        build = f"CUDA {torch['cuda']}" if torch["cuda"] else "CPU build"
        lines.append(f"torch       {torch['version']} ({build}), cuDNN {torch['cudnn']}, NCCL {torch['nccl']}")
        if torch.get("arch_list"):
            lines.append(f"  kernels   {' '.join(torch['arch_list'])}")
        driver = env.get("driver") or {}
        if driver.get("cuda"):
            lines.append(f"driver      NVIDIA {driver.get('version') or '?'}, CUDA {driver['cuda'][0]}.{driver['cuda'][1]}")
        lines.append(f"GPUs        {len(torch['gpus'])} visible (CUDA_VISIBLE_DEVICES={torch['cuda_visible_devices']!r})")
        for g in torch["gpus"]:
            bf16 = "yes" if tuple(g["capability"]) >= BF16_CAPABILITY else "no"
            lines.append(f"  cuda:{g['index']}    {g['name']}, {g['memory_gib']} GiB, compute capability "
                         f"{g['capability'][0]}.{g['capability'][1]}, bf16 {bf16}")
    if "error" in faiss:
        lines.append(f"faiss       not importable: {faiss['error']}")
    else:
        lines.append(f"faiss       {faiss['version']} ({faiss['distribution']}), GPU support "
                     f"{'yes' if faiss['gpu_support'] else 'no'}, {faiss['gpus']} GPU(s)")
    if "error" in fairseq:
        lines.append(f"fairseq     not importable: {fairseq['error']}")
    else:
        ext = "compiled extensions import" if not fairseq["missing_extensions"] else "compiled extensions MISSING"
        lines.append(f"fairseq     {fairseq['version']} ({fairseq['distribution']}), {ext}")
    lines.append(f"snakemake   {versions['snakemake']}")
    lines += [f"{f.level}: {f.message}" for f in findings]
    errors = sum(f.level == "ERROR" for f in findings)
    warnings = sum(f.level == "WARNING" for f in findings)
    lines.append(f"doctor: {errors} error(s), {warnings} warning(s)")
    return "\n".join(lines)


def exit_status(findings: list[Finding], strict: bool) -> int:
    levels = {"ERROR", "WARNING"} if strict else {"ERROR"}
    return 1 if any(f.level in levels for f in findings) else 0


def cmd_doctor(a) -> None:
    wants = wants_of(a.profile, a.configfile)
    env = probe()
    findings = diagnose(env, wants)
    print(render(env, findings), flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps({"environment": env, "findings": [f.__dict__ for f in findings]},
                                           indent=2) + "\n", encoding="utf-8")
    status = exit_status(findings, a.strict)
    if status:
        raise SystemExit(status)


def add_cli(sub) -> None:
    s = sub.add_parser("doctor", help="the software and GPUs here, against what a profile and a config ask for")
    s.add_argument("--profile", help="Snakemake profile directory (or its config.yaml), e.g. profiles/slurm")
    s.add_argument("--configfile", help="the run's config, e.g. config/paper.yaml")
    s.add_argument("--strict", action="store_true", help="exit 1 on warnings too (default: on errors only)")
    s.add_argument("--json", help="also write the probes and findings to this JSON file")
    s.set_defaults(func=cmd_doctor)
