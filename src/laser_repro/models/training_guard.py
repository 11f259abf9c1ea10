"""What keeps ``laser-repro train`` from resuming the wrong model, from running twice on one
checkpoint directory, and from leaving workers behind.

* **Fingerprint** (:func:`compute_fingerprint`, :func:`prepare_save_dir`): ``fingerprint.json`` in
  the checkpoint directory records what determines the model -- the settings that change the
  weights, the sha256 of ``dict.txt`` and of every binarized file the run reads. A run resumes
  from ``checkpoint_last.pt`` only when the stored fingerprint equals the current one; otherwise
  the old directory's contents move aside to ``<save_dir>.stale-<UTC time>`` (never deleted) and
  training starts fresh, with a warning naming what differs.
* **Lock** (:class:`TrainingLock`): ``<save_dir>/.train.lock``, ``flock``-ed by the launcher for
  the whole run; a second trainer on the directory is refused with the holder's pid. The kernel
  drops the lock with its process, so a SIGKILLed launcher leaves no stale lock.
* **Parent death** (:func:`die_with_parent_preexec`, :func:`die_with_parent`): on Linux the
  torchrun / srun child of the launcher, and each torchrun worker, get SIGKILL when their parent
  dies (``prctl(PR_SET_PDEATHSIG)``), so a SIGKILLed launcher takes its workers with it.

Which settings are in the fingerprint (:func:`model_settings`): all of ``settings`` (model,
pairs, targets, nli weight, curves, train) except

* the process geometry -- ``train.gpus``, ``train.cpu_processes``, ``train.update_freq`` -- which is
  replaced by the planned tokens per update (:func:`planned_tokens_per_update`): the launcher
  recomputes update_freq for the processes it finds and refuses a number of processes for which no
  whole update_freq gives exactly the planned tokens (:func:`laser_repro.models.launch.update_freq_for`),
  so every update trains on the same batches. A LASER checkpoint saved mid-epoch records how many
  processes wrote it: resumed on another number, it continues at the same batch of its epoch when the
  batches done can be split over the new processes, else it is refused in one line before training
  (:func:`laser_repro.models.laser.fairseq_bridge.resume_plan`). The weights then match a run on one
  geometry up to float summation order when there is no dropout; dropout masks are drawn per process,
  so with dropout they differ (threads likewise change the float sums; they are not settings);
* the stopping criteria -- ``train.max_epoch``, ``max_update``, ``early_stopping`` -- raising them
  legitimately continues a run (:func:`stopping_settings`; they are kept in ``train_status.json``);
* ``train.log_interval`` / ``log_file`` (logging only), ``save_interval_updates`` / ``num_workers``
  (when checkpoints are written, how batches are loaded) and ``nli.data`` (a path: the NLI files are
  fingerprinted by content, so moving the results directory does not invalidate a run).

Data: every ``{train,valid}.SRC-TGT.LANG.{bin,idx}`` of the settings' pairs present in the data
directory (valid.* decides early stopping and the curves), and the NLI files. They are hashed in
full, streaming, in ``workers`` threads: at paper scale (~30 GB of .bin/.idx; sha256 runs at ~1.4
GB/s per core with SHA extensions) that is well under a minute the first time, small beside a
multi-day training; a stat cache (size, mtime_ns, inode) kept in fingerprint.json spares it on
every resume whose data files were not rewritten (binarization replaces files: new inode and
mtime). A partial hash of the .bin files (size, first and last MiB) was not enough: other token
ids of the same sentence lengths change only the middle of a .bin and none of the .idx.
"""

from __future__ import annotations

import contextlib
import copy
import errno
import hashlib
import json
import logging
import os
import signal
import socket
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Mapping, Optional

from laser_repro.core.nested import flatten_settings
from laser_repro.core.textio import read_json, write_json

log = logging.getLogger(__name__)

FINGERPRINT_FILE = "fingerprint.json"
LOCK_FILE = ".train.lock"
ATTEMPTS_DIR = "attempts"  # one log per launcher attempt (tee_to_attempt_log)
KEPT_IN_PLACE = (LOCK_FILE, ATTEMPTS_DIR)
#: version of the fingerprint's layout; a change makes old checkpoint directories stale
FINGERPRINT_VERSION = 1

#: train keys that do not change the weights at a given update (see the module docstring)
PROCESS_KEYS = ("gpus", "cpu_processes", "update_freq", "tokens_per_update")
STOPPING_KEYS = ("max_epoch", "max_update", "early_stopping")
LOGGING_KEYS = ("log_interval", "log_file")
#: how often checkpoints are written and how batches are loaded: the weights at an update are the same
IO_KEYS = ("save_interval_updates", "num_workers")

#: the environment variable through which a torchrun worker learns its launcher's pid
LAUNCHER_PID_ENV = "LASER_REPRO_LAUNCHER_PID"

_CHUNK = 1 << 22  # 4 MiB reads: hashlib releases the GIL on large updates


# -------------------------------------------------------------------------------------------
# fingerprint
# -------------------------------------------------------------------------------------------


def planned_tokens_per_update(train: dict) -> int:
    """Tokens per update the ``train`` settings plan: ``tokens_per_update`` when set, else
    ``max_tokens x max(gpus, 1) x update_freq`` (the paper: 16 GPUs of 8000 tokens).  The launcher
    keeps it whatever the number of processes it finds, or refuses that number
    (:func:`laser_repro.models.launch.update_freq_for`)."""
    return int(train.get("tokens_per_update") or (
        train["max_tokens"] * max(train.get("gpus", 0), 1) * train["update_freq"]))


#: the precision of every training before ``train.precision`` existed
DEFAULT_PRECISION = "fp32"


def without_default_precision(train: Mapping) -> dict:
    """``train`` settings without ``precision`` when it is the default: what identifies a run (a fingerprint,
    a shared pre-training's directory) stays that of the runs made before the key existed."""
    return {k: v for k, v in train.items() if not (k == "precision" and v == DEFAULT_PRECISION)}


def model_settings(settings: Mapping) -> dict:
    """The part of the ``--settings`` JSON that determines the model (module docstring)."""
    out = copy.deepcopy(dict(settings))
    train = dict(out["train"])
    planned = planned_tokens_per_update(train)
    for key in (*PROCESS_KEYS, *STOPPING_KEYS, *LOGGING_KEYS, *IO_KEYS):
        train.pop(key, None)
    train["tokens_per_update"] = planned
    out["train"] = train
    if isinstance(out.get("nli"), Mapping):
        out["nli"] = {k: v for k, v in out["nli"].items() if k != "data"}
    return out


def stopping_settings(settings: Mapping) -> dict:
    """When training ends: ``max_epoch``, ``max_update``, ``early_stopping`` (None when unset)."""
    return {k: settings["train"].get(k) for k in STOPPING_KEYS}


def data_files(data_dir, settings: Mapping) -> dict[str, Path]:
    """``{name: path}`` of the files the run reads: ``dict.txt``, the binarized pairs (train and,
    where present, valid), the NLI data when its weight is > 0."""
    data_dir = Path(data_dir)
    files = {"dict.txt": data_dir / "dict.txt"}
    for pair in settings["pairs"]:
        src, tgt = pair.split("-") if isinstance(pair, str) else pair
        if src == tgt:  # the task skips them (no auto-encoding)
            continue
        for split in ("train", "valid"):
            for lang in (src, tgt):
                for ext in ("bin", "idx"):
                    name = f"{split}.{src}-{tgt}.{lang}.{ext}"
                    if split == "train" or (data_dir / name).exists():
                        files[name] = data_dir / name
    nli = settings.get("nli")
    if isinstance(nli, Mapping) and nli.get("weight") and nli.get("data"):
        from laser_repro.models.laser.fairseq_bridge import NLI_SUFFIXES

        for suffix in NLI_SUFFIXES:
            files[f"nli{suffix}"] = Path(f"{nli['data']}{suffix}")
    return files


def sha256_file(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _stat_key(st: os.stat_result) -> list:
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def hash_files(files: Mapping[str, Path], cache: Optional[Mapping] = None, workers: int = 1) -> tuple[dict, dict]:
    """``({name: sha256 or None when missing}, stat cache)``. ``cache``: a previous stat cache
    ``{absolute path: [size, mtime_ns, inode, sha256]}``; a file whose stat is unchanged is not
    read again."""
    cache = cache or {}
    hashes, stats, todo = {}, {}, []
    for name, path in files.items():
        key = str(Path(path).resolve())
        try:
            st = os.stat(key)
        except FileNotFoundError:
            hashes[name] = None
            continue
        stat = _stat_key(st)
        old = cache.get(key)
        if old is not None and list(old[:3]) == stat:
            hashes[name] = old[3]
            stats[key] = old
        else:
            todo.append((name, key, stat))
    if todo:
        started = time.monotonic()
        with ThreadPoolExecutor(max(1, min(workers, len(todo)))) as pool:
            for (name, key, stat), sha in zip(todo, pool.map(lambda t: sha256_file(t[1]), todo)):
                hashes[name] = sha
                stats[key] = [*stat, sha]
        log.info("fingerprint: hashed %d file(s), %.1f GB, in %.1f s", len(todo),
                 sum(t[2][0] for t in todo) / 1e9, time.monotonic() - started)
    return hashes, stats


def compute_fingerprint(settings: Mapping, data_dir, cache: Optional[Mapping] = None,
                        workers: int = 1, family=None) -> tuple[dict, dict]:
    """``(fingerprint, stat cache)`` of a training run: ``{"version", "settings", "dictionary",
    "data"}`` (module docstring). ``family`` (laser_repro.models.base.ModelFamily) says which
    settings and files count; None: LASER's (:func:`model_settings`, :func:`data_files`)."""
    files = data_files(data_dir, settings) if family is None else family.data_files(data_dir, settings)
    hashes, stats = hash_files(files, cache, workers)
    dictionary = hashes.pop("dict.txt", None)  # a family without a vocabulary file names none (its settings do)
    if dictionary is None and "dict.txt" in files:
        raise FileNotFoundError(f"{files['dict.txt']}: the dictionary of the training data is missing")
    chosen = model_settings(settings) if family is None else family.fingerprint_settings(settings)
    if isinstance(chosen.get("train"), Mapping):  # train.precision: part of the fingerprint unless the default
        chosen = {**chosen, "train": without_default_precision(chosen["train"])}
    fingerprint = {"version": FINGERPRINT_VERSION, "settings": chosen,
                   "dictionary": dictionary, "data": hashes}
    return fingerprint, stats


def canonical_json(data) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def fingerprint_digest(fingerprint: Mapping) -> str:
    return hashlib.sha256(canonical_json(fingerprint).encode("utf-8")).hexdigest()


def fingerprint_differences(old: Optional[Mapping], new: Mapping) -> list[str]:
    """What differs between two fingerprints, in words (empty: the same)."""
    if old is None:
        return ["no fingerprint (a checkpoint directory of an older version)"]
    out = []
    if old.get("version") != new.get("version"):
        out.append(f"fingerprint version {old.get('version')} -> {new.get('version')}")
    a, b = flatten_settings(old.get("settings") or {}), flatten_settings(new.get("settings") or {})
    changed = [f"{k} ({json.dumps(a.get(k, '<unset>'))} -> {json.dumps(b.get(k, '<unset>'))})"
               for k in sorted(set(a) | set(b)) if a.get(k, "<unset>") != b.get(k, "<unset>")]
    if changed:
        out.append("settings: " + ", ".join(changed))
    if old.get("dictionary") != new.get("dictionary"):
        out.append("dictionary: dict.txt")
    a, b = old.get("data") or {}, new.get("data") or {}
    files = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    if files:
        shown = ", ".join(files[:8]) + (f" (+{len(files) - 8} more)" if len(files) > 8 else "")
        out.append(f"data files: {shown}")
    return out


def read_fingerprint_file(save_dir) -> Optional[dict]:
    """The content of ``<save_dir>/fingerprint.json`` (None when absent or unreadable)."""
    path = Path(save_dir) / FINGERPRINT_FILE
    try:
        data = read_json(path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        log.warning("%s unreadable (%s): treated as absent", path, err)
        return None
    return data if isinstance(data, dict) and "fingerprint" in data else None


def write_fingerprint_file(save_dir, fingerprint: Mapping, stats: Mapping) -> None:
    write_json(Path(save_dir) / FINGERPRINT_FILE, {
        "digest": fingerprint_digest(fingerprint), "fingerprint": fingerprint,
        "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        # not compared: a cache of the data files' hashes, keyed by path and stat
        "file_stats": stats})


def move_aside(save_dir) -> Path:
    """Move everything in ``save_dir`` except the lock file and the attempt logs into a new sibling
    ``<name>.stale-<UTC time>`` and return it. The lock file stays: it is what the running
    launcher holds; the attempt logs (every attempt's, the running one's included) are the directory's history. The fingerprint moves first, so that an interrupted move leaves a directory
    that is stale again for the next run."""
    save_dir = Path(save_dir)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    dest = save_dir.with_name(f"{save_dir.name}.stale-{stamp}")
    n = 1
    while dest.exists():
        dest = save_dir.with_name(f"{save_dir.name}.stale-{stamp}-{n}")
        n += 1
    dest.mkdir()
    entries = sorted(p for p in save_dir.iterdir() if p.name not in KEPT_IN_PLACE)
    entries.sort(key=lambda p: p.name != FINGERPRINT_FILE)
    for entry in entries:
        os.replace(entry, dest / entry.name)
    return dest


def prepare_save_dir(save_dir, settings: Mapping, data_dir, workers: int = 1, family=None) -> dict:
    """Make ``save_dir`` a directory of this training run (call it holding the :class:`TrainingLock`).

    Resumable contents are kept when the stored fingerprint equals the current one; other
    contents (another fingerprint, or none: an older version) move aside (:func:`move_aside`)
    with a warning naming the differences. Writes ``fingerprint.json`` (atomically) before any
    checkpoint can be saved. Returns ``{"digest", "fingerprint", "moved_to": path or None}``."""
    save_dir = Path(save_dir)
    save_dir.mkdir(parents=True, exist_ok=True)
    stored = read_fingerprint_file(save_dir)
    fingerprint, stats = compute_fingerprint(settings, data_dir, (stored or {}).get("file_stats"), workers, family)
    moved_to = None
    contents = [p for p in save_dir.iterdir() if p.name not in KEPT_IN_PLACE]
    differences = fingerprint_differences(stored and stored["fingerprint"], fingerprint)
    if differences and contents:
        moved_to = move_aside(save_dir)
        log.warning("%s was made for another model, not resumed: %s. Its contents moved to %s; "
                    "training starts from scratch", save_dir, "; ".join(differences), moved_to)
    elif contents:
        log.info("%s: fingerprint %s unchanged, resuming whatever it holds", save_dir,
                 fingerprint_digest(fingerprint)[:12])
    write_fingerprint_file(save_dir, fingerprint, stats)
    return {"digest": fingerprint_digest(fingerprint), "fingerprint": fingerprint, "moved_to": moved_to}


# -------------------------------------------------------------------------------------------
# one trainer per directory
# -------------------------------------------------------------------------------------------


class TrainingLockHeld(RuntimeError):
    """Another process trains in the directory."""


class TrainingLock:
    """``flock`` on ``<save_dir>/.train.lock`` (created; the holder writes ``pid host`` into it).

    Refuses with :class:`TrainingLockHeld` naming the directory and the holder when another
    process holds it. On a file system without flock support (some Lustre / NFS mounts) it warns
    and goes on: refusing to train there would block every run."""

    def __init__(self, save_dir):
        self.save_dir = Path(save_dir)
        self.path = self.save_dir / LOCK_FILE
        self._fd: Optional[int] = None

    def __enter__(self):
        import fcntl

        self.save_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode("utf-8", "replace").split()
            os.close(fd)
            who = f"pid {holder[0]}" + (f" on {holder[1]}" if len(holder) > 1 else "") if holder else "a process"
            raise TrainingLockHeld(
                f"{self.save_dir} is locked by another trainer ({who}, lock file {self.path}); "
                f"wait for it to end or stop it -- two trainers on one checkpoint directory would "
                f"overwrite each other's checkpoints") from None
        except OSError as err:
            if err.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
                os.close(fd)
                raise
            log.warning("%s: file locking not supported here (%s); a second trainer on this directory "
                        "would not be detected", self.path, err)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {socket.gethostname()}\n".encode(), 0)
        self._fd = fd
        return self

    def __exit__(self, *exc):
        if self._fd is not None:
            os.close(self._fd)  # releases the flock; the file stays (deleting it would race a new holder)
            self._fd = None
        return False


# -------------------------------------------------------------------------------------------
# workers die with their launcher
# -------------------------------------------------------------------------------------------

_PR_SET_PDEATHSIG = 1


def _prctl():
    """libc's prctl, looked up before any fork (a preexec_fn must not load libraries); None off Linux."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl
    except (OSError, AttributeError):
        return None


def die_with_parent_preexec(launcher_pid: int):
    """A ``Popen(preexec_fn=...)`` for the torchrun / srun child: SIGKILL when the launcher
    (``launcher_pid``, the forking process) dies; exits at once if it died already (before the
    prctl). None off Linux (no equivalent there: the child may outlive a killed launcher)."""
    prctl = _prctl()
    if prctl is None:
        return None

    def preexec():
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != launcher_pid:
            os._exit(1)

    return preexec


def _parent_of(pid: int) -> Optional[int]:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def die_with_parent(environ: Optional[Mapping[str, str]] = None) -> None:
    """In a torchrun worker: SIGKILL when the parent (torchrun's agent) dies.

    The parent may have died before this ran (the worker would then belong to init or a
    subreaper): with the launcher's pid in the environment (:data:`LAUNCHER_PID_ENV`), the
    worker checks that its parent is still the launcher's child and exits otherwise. A no-op
    off Linux."""
    prctl = _prctl()
    if prctl is None:
        return
    import ctypes

    env = os.environ if environ is None else environ
    parent = os.getppid()
    if prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
        log.warning("prctl(PR_SET_PDEATHSIG) failed (errno %d): this worker may outlive its launcher",
                    ctypes.get_errno())
        return
    launcher = env.get(LAUNCHER_PID_ENV)
    grandparent = _parent_of(parent) if launcher else None  # None also where /proc is not readable
    if os.getppid() != parent or (grandparent is not None and grandparent != int(launcher)):
        print(f"worker {os.getpid()}: its launcher (pid {launcher}) is gone; exiting", file=sys.stderr)
        os._exit(1)


class JobGuard:
    """The launcher's tie to the job that started it (a Snakemake job's shell, sbatch's script, a terminal).

    Killing a job's shell with SIGKILL leaves its child running, re-parented to init or a subreaper: an
    orphaned trainer that trains on and later publishes ``--final``, which the next run would accept as
    done. On Linux, :meth:`install` asks the kernel for SIGTERM when the parent dies (the trainer then
    checkpoints and exits 75, as on preemption); :meth:`check` before publishing refuses when the parent
    is no longer the one that started us (the signal can be missed: the parent died before the prctl, or
    off Linux, or a SIGTERM handler that was not installed yet)."""

    def __init__(self):
        self.parent = os.getppid()

    def install(self) -> "JobGuard":
        prctl = _prctl()
        if prctl is not None and prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0) != 0:
            log.warning("prctl(PR_SET_PDEATHSIG) failed: this trainer may outlive its job")
        self.check()
        return self

    @property
    def orphaned(self) -> bool:
        return os.getppid() != self.parent

    def check(self) -> None:
        if self.orphaned:
            raise SystemExit(f"the job that started this training (pid {self.parent}) is gone: this process "
                             f"(pid {os.getpid()}) is an orphan and publishes nothing; checkpoints are kept "
                             f"and the next run resumes from them")




def tee_to_attempt_log(save_dir) -> Path:
    """Copy everything this process and its children (torchrun, the workers, fairseq) write to stdout and
    stderr into ``<save_dir>/attempts/<UTC time>-<host>-<pid>.log`` as well, and return that path.

    The rule's log is one file per job that Snakemake deletes when a job starts: a second job on the same
    model (two Snakemake runs that both passed Snakemake's lock) would delete the first one's log, and its
    own diagnosis ("lock held by pid ...") would be all that is left. Each attempt's own file survives
    both. File descriptors 1 and 2 become a pipe that a thread copies to the old stdout/stderr and to the
    file: the children inherit them. (If this process is SIGKILLed, its children lose the pipe's reader
    and die of SIGPIPE on their next write -- as they should with their launcher gone.)"""
    import threading

    attempts = Path(save_dir) / ATTEMPTS_DIR
    attempts.mkdir(parents=True, exist_ok=True)
    path = attempts / f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{socket.gethostname()}-{os.getpid()}.log"
    sys.stdout.flush()
    sys.stderr.flush()
    original = os.dup(2)  # stdout and stderr both go to the rule's log under Snakemake; keep one copy
    read_end, write_end = os.pipe()
    out = open(path, "ab", buffering=0)

    def copy():
        while True:
            chunk = os.read(read_end, 1 << 16)
            if not chunk:
                break
            with contextlib.suppress(OSError):
                os.write(original, chunk)
            with contextlib.suppress(OSError):
                out.write(chunk)

    os.dup2(write_end, 1)
    os.dup2(write_end, 2)
    os.close(write_end)
    thread = threading.Thread(target=copy, name="attempt-log", daemon=True)
    thread.start()

    def close():  # at exit: the last lines reach both before the process ends
        sys.stdout.flush()
        sys.stderr.flush()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.close(devnull)
        thread.join(timeout=5)

    import atexit

    atexit.register(close)
    return path
