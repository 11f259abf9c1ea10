"""Fixtures and helpers shared by the test modules."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
TOY_CONFIG = REPO / "tests" / "toy" / "config.yaml"


def laser_model(cfg: dict) -> dict:
    """The LASER model's entry of `models` (family laser) of a config as written or validated."""
    return next(m for m in cfg["models"].values() if m["family"] == "laser")


def laser_data(cfg: dict) -> dict:
    """The bitext_data entry the config's LASER model trains on (targets, filters, preprocess, bpe)."""
    return cfg["bitext_data"][laser_model(cfg)["data"]]
sys.path.insert(0, str(REPO / "tests" / "toy"))
import make_toy_data  # noqa: E402

VENV_BIN = str(Path(sys.executable).parent)
# Cores of a test's Snakemake run: the machine's, shared among the pytest-xdist workers (two toy runs side by
# side, each with 2 jobs of 2 threads on 2 cores, are both slower than one after the other)
CORES = str(max(1, (os.cpu_count() or 1) // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))))


# The README's test command runs the tests on two workers (pytest-xdist, `-n 2`). Each test module
# goes to one worker whole, so that its module fixtures (a toy Snakemake run each) are built once, and the
# tests that read the session's toy run (toy_local_run, ~10 min) go to the same worker, so that it is
# built once too; the other tests of their modules go elsewhere. The two toy runs start first, one on each
# worker: they are most of the suite's time. (xdist's own `--dist loadgroup` marks do not reach its
# scheduler under pytest 9.)
def _toy_run_tests(path: Path) -> set[str]:
    """The tests of a module that take the session's toy run, directly or through the module's fixtures."""
    functions = {n.name: n for n in ast.parse(path.read_text(encoding="utf-8")).body
                 if isinstance(n, ast.FunctionDef)}
    needs, grown = {"toy_local_run"}, True
    while grown:
        grown = False
        for name, f in functions.items():
            if name not in needs and any(a.arg in needs for a in f.args.args):
                needs.add(name)
                grown = True
    return {n for n in needs if n.startswith("test_")}


TOY_RUN_TESTS = {p.name: _toy_run_tests(p) for p in Path(__file__).parent.glob("test_*.py")
                 if "toy_local_run" in p.read_text(encoding="utf-8")}
TOY_RUN_GROUP = "toy_local_run"
#: the scopes given out first, in this order: the session's toy run (with the SLURM run compared with it)
#: and the families' toy run (tests/test_families_workflow.py): 1,358 s and 658 s of the CI at 959fd73
FIRST_SCOPES = (TOY_RUN_GROUP, "tests/test_families_workflow.py")


@pytest.hookimpl(optionalhook=True)  # (an xdist hook: without xdist, -p no:xdist, it is not called)
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module, _, test = nodeid.partition("::")
            if test.split("[", 1)[0] in TOY_RUN_TESTS.get(Path(module).name, ()):
                return TOY_RUN_GROUP
            # slurm_cluster (a module fixture) is started once: test_slurm.py stays on the toy run's worker
            return TOY_RUN_GROUP if Path(module).name == "test_slurm.py" else module

        def _assign_work_unit(self, node) -> None:
            first = next((s for s in FIRST_SCOPES if s in self.workqueue), None)
            if first is not None:
                self.workqueue.move_to_end(first, last=False)
            super()._assign_work_unit(node)

    return ModuleScheduling(config, log)


# Two test workers share two cores, each running Snakemake jobs of several threads: OpenMP's threads sleep
# when they wait (its default spins, and a spinning thread takes the core from the other worker's jobs).
# The numbers are the same; only the waiting differs.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


@pytest.fixture
def torch_single_thread():
    """Tiny models gain nothing from intra-op threads, and one thread keeps the tests fast on a
    busy machine (OpenMP barriers stall when cores are shared)."""
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def run_snakemake(*args, cwd=REPO, timeout=1500, env=None, snakemake=SNAKEMAKE):
    """``snakemake -s workflow/Snakefile ARGS`` in a subprocess; returns the CompletedProcess.
    `snakemake`: the command that starts Snakemake (test_slurm.py's polls the cluster more often)."""
    env = dict(os.environ if env is None else env, PYTHONUNBUFFERED="1")
    proc = subprocess.run([*snakemake, "-s", str(REPO / "workflow" / "Snakefile"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)
    return proc


@dataclass
class ToyRun:
    """The toy configuration run end to end on this machine (profiles/local)."""

    data_root: Path
    workdir: Path
    args: list
    proc: subprocess.CompletedProcess


@pytest.fixture(scope="session")
def toy_local_run(tmp_path_factory) -> ToyRun:
    """The toy config through Snakemake with the local profile, once per session: checked by
    test_workflow.py and the reference the SLURM run (test_slurm.py) is compared with."""
    # 2 cores, as the SLURM run's training allocation: its results must be the same bytes (thread count)
    return run_toy(tmp_path_factory, "toy_local", TOY_CONFIG, cores="2")


def run_toy(tmp_path_factory, name: str, config: Path, *targets: str, cores: str = CORES) -> ToyRun:
    """A toy config through Snakemake with the local profile, on fresh toy data (tests/toy)."""
    root = tmp_path_factory.mktemp(name)
    data_root = make_toy_data.make(root / "data")
    workdir = root / "work"
    workdir.mkdir()
    args = ["--profile", str(REPO / "profiles" / "local"), "--configfile", str(config),
            "--config", f"data_root={data_root}", "--directory", str(workdir), "--cores", cores]
    return ToyRun(data_root, workdir, args, run_snakemake(*args, *targets))


# ---- DVC on a copy of the repository (tests/test_ablation_workflow.py, tests/test_families_workflow.py) ----
def dvc(*args, cwd, check=True) -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH=os.pathsep.join([VENV_BIN, os.environ.get("PATH", "")]), DVC_NO_ANALYTICS="1")
    proc = subprocess.run([f"{VENV_BIN}/dvc", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=1200, check=False)
    if check:
        assert proc.returncode == 0, f"dvc {' '.join(args)}:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return proc


def dvc_project(project: Path, config: str, snakemake_args: str) -> Path:
    """A git repository holding the files this repository tracks and the dvc.yaml of `config` (laser-repro
    dvc-yaml: the stages' outputs are the config's), committed."""
    import shutil

    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        if (REPO / name).is_file():
            (project / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, project / name)
    proc = subprocess.run([f"{VENV_BIN}/laser-repro", "dvc-yaml", "--configfile", config, "--snakemake-args",
                           snakemake_args], cwd=project, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    git("init", "-q", cwd=project)
    git("add", "-A", cwd=project)
    git("commit", "-qm", "pipeline", cwd=project)
    return project


def git(*args, cwd):
    subprocess.run(["git", "-c", "user.name=test", "-c", "user.email=test@example.org", *args], cwd=cwd,
                   check=True, capture_output=True)
