"""Provenance sidecars of workflow outputs, the lineage walk over them, and mtime repair after a DVC pull.

Every Snakemake shell rule records its job: a rule that runs one ``laser-repro SUBCOMMAND ...`` as
``laser-repro --provenance-json JSON SUBCOMMAND ...`` (in that process, once the subcommand succeeded:
record_job), a compound command followed by ``laser-repro provenance --rule NAME --start ... --inputs ...
--outputs ...``. Either writes for each output ``O`` a sidecar ``O.prov.json`` (the same record for all
outputs of the job; format ``FORMAT`` below):

    rule, wildcards, start, end, duration_s, log
    outputs  {path: {sha256, size, mtime_ns}}      paths relative to the workflow root (the cwd) when
    inputs   {path: {sha256, size, mtime_ns}}      under it, else absolute
    sources  {path: url}                           public URL of raw inputs (--source PATH=URL)
    config   the config keys the rule depends on   (--config-json)
    runtime  in-process records: torch_threads; train: world_size, threads, update_freq, ... (the
             numbers differ in the 7th digit with the thread count)
    code     {commit, dirty, version}              git HEAD of the package's repository, laser_repro.__version__
    libraries {python, torch, fairseq, ...}        importlib.metadata versions (null when not installed)
    host     {hostname, platform, user, pid, slurm_job_id}

A directory (a Snakemake ``directory()`` output or input) is hashed as a whole: its sha256 is that of
the manifest ``relpath NUL sha256 LF`` of its files in sorted order (``.snakemake_timestamp`` and
sidecars excluded); its entry adds ``type: dir``, ``files`` (count) and ``stat`` (a fingerprint of the
files' paths, sizes and mtimes, used by the hash cache).

Hash cache: an input with its own sidecar whose recorded size and mtime_ns (for a directory, the stat
fingerprint) match the file's current ones is not re-hashed; its recorded sha256 is reused.

``lineage FILE`` walks the sidecars back to the raw files; ``sync-mtimes ROOT...`` re-dates verified
outputs so that Snakemake sees them up to date after ``dvc pull``.  Only the standard library is used:
this runs once per job.
"""
from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import logging
import os
import platform
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from laser_repro.core.download import sha256_file

log = logging.getLogger("laser_repro")

FORMAT = "laser-repro-provenance/1"
SUFFIX = ".prov.json"
IGNORED_IN_DIRS = (".snakemake_timestamp",)
LIBRARIES = ("torch", ("fairseq-fixed", "fairseq"), "numpy", "sacremoses", "faiss-cpu",
             "snakemake", "scikit-learn")
MIN_GAP_NS = 1_000_000_000  # an output is dated at least 1 s after each of its inputs


class ProvenanceError(RuntimeError):
    """A provenance record cannot be written (e.g. an output the job claimed to make is absent)."""


# --------------------------------------------------------------------------- hashing

# the downloader's streaming digest (a module attribute, so tests can count the calls)
file_sha256 = sha256_file


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
        return file_sha256(path)
    manifest = hashlib.sha256()
    for rel, _ in _dir_files(path):
        manifest.update(f"{rel}\0{file_sha256(os.path.join(path, rel))}\n".encode())
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


# --------------------------------------------------------------------------- paths and sidecars

def sidecar_path(path: Path | str) -> Path:
    """The sidecar of an output: ``<path>.prov.json`` beside it."""
    return Path(os.path.normpath(os.fspath(path)) + SUFFIX)


def rel_key(path: Path | str, cwd: str | None = None) -> str:
    """How a path is recorded: relative to `cwd` (the workflow root) when under it, else absolute."""
    cwd = cwd or os.getcwd()
    full = os.path.normpath(os.path.join(cwd, os.fspath(path)))
    rel = os.path.relpath(full, cwd)
    return full if rel == ".." or rel.startswith(".." + os.sep) else rel.replace(os.sep, "/")


def read_sidecar(path: Path | str) -> dict | None:
    """The record of `path`'s sidecar, or None when it has none (or it cannot be parsed)."""
    side = sidecar_path(path)
    try:
        with open(side, encoding="utf-8") as f:
            rec = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        log.warning("ignoring unreadable provenance sidecar %s: %s", side, err)
        return None
    return rec if isinstance(rec, dict) and isinstance(rec.get("outputs"), dict) else None


def _own_key(abs_path: str, rec: dict) -> tuple[str, str] | None:
    """(key, workflow root) of `abs_path` among the record's outputs: the key whose path components
    end `abs_path` (so lineage works from any cwd and after the tree has moved)."""
    parts = Path(abs_path).parts
    best = None
    for key in rec["outputs"]:
        if os.path.isabs(key):
            if os.path.normpath(key) == abs_path:
                return key, os.path.dirname(abs_path)
            continue
        kparts = Path(key).parts
        matches = kparts and len(parts) > len(kparts) and parts[-len(kparts):] == kparts
        if matches and (best is None or len(kparts) > len(Path(best).parts)):  # the longest match
            best = key
    return (best, str(Path(*parts[:-len(Path(best).parts)]))) if best else None


def _resolve(key: str, root: str) -> str:
    return os.path.normpath(key if os.path.isabs(key) else os.path.join(root, key))


# --------------------------------------------------------------------------- environment

#: the code whose version a record names: the repository holding this package's source (a checkout
#: installed editable, as scripts/setup.sh does); an installed wheel has only its version
CODE_DIR = str(Path(__file__).resolve().parent)


def git_state(cwd: str | None = None) -> dict:
    """{commit, dirty} of the git repository holding `cwd` (default: CODE_DIR); nulls outside git or
    without git. Untracked files do not make the tree dirty."""
    cwd = cwd or CODE_DIR
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
            "slurm_job_id": os.environ.get("SLURM_JOB_ID")}


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


# --------------------------------------------------------------------------- lineage

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


def _display(abs_path: str) -> str:
    return rel_key(abs_path)


#: top-level directories of the workflow root that hold only files the workflow makes: a file there
#: without a record of its own is an unrecorded output, never a raw input
WORKFLOW_OUTPUT_DIRS = ("results",)


def _workflow_output(key: str) -> bool:
    """Whether a recorded path (relative to the workflow root, or absolute) is under WORKFLOW_OUTPUT_DIRS."""
    return not os.path.isabs(key) and key.replace(os.sep, "/").split("/", 1)[0] in WORKFLOW_OUTPUT_DIRS


def lineage_tree(path: Path | str, *, max_depth: int | None = None, rehash: bool = False) -> dict:
    """The provenance tree of `path` as nested dicts, and a summary.

    Node: path, sha256 (current; null when absent), recorded_sha256 (what the consumer, or for the
    root its own sidecar, recorded), rule (null without a record of its own), raw, recorded (has a
    record of its own), url, status (ok | changed | missing | no record), inputs (child nodes), and
    ``ref: true`` on a file already shown above (no inputs repeated).

    A raw file is a declared input of the workflow: a download (its own record lists no inputs), a
    file without record whose consumer recorded its public URL (``sources``), or a file without
    record outside the workflow's output directories (WORKFLOW_OUTPUT_DIRS, e.g. data_root files
    without a public URL, such as MLDoc). Any other file without a record of its own is flagged with
    status `no record`: a workflow output (under results/) that has no sidecar, or whose sidecar is
    unreadable or is not the record of that file. Status is `changed` when the current sha256 differs
    from a recorded one (the consumer's or its own sidecar's; this wins over `no record`), or when an
    absent file's sidecar disagrees with what its consumer recorded.
    """
    hasher = _Hasher(use_cache=not rehash)
    seen: set[str] = set()  # expanded in full
    nodes: set[str] = set()
    urls: dict[str, str] = {}
    changed: set[str] = set()
    raw: set[str] = set()
    unrecorded: set[str] = set()

    def node(abs_path: str, edge: dict | None, url: str | None, depth: int, key: str | None = None) -> dict:
        rec = read_sidecar(abs_path)
        own = _own_key(abs_path, rec) if rec else None
        own_entry = rec["outputs"][own[0]] if own else None
        current = hasher(abs_path, own_entry)
        recorded = [e["sha256"] for e in (edge, own_entry) if e and e.get("sha256")]
        if current is None:
            status = "changed" if len(set(recorded)) > 1 else "missing"
        else:
            status = "changed" if any(r != current for r in recorded) else "ok"
        if url is None and rec and own:
            url = (rec.get("sources") or {}).get(own[0])
        url = urls.setdefault(abs_path, url) if url else urls.get(abs_path)  # also on back-references
        if own is not None:
            is_raw, no_record = not rec.get("inputs"), False
        elif os.path.exists(sidecar_path(abs_path)):  # a sidecar, but not this file's record
            is_raw, no_record = False, True
        elif url:
            is_raw, no_record = True, False
        else:
            no_record = _workflow_output(key if key is not None else rel_key(abs_path))
            is_raw = not no_record
        if no_record and status != "changed":
            status = "no record"
        n = {"path": _display(abs_path), "sha256": current,
             "recorded_sha256": recorded[0] if recorded else None,
             "rule": rec.get("rule") if own else None, "raw": is_raw, "recorded": own is not None, "url": url,
             "status": status}
        nodes.add(abs_path)
        if status == "changed":
            changed.add(abs_path)
        if is_raw:
            raw.add(abs_path)
        if no_record:
            unrecorded.add(abs_path)
        if abs_path in seen:
            n["ref"] = True
            return n
        if own is not None and not is_raw and max_depth is not None and depth >= max_depth:
            n["truncated"] = len(rec["inputs"])  # not marked seen: a shallower path may show it in full
            return n
        seen.add(abs_path)
        if own is None or is_raw:
            return n
        root = own[1]
        sources = rec.get("sources") or {}
        n["inputs"] = [node(_resolve(k, root), e, sources.get(k), depth + 1, k)
                       for k, e in sorted(rec["inputs"].items())]
        return n

    tree = node(os.path.abspath(os.fspath(path)), None, None, 0)
    return {"tree": tree, "summary": {"nodes": len(nodes), "raw": len(raw), "changed": len(changed),
                                      "unrecorded": len(unrecorded)}}


def format_lineage(result: dict) -> str:
    """The tree as indented text, one line per node, and the summary line."""
    lines: list[str] = []

    def label(n: dict) -> str:
        sha = n["sha256"] or n["recorded_sha256"]
        if not n["raw"] and not n.get("recorded", True):
            what = f"{(sha or '-')[:12]}  (no provenance record)"
        elif n["raw"] and n["rule"] is None:
            what = f"raw {n['url'] or '(no URL recorded)'}  sha256={sha or '-'}"
        elif n["raw"]:
            what = f"{n['rule']} (raw) {n['url'] or '(no URL recorded)'}  sha256={sha or '-'}"
        else:
            what = f"{(sha or '-')[:12]}  {n['rule']}"
        extra = ""
        if n.get("ref"):
            extra = "  … see above"
        elif n.get("truncated"):
            extra = f"  … {n['truncated']} input(s) below --max-depth"
        return f"{n['path']}  {what}  [{n['status']}]{extra}"

    def walk(n: dict, prefix: str, tail: str) -> None:
        lines.append(prefix + label(n))
        kids = n.get("inputs") or []
        for i, kid in enumerate(kids):
            last = i == len(kids) - 1
            walk(kid, tail + ("└── " if last else "├── "), tail + ("    " if last else "│   "))

    walk(result["tree"], "", "")
    s = result["summary"]
    lines.append(f"{s['nodes']} nodes, {s['raw']} raw files, {s['changed']} changed, "
                 f"{s.get('unrecorded', 0)} without a record")
    return "\n".join(lines)


# --------------------------------------------------------------------------- sync-mtimes

def _find_sidecars(roots) -> list[str]:
    found = []
    for root in roots:
        root = os.path.abspath(os.fspath(root))
        if os.path.isfile(root) and root.endswith(SUFFIX):
            found.append(root)
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            found.extend(os.path.join(dirpath, f) for f in filenames if f.endswith(SUFFIX))
    return sorted(set(found))


def _mtime_range(path: str) -> tuple[int, int]:
    """(oldest, newest) mtime_ns of a file, or of a directory and everything in it."""
    st = os.stat(path)
    if not os.path.isdir(path):
        return st.st_mtime_ns, st.st_mtime_ns
    lo = hi = st.st_mtime_ns
    for dirpath, dirnames, filenames in os.walk(path):
        for name in dirnames + filenames:
            m = os.stat(os.path.join(dirpath, name)).st_mtime_ns
            lo, hi = min(lo, m), max(hi, m)
    return lo, hi


def _set_mtime(path: str, mtime_ns: int) -> None:
    """Date a file, or a directory with everything inside it (Snakemake may look at either)."""
    if os.path.isdir(path):
        for dirpath, _, filenames in os.walk(path):
            for name in filenames:
                full = os.path.join(dirpath, name)
                os.utime(full, ns=(os.stat(full).st_atime_ns, mtime_ns))
        for dirpath, _, _ in sorted(os.walk(path), key=lambda w: -w[0].count(os.sep)):
            os.utime(dirpath, ns=(os.stat(dirpath).st_atime_ns, mtime_ns))
    else:
        os.utime(path, ns=(os.stat(path).st_atime_ns, mtime_ns))


def _target_times(order: list[str], records: dict, now_ns: int) -> tuple[dict, dict]:
    """New mtimes of the verified outputs (in `order`, inputs first) and of the raw inputs, for the
    files whose mtime must change.

    Each file goes back to the mtime recorded when it was made (an output: its own sidecar; a raw
    input: the earliest its consumers recorded), raised to 1 s after its latest input where the
    original run was faster than that. A raw input is re-dated only when its current mtime is later
    than the recorded one. Times after `now` shift everything back (raw inputs included).
    Depends only on the sidecars and the raw files' current mtimes; running it twice changes nothing.
    """
    raw_recorded: dict[str, int] = {}
    for path in order:
        rec, _, root = records[path]
        for k, entry in rec.get("inputs", {}).items():
            ipath = _resolve(k, root)
            if ipath not in records and entry.get("mtime_ns") is not None and os.path.exists(ipath):
                raw_recorded[ipath] = min(raw_recorded.get(ipath, entry["mtime_ns"]), entry["mtime_ns"])
    current: dict[str, tuple[int, int]] = {}  # (oldest, newest) mtime of existing inputs and outputs

    def cur(path: str) -> tuple[int, int]:
        if path not in current:
            current[path] = _mtime_range(path)
        return current[path]

    times: dict[str, int] = {}
    raw_times: dict[str, int] = {}

    def input_time(ipath: str) -> int | None:
        if ipath in times:
            return times[ipath]
        if not os.path.exists(ipath):
            return None  # an absent input does not make Snakemake rerun
        if ipath not in raw_times:
            raw_times[ipath] = min(cur(ipath)[1], raw_recorded.get(ipath, cur(ipath)[1]))
        return raw_times[ipath]

    for path in order:
        rec, key, root = records[path]
        t = int(rec["outputs"][key].get("mtime_ns") or 0)
        for k in rec.get("inputs", {}):
            it = input_time(_resolve(k, root))
            if it is not None:
                t = max(t, it + MIN_GAP_NS)
        times[path] = t
    excess = max(times.values(), default=0) - now_ns
    if excess > 0:
        # the recorded times are too recent for 1 s steps: unless the files are already in a valid
        # order (as left by a previous run), shift everything back
        if _consistent(order, records, cur, now_ns):
            return {}, {}
        times = {p: t - excess for p, t in times.items()}
        raw_times = {p: t - excess for p, t in raw_times.items()}
    changed = {p: t for p, t in times.items() if cur(p) != (t, t)}
    return changed, {p: t for p, t in raw_times.items() if cur(p) != (t, t)}


def _benchmark_times(order: list[str], records: dict, times: dict) -> dict:
    """New mtimes of the benchmark files of the verified outputs' jobs: the newest of the job's
    outputs. Snakemake counts a benchmark as an output: one left older than a re-dated input
    would make the job rerun."""
    out: dict[str, int] = {}
    for path in order:
        rec, _, root = records[path]
        if not rec.get("benchmark"):
            continue
        bench = _resolve(rec["benchmark"], root)
        if os.path.isfile(bench):
            t = times.get(path, _mtime_range(path)[1])
            out[bench] = max(out.get(bench, t), t)
    return {p: t for p, t in out.items() if os.stat(p).st_mtime_ns != t}


def _consistent(order: list[str], records: dict, cur, now_ns: int) -> bool:
    """Whether every verified output is already >= 1 s newer than each existing input, and not in the future."""
    for path in order:
        rec, _, root = records[path]
        lo, hi = cur(path)
        if hi > now_ns:
            return False
        for k in rec.get("inputs", {}):
            ipath = _resolve(k, root)
            if os.path.exists(ipath) and lo < cur(ipath)[1] + MIN_GAP_NS:
                return False
    return True


def sync_mtimes(roots, *, dry_run: bool = False, now_ns: int | None = None, workers: int | None = None) -> dict:
    """Re-date the verified outputs under `roots` so each is >= 1 s newer than each of its inputs.

    An output is verified when its sha256 equals its sidecar's, each of its existing inputs has the
    sha256 its sidecar recorded (an absent input is fine) and each input that is itself an output
    (has a sidecar under the roots) is verified. New times: see _target_times (the recorded ones,
    with >= 1 s between a file and its inputs, never after now). Files are dated inputs first.
    Unverified outputs are not touched. Every file is hashed once (sidecar stats are not trusted
    here), in `workers` threads. Restoring the recorded mtimes also revives the hash cache.

    Returns {"verified": [paths], "untouched": {path: reason}, "times": {path: new mtime_ns}} where
    times lists the files re-dated (raw inputs included; verified outputs already right are not).
    """
    now_ns = time.time_ns() if now_ns is None else now_ns
    records: dict[str, tuple[dict, str, str]] = {}  # output abs path -> (record, key, root)
    for side in _find_sidecars(roots):
        target = side[:-len(SUFFIX)]
        try:
            with open(side, encoding="utf-8") as f:
                rec = json.load(f)
            own = _own_key(target, rec)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
            log.warning("ignoring unreadable provenance sidecar %s: %s", side, err)
            continue
        if own:
            records[target] = (rec, own[0], own[1])
    hasher = _Hasher(use_cache=False)
    # an output untouched since its record (same size and mtime_ns) keeps its recorded digest: a DVC
    # stage run without a `dvc pull` before it hashes nothing again; restored files get new mtimes
    for target, (rec, own, _) in records.items():
        recorded = rec.get("outputs", {}).get(own)
        if os.path.exists(target) and _stat_matches(stat_entry(target), recorded):
            hasher.memo[target] = recorded["sha256"]
    to_hash = set(records)
    for rec, _, root in records.values():
        to_hash.update(_resolve(k, root) for k in rec.get("inputs", {}))
    hasher.prefetch(to_hash, workers or min(8, os.cpu_count() or 1))

    verdict: dict[str, str | None] = {}  # path -> None (verified) or the reason it is not
    order: list[str] = []  # verified outputs, inputs first

    def check(path: str, stack: tuple = ()) -> str | None:
        if path in verdict:
            return verdict[path]
        if path in stack:
            return "cycle in the recorded dependencies"
        rec, key, root = records[path]
        reason = None
        current = hasher(path)
        if current is None:
            reason = "missing"
        elif current != rec["outputs"][key].get("sha256"):
            reason = "content differs from its sidecar"
        else:
            for k, entry in sorted(rec.get("inputs", {}).items()):
                ipath = _resolve(k, root)
                isha = hasher(ipath)
                if isha is None:
                    continue
                if isha != entry.get("sha256"):
                    reason = f"input {_display(ipath)} differs from what it was made from"
                    break
                if ipath in records and check(ipath, stack + (path,)) is not None:
                    reason = f"input {_display(ipath)} is not verified"
                    break
        verdict[path] = reason
        if reason is None:
            order.append(path)
        return reason

    for path in sorted(records):
        check(path)

    times, raw_times = _target_times(order, records, now_ns)
    times.update(_benchmark_times(order, records, times))
    if not dry_run:
        for path, t in sorted(raw_times.items()):
            try:
                _set_mtime(path, t)
            except OSError as err:  # e.g. a read-only shared corpus: its consumers may be rerun
                log.warning("cannot re-date raw input %s: %s", path, err)
        for path in sorted(times):
            _set_mtime(path, times[path])
    untouched = {p: r for p, r in sorted(verdict.items()) if r is not None}
    return {"verified": order, "untouched": untouched, "times": {**raw_times, **times}}


# --------------------------------------------------------------------------- CLI

def cmd_provenance(a) -> None:
    try:
        record(a.rule, a.outputs, a.inputs or (), start=a.start, wildcards=parse_wildcards(a.wildcards),
               log_file=a.log, config=json.loads(a.config_json) if a.config_json else None,
               sources=parse_sources(a.source))
    except (ProvenanceError, ValueError) as err:
        raise SystemExit(f"provenance: {err}") from None


def cmd_lineage(a) -> None:
    if read_sidecar(os.path.abspath(a.file)) is None:
        raise SystemExit(f"lineage: {a.file} has no provenance sidecar {sidecar_path(a.file)}")
    result = lineage_tree(a.file, max_depth=a.max_depth, rehash=a.rehash)
    if a.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        print(format_lineage(result))
    if result["summary"]["changed"] or result["summary"]["unrecorded"]:
        raise SystemExit(1)


def cmd_sync_mtimes(a) -> None:
    result = sync_mtimes(a.roots, dry_run=a.dry_run)
    verb = "would date" if a.dry_run else "dated"
    for path, t in result["times"].items():
        stamp = dt.datetime.fromtimestamp(t / 1e9).isoformat(timespec="seconds")
        print(f"{verb} {_display(path)}  {stamp}")
    for path, reason in result["untouched"].items():
        print(f"untouched {_display(path)}: {reason}")
    print(f"verified {len(result['verified'])}, untouched {len(result['untouched'])}, "
          f"{'to re-date' if a.dry_run else 're-dated'} {len(result['times'])}")


def add_cli(sub) -> None:
    """Register provenance, lineage and sync-mtimes on an argparse subparsers object."""
    s = sub.add_parser("provenance", help="write the provenance sidecar O.prov.json of each output of a job")
    s.add_argument("--rule", required=True)
    s.add_argument("--start", required=True, help="when the job started: ISO 8601 or seconds since the epoch")
    s.add_argument("--wildcards", help="JSON object (or k=v,k=v)")
    s.add_argument("--inputs", nargs="*", default=[])
    s.add_argument("--outputs", nargs="+", required=True)
    s.add_argument("--log", help="the job's log file")
    s.add_argument("--config-json", help="JSON of the config keys the rule depends on")
    s.add_argument("--source", nargs="+", action="extend", metavar="PATH=URL",
                   help="public URL of a raw input (repeatable)")
    s.set_defaults(func=cmd_provenance)

    s = sub.add_parser("lineage", help="the provenance tree of a file, back to the raw downloads; exit 1 when a "
                                       "recorded file changed or a workflow output has no record")
    s.add_argument("file")
    s.add_argument("--json", action="store_true")
    s.add_argument("--max-depth", type=int)
    s.add_argument("--rehash", action="store_true", help="hash every file (do not trust sidecar size+mtime)")
    s.set_defaults(func=cmd_lineage)

    s = sub.add_parser("sync-mtimes", help="after dvc pull: re-date verified outputs so Snakemake sees them up to date")
    s.add_argument("roots", nargs="+")
    s.add_argument("--dry-run", action="store_true")
    s.set_defaults(func=cmd_sync_mtimes)


def main(argv: list[str] | None = None) -> int:
    """``python -m laser_repro.provenance {provenance,lineage,sync-mtimes} ...``: the same subcommands
    without loading the whole CLI (about 0.3 s less per job)."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s")
    p = argparse.ArgumentParser(prog="laser-repro", description="provenance subcommands")
    add_cli(p.add_subparsers(dest="command", required=True))
    args = p.parse_args(argv)
    args.func(args)
    return 0

