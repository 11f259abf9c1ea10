"""Writing provenance records (``laser-repro provenance`` and ``laser-repro --provenance-json``): the
digest of a file or directory and its stat entry (with the hash cache), the record's environment (git
state of the code, library versions, host) and the sidecars ``O.prov.json`` of a job's outputs.

``file_sha256`` and ``CODE_DIR`` are looked up in the package (:mod:`laser_repro.provenance`) when
called, so that setting them there (as tests do) takes effect here."""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import platform
import socket
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from laser_repro import provenance as _package
from laser_repro.provenance._common import (FORMAT, IGNORED_IN_DIRS, SUFFIX, ProvenanceError, _own_key, log,
                                            read_sidecar, rel_key, sidecar_path)

LIBRARIES = ("torch", ("fairseq-fixed", "fairseq"), "numpy", "sacremoses", "faiss-cpu", "faiss-gpu-cu12",
             "snakemake", "scikit-learn")


# --------------------------------------------------------------------------- hashing

def _dir_files(path: str) -> list[tuple[str, os.stat_result]]:
    """(relative path, stat) of the regular files under a directory, sorted; timestamps/sidecars excluded."""
    found = []
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames.sort()
        for name in filenames:
            if name in IGNORED_IN_DIRS or name.endswith(SUFFIX):
                continue
            full = os.path.join(dirpath, name)
            st = os.stat(full)
            found.append((os.path.relpath(full, path).replace(os.sep, "/"), st))
    found.sort(key=lambda item: item[0])
    return found


def stat_entry(path: Path | str) -> dict:
    """size and mtime_ns of a file; for a directory also type, files and the stat fingerprint."""
    path = os.fspath(path)
    st = os.stat(path)
    if not os.path.isdir(path):
        return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}
    files = _dir_files(path)
    fp = hashlib.sha256()
    for rel, fst in files:
        fp.update(f"{rel}\0{fst.st_size}\0{fst.st_mtime_ns}\n".encode())
    return {"type": "dir", "size": sum(f.st_size for _, f in files),
            "mtime_ns": max([st.st_mtime_ns] + [f.st_mtime_ns for _, f in files]),
            "files": len(files), "stat": fp.hexdigest()}


def path_sha256(path: Path | str) -> str:
    """sha256 of a file, or of a directory's manifest (see the module docstring)."""
    path = os.fspath(path)
    if not os.path.isdir(path):
        return _package.file_sha256(path)
    manifest = hashlib.sha256()
    for rel, _ in _dir_files(path):
        manifest.update(f"{rel}\0{_package.file_sha256(os.path.join(path, rel))}\n".encode())
    return manifest.hexdigest()


def _stat_matches(current: dict, recorded: dict | None) -> bool:
    if not recorded or not recorded.get("sha256"):
        return False
    keys = ("size", "stat") if current.get("type") == "dir" else ("size", "mtime_ns")
    return all(recorded.get(k) == current.get(k) for k in keys)


def digest(path: Path | str, cached: dict | None = None) -> dict:
    """Entry {sha256, size, mtime_ns, ...} of an existing path; `cached` (a recorded entry) supplies
    the sha256 without hashing when its size and mtime_ns (directory: stat fingerprint) still match."""
    entry = stat_entry(path)
    entry["sha256"] = cached["sha256"] if _stat_matches(entry, cached) else path_sha256(path)
    return entry


class _Hasher:
    """Current sha256 of paths, computed once per instance; optionally trusting sidecar stats."""

    def __init__(self, use_cache: bool = True):
        self.use_cache = use_cache
        self.memo: dict[str, str | None] = {}

    def __call__(self, path: str, cached: dict | None = None) -> str | None:
        if path not in self.memo:
            if not os.path.exists(path):
                self.memo[path] = None
            else:
                self.memo[path] = digest(path, cached if self.use_cache else None)["sha256"]
        return self.memo[path]

    def prefetch(self, paths, workers: int) -> None:
        """Hash many paths in threads (hashlib releases the GIL on large blocks)."""
        todo = sorted({p for p in paths if p not in self.memo})
        if workers <= 1 or len(todo) < 2:
            for p in todo:
                self(p)
            return
        with ThreadPoolExecutor(workers) as pool:
            for p, sha in zip(todo, pool.map(lambda q: None if not os.path.exists(q) else path_sha256(q), todo)):
                self.memo[p] = sha


# --------------------------------------------------------------------------- environment

def git_state(cwd: str | None = None) -> dict:
    """{commit, dirty} of the git repository holding `cwd` (default: the package's CODE_DIR); nulls outside git or
    without git. Untracked files do not make the tree dirty."""
    cwd = cwd or _package.CODE_DIR
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True,
                              timeout=30, check=False)
        if head.returncode != 0:
            return {"commit": None, "dirty": None}
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd,
                                capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
    return {"commit": head.stdout.strip(), "dirty": dirty}


def library_versions() -> dict:
    """Versions of python and the pipeline's libraries (importlib.metadata only; null when absent)."""
    from importlib import metadata

    versions = {"python": platform.python_version()}
    for names in LIBRARIES:
        names = (names,) if isinstance(names, str) else names
        version = None
        for name in names:
            try:
                version = metadata.version(name)
                break
            except metadata.PackageNotFoundError:
                continue
        versions[names[-1]] = version
    return versions


def host_info() -> dict:
    try:
        import getpass

        user = getpass.getuser()
    except (OSError, KeyError):  # no user name in the environment nor the password database
        user = None
    u = platform.uname()
    return {"hostname": socket.gethostname(), "platform": f"{u.system}-{u.release}-{u.machine}",
            "user": user, "pid": os.getpid(), "ppid": os.getppid(),
            "slurm_job_id": os.environ.get("SLURM_JOB_ID"), **machine_info()}


_MACHINE: dict | None = None


def machine_info() -> dict:
    """What on a machine can change a result's last bits (lineage diff names it): the CPU model and a digest
    of its instruction-set flags (which kernels oneDNN / BLAS pick), the CPUs this process may use, and the
    GPUs when the job's process already imported torch (never imported here: it costs seconds)."""
    global _MACHINE
    if _MACHINE is None:
        model, flags = None, None
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
                for line in f:
                    key, _, value = line.partition(":")
                    key = key.strip()
                    if key in ("model name", "Processor", "cpu model") and model is None:
                        model = value.strip()
                    elif key in ("flags", "Features") and flags is None:
                        flags = hashlib.sha256(" ".join(sorted(value.split())).encode()).hexdigest()[:16]
        except OSError:
            pass
        try:
            cpus = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cpus = os.cpu_count()
        _MACHINE = {"cpu_model": model or platform.processor() or None, "cpu_flags_sha256": flags,
                    "cpu_count": cpus}
    gpus = None
    torch = __import__("sys").modules.get("torch")
    if torch is not None:
        try:
            if torch.cuda.is_available():
                gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        except Exception:  # noqa: BLE001 - a broken CUDA setup must not fail a job's record
            gpus = None
    return {**_MACHINE, "gpus": gpus}


def parse_time(text: str | None) -> dt.datetime:
    """ISO 8601 (naive = local time) or seconds since the epoch; now when None."""
    if text is None:
        return dt.datetime.now().astimezone()
    try:
        return dt.datetime.fromtimestamp(float(text)).astimezone()
    except ValueError:
        pass
    try:
        return dt.datetime.fromisoformat(text).astimezone()
    except ValueError:
        raise ProvenanceError(f"--start {text!r}: not an ISO 8601 time nor seconds since the epoch") from None


def parse_wildcards(text: str | None) -> dict:
    """A JSON object, or ``k=v`` pairs separated by commas or blanks."""
    if not text:
        return {}
    text = text.strip()
    if text.startswith("{"):
        return json.loads(text)
    pairs = [p for p in text.replace(",", " ").split() if p]
    bad = [p for p in pairs if "=" not in p]
    if bad:
        raise ProvenanceError(f"--wildcards: expected JSON or k=v pairs, got {text!r}")
    return dict(p.split("=", 1) for p in pairs)


def parse_sources(items) -> dict:
    """``PATH=URL`` items (split at the first '=') to {recorded path: url}."""
    sources = {}
    for item in items or ():
        path, sep, url = item.partition("=")
        if not sep or not path or not url:
            raise ProvenanceError(f"--source {item!r}: expected PATH=URL")
        sources[rel_key(path)] = url
    return sources


# --------------------------------------------------------------------------- record

def _input_entry(path: str, cwd: str) -> dict:
    full = os.path.normpath(os.path.join(cwd, path))
    if not os.path.exists(full):
        # not an error: failing here would make Snakemake delete the job's outputs
        log.warning("provenance: input %s does not exist; recorded without a checksum", path)
        return {"sha256": None, "size": None, "missing": True}
    cached = None
    rec = read_sidecar(full)
    if rec is not None:
        own = _own_key(full, rec)
        cached = rec["outputs"][own[0]] if own else None
    return digest(full, cached)


def record(rule: str, outputs, inputs=(), *, start: str | dt.datetime | None = None,
           wildcards: dict | None = None, log_file: str | None = None, config=None,
           sources: dict | None = None, runtime: dict | None = None, benchmark: str | None = None) -> dict:
    """Write ``O.prov.json`` for every output O of a finished job and return the record.

    Paths are taken relative to the cwd (the workflow root). An absent output raises
    ProvenanceError naming it; an absent input is recorded with sha256 null (and a warning).
    `benchmark`: the job's Snakemake benchmark file (written after this record, so not hashed):
    Snakemake dates a job by it as by an output, so ``sync-mtimes`` re-dates it with the outputs.
    """
    cwd = os.getcwd()
    started = start if isinstance(start, dt.datetime) else parse_time(start)
    out_keys = list(dict.fromkeys(rel_key(p, cwd) for p in outputs))
    if not out_keys:
        raise ProvenanceError("no outputs given")
    missing = [k for k in out_keys if not os.path.exists(os.path.join(cwd, k))]
    if missing:
        raise ProvenanceError(f"rule {rule}: output(s) absent: {', '.join(missing)}")
    in_keys = [k for k in dict.fromkeys(rel_key(p, cwd) for p in inputs) if k not in out_keys]
    out_entries = {k: digest(os.path.join(cwd, k)) for k in out_keys}
    in_entries = {k: _input_entry(k, cwd) for k in in_keys}
    from laser_repro import __version__

    end = dt.datetime.now().astimezone()
    rec = {
        "format": FORMAT,
        "rule": rule,
        "wildcards": dict(wildcards or {}),
        "start": started.isoformat(),
        "end": end.isoformat(),
        "duration_s": round((end - started).total_seconds(), 3),
        "log": rel_key(log_file, cwd) if log_file else None,
        "benchmark": rel_key(benchmark, cwd) if benchmark else None,
        "outputs": out_entries,
        "inputs": in_entries,
        "sources": dict(sources or {}),
        "config": config,
        "runtime": runtime,  # how the job ran where it matters to the numbers (threads, processes)
        "code": {**git_state(), "version": __version__},
        "libraries": library_versions(),
        "host": host_info(),
    }
    from laser_repro.core.textio import write_json

    for key in out_keys:
        write_json(sidecar_path(os.path.join(cwd, key)), rec)
    return rec


def record_job(spec: str | dict, *, start: str | float | dt.datetime | None = None,
               runtime: dict | None = None) -> dict:
    """The record of a job run as ``laser-repro --provenance-json SPEC SUBCOMMAND ...``, written by that
    same process once the subcommand succeeded (no second interpreter per job). SPEC (JSON): rule,
    outputs, inputs, log, config, sources (``PATH=URL`` items), wildcards: the options of the
    ``provenance`` subcommand, recorded exactly as it does. `start`: when the process started (seconds
    since the epoch, ISO 8601 or a datetime). Errors exit as ``provenance: ...``, as that subcommand."""
    try:
        if isinstance(spec, str):
            spec = json.loads(spec)
        if not isinstance(spec, dict) or not spec.get("rule") or not spec.get("outputs"):
            raise ProvenanceError(f"--provenance-json: expected an object with rule and outputs, got {spec!r}")
        if isinstance(start, (int, float)):
            start = dt.datetime.fromtimestamp(start).astimezone()
        wildcards = spec.get("wildcards")
        return record(spec["rule"], spec["outputs"], spec.get("inputs") or (), start=start,
                      wildcards=parse_wildcards(wildcards) if isinstance(wildcards, str) else wildcards,
                      log_file=spec.get("log"), config=spec.get("config"), sources=parse_sources(spec.get("sources")),
                      runtime=runtime, benchmark=spec.get("benchmark"))
    except (ProvenanceError, ValueError) as err:
        raise SystemExit(f"provenance: {err}") from None


def cmd_provenance(a) -> None:
    try:
        record(a.rule, a.outputs, a.inputs or (), start=a.start, wildcards=parse_wildcards(a.wildcards),
               log_file=a.log, config=json.loads(a.config_json) if a.config_json else None,
               sources=parse_sources(a.source))
    except (ProvenanceError, ValueError) as err:
        raise SystemExit(f"provenance: {err}") from None
