"""Training of every model family: ``laser-repro train --family F``'s launcher (lock, fingerprint,
torchrun/srun workers), its worker (one rank: the family's ``train_worker``, polled for preemption),
the run's status, the publication of the trained model, and the command's parser (:func:`add_cli`)."""
from __future__ import annotations

import json
import logging
import os
import socket
import time
from pathlib import Path

from laser_repro.core.textio import read_json, write_json
from laser_repro.models.registry import FAMILIES

log = logging.getLogger("laser_repro")


def _train_worker_argv(a, threads: int) -> list[str]:
    argv = ["--data", a.data, "--save-dir", a.save_dir, "--final", a.final,
            "--threads", str(threads), "--stop-before-limit", str(a.stop_before_limit),
            "--settings", a.settings, "--family", a.family]
    for opt, value in (("--initial", a.initial), ("--curves", a.curves), ("--record", a.record)):
        if value:
            argv += [opt, value]
    return argv


def cmd_train(a):
    """Launcher: start the worker(s); worker: train one rank (see laser_repro.models.launch).

    The launcher holds ``<save_dir>/.train.lock`` for the whole run and resumes only a checkpoint
    directory whose fingerprint matches these settings and data (laser_repro.models.training_guard)."""
    from laser_repro.models import launch
    from laser_repro.models import training_guard

    settings = json.loads(a.settings)
    if a.launcher == "worker":
        rank = launch.worker_rank()
        if rank.source == "torchrun":  # srun's tasks belong to the SLURM step, which SLURM ends
            training_guard.die_with_parent()
        return _train_worker(a, settings, rank)
    if not a.outlive_parent:
        a.job_guard = training_guard.JobGuard().install()
    attempt_log = training_guard.tee_to_attempt_log(a.save_dir)
    log.info("training attempt: pid %d on %s; its whole output also in %s", os.getpid(), socket.gethostname(),
             attempt_log)
    try:
        with training_guard.TrainingLock(a.save_dir):
            _train_launcher(a, settings)
    except training_guard.TrainingLockHeld as err:
        raise SystemExit(str(err)) from None
    # into the provenance record: how it was trained (float sums differ with threads and processes)
    status = read_json(Path(a.save_dir) / TRAIN_STATUS)
    a.runtime = {k: status[k] for k in ("family", "world_size", "device", "threads", "update_freq", "max_tokens",
                                        "tokens_per_update", "batch_size", "start_updates", "num_updates")
                 if status.get(k) is not None}


def _preflight(family, save_dir, settings: dict, world_size: int) -> None:
    """The family's checks of a launch (LASER: tokens per update, the resume position), before torchrun /
    srun start any worker: a refusal is then the job's last line, not one worker's among many."""
    check = getattr(family, "preflight", None)
    if check is not None:
        check(save_dir, settings, world_size)


def _train_launcher(a, settings: dict):
    from laser_repro.models import launch
    from laser_repro.models import device, registry, training_guard

    save_dir = Path(a.save_dir)
    family = registry.get(a.family)
    guard = training_guard.prepare_save_dir(save_dir, settings, a.data, workers=min(max(a.threads, 1), 8),
                                            family=family)
    status_path = save_dir / TRAIN_STATUS
    previous = read_json(status_path) if status_path.exists() else {}
    if _finished_unpublished(previous, guard["digest"], settings, save_dir, family):
        # A previous job of this very fingerprint and these stopping criteria trained to the end
        # and died before publishing (or its outputs were deleted): its model is this run's
        # result. Resuming instead would make zero updates (an error) or, with early stopping,
        # train past the point where the previous job stopped.
        log.warning("%s: training already completed at update %s with the same fingerprint and stopping "
                    "criteria (%s); publishing that model without training (to train anew, move %s aside)",
                    save_dir, previous["num_updates"], status_path, save_dir)
        _publish_outputs(a, save_dir / previous.get("model", "checkpoint_last.pt"), family, settings)
        return
    status_path.unlink(missing_ok=True)  # a stale status must not be read as this run's
    # every worker follows this plan: a worker meant for a GPU that sees none stops (models.device)
    # the config's GPUs are the plan: a job step that sees none must fail, not train on the CPU (the SLURM
    # job step's environment has no SLURM_GPUS_* to tell it that GPUs were meant)
    planned_gpus = int(settings.get("train", {}).get("gpus") or 0) if family.uses_gpu else 0
    plan = {device.PLANNED_DEVICE_ENV: "cuda" if planned_gpus else device.planned_device_type(family.uses_gpu)}
    if a.launcher == "srun":
        job = launch.slurm_job_geometry(os.environ["SLURM_JOB_ID"])
        # as many threads per worker as CPUs per task (as torchrun's split below): the thread
        # count changes floating-point sums, so the same split gives the same model
        threads = max(1, job["cpus"] // job["tasks"])
        _preflight(family, save_dir, settings, job["tasks"])
        rc = launch.launch_workers("srun", job["tasks"], _train_worker_argv(a, threads), job, env=plan)
    else:
        world = launch.local_world_size(settings["train"].get("cpu_processes", 1), uses_gpu=family.uses_gpu,
                                        planned_gpus=planned_gpus)
        if world == 1:
            return _train_worker(a, settings, launch.Rank())
        _preflight(family, save_dir, settings, world)
        threads = max(1, a.threads // world)
        rc = launch.launch_workers("torchrun", world, _train_worker_argv(a, threads), env=plan)
    status = read_json(status_path) if status_path.exists() else {}
    if status.get("status") == "preempted":
        log.warning("training stopped at update %s on request; rerun to resume", status.get("num_updates"))
        raise SystemExit(launch.EXIT_PREEMPTED)
    if status.get("error"):
        raise SystemExit(status["error"])
    if rc != 0 or status.get("status") != "completed":
        raise SystemExit(f"training workers failed (exit status {rc}); see the log above")


def _finished_unpublished(previous: dict, digest: str, settings: dict, save_dir: Path, family) -> bool:
    """True when ``previous`` (the last job's train_status.json) completed training of this
    fingerprint with these stopping criteria, and ``checkpoint_last.pt`` is still at its update."""
    last = save_dir / "checkpoint_last.pt"
    if not (previous.get("status") == "completed" and previous.get("fingerprint") == digest
            and previous.get("stopping") == family.stopping_settings(settings) and last.exists()
            and (save_dir / previous.get("model", "checkpoint_last.pt")).exists()):
        return False
    return family.checkpoint_updates(last) == previous.get("num_updates")


TRAIN_STATUS = "train_status.json"


def _train_worker(a, settings: dict, rank) -> None:
    """One rank: the family trains, polling the preemption flag (signals; the SLURM time limit)."""
    import torch

    from laser_repro.models import launch
    from laser_repro.models import registry, training_guard
    from laser_repro.models.device import worker_device

    torch.set_num_threads(a.threads)
    family = registry.get(a.family)
    device = worker_device(rank, uses_gpu=family.uses_gpu)  # before any work: a GPU-less rank stops here
    if rank.source == "srun":  # torchrun sets these itself
        os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = rank.master_addr, str(rank.master_port)
    deadline = launch.training_deadline(a.stop_before_limit) if rank.is_master else None
    if deadline is not None:
        log.info("inside SLURM job %s: checkpoint and stop at %s (%d s before its time limit)",
                 os.environ.get("SLURM_JOB_ID"), time.strftime("%H:%M:%S", time.localtime(deadline)),
                 a.stop_before_limit)
    with launch.PreemptionFlag(deadline) as flag:
        outcome = family.train_worker(Path(a.data), Path(a.save_dir), settings, rank=rank, threads=a.threads,
                                      device=device, stop_requested=lambda: flag.requested)
    no_update = not outcome["preempted"] and outcome["num_updates"] <= outcome["start_updates"]
    if not rank.is_master:
        # preempted or done: only the master (through train_status.json, and the launcher) reports 75; a
        # worker exiting 75 first made torchrun stop the master, possibly before its status was written
        if no_update:
            raise SystemExit(1)
        return
    fingerprint = training_guard.read_fingerprint_file(a.save_dir) or {}
    # threads and world size: floating-point sums (and so the weights, by ~1e-7) depend on them
    status = {"status": "preempted" if outcome["preempted"] else "completed", "family": family.name,
              "num_updates": outcome["num_updates"], "start_updates": outcome["start_updates"],
              "world_size": rank.world_size, "threads": a.threads, **outcome.get("runtime", {}),
              "reason": flag.reason, "fingerprint": fingerprint.get("digest"),
              "stopping": family.stopping_settings(settings), "model": "checkpoint_last.pt"}
    last = Path(a.save_dir) / "checkpoint_last.pt"
    if no_update:
        status.update(status="failed", error=_no_update_message(last, outcome, settings))
        write_json(Path(a.save_dir) / TRAIN_STATUS, status)
        raise SystemExit(status["error"])
    if not outcome["preempted"]:
        model = Path(outcome["model"])
        if not model.exists():
            status.update(status="failed", error=f"training finished without {model}")
        status.update(model=model.name, kept_update=outcome.get("kept_update"))
    write_json(Path(a.save_dir) / TRAIN_STATUS, status)
    if outcome["preempted"]:
        raise SystemExit(launch.EXIT_PREEMPTED)
    if status.get("error"):
        raise SystemExit(status["error"])
    _publish_outputs(a, model, family, settings)


def _no_update_message(last: Path, outcome: dict, settings: dict) -> str:
    stop = ", ".join(f"{k}={v}" for k, v in settings["train"].items() if k in ("max_epoch", "max_update"))
    where = (f"{last} is already at update {outcome['start_updates']}, at or past the end of training "
             f"the settings set ({stop})" if outcome["start_updates"] else f"training ended at update 0 ({stop})")
    return (f"no update was made: {where}. Nothing is published: this job did not train that model, and "
            f"its run did not record that it completed. To train longer raise train.max_epoch / max_update; "
            f"to train anew move {last.parent} aside.")


def _publish_outputs(a, model: Path, family, settings: dict) -> None:
    """Publish the model (``--final``) and, when asked, the update-0 model, the curves and the model's
    record (``--record``, laser_repro.models.record) -- unless the job that started us is gone."""
    save_dir = Path(a.save_dir)
    guard = getattr(a, "job_guard", None)
    if guard is not None:
        guard.check()
    if a.record:
        from laser_repro.models.record import write_model_record

        write_model_record(a.record, family=family.name, settings=settings, status=read_json(save_dir / TRAIN_STATUS))
    if a.initial:
        initial = save_dir / INITIAL_CHECKPOINT
        if not initial.exists():
            raise SystemExit(f"{initial} is missing (the run was started before it was kept): delete "
                             f"{a.save_dir} and train again")
        _publish(initial, a.initial)
    if a.curves:
        if family.curves_file is None:
            raise SystemExit(f"--curves: the {family.name} family writes no learning curves")
        _publish(save_dir / family.curves_file, a.curves, link=False)
    _publish(model, a.final)


INITIAL_CHECKPOINT = "checkpoint_init.pt"


def _publish(src: Path, dest, link: bool = True) -> None:
    """Put ``src`` at ``dest`` atomically: a hard link when allowed (no copy of a multi-GB file), else a copy."""
    import shutil

    dest = Path(dest)
    tmp = dest.with_name(dest.name + ".tmp")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp.unlink(missing_ok=True)
    try:
        if not link:
            raise OSError
        os.link(src, tmp)
    except OSError:
        shutil.copyfile(src, tmp)
    os.replace(tmp, dest)


def add_cli(sub) -> None:
    """Register ``train`` on an argparse subparsers object."""
    s = sub.add_parser("train", help="train (or resume) a model of any family (LASER: the encoder-decoder with fairseq)")
    s.add_argument("--data", required=True)
    s.add_argument("--save-dir", required=True)
    s.add_argument("--final", required=True)
    s.add_argument("--threads", type=int, default=1)
    s.add_argument("--settings", required=True,
                   help='JSON: pairs, targets, model, train (+ optional nli: {"data": PREFIX, "weight": W}, '
                        'curves: {"interval_updates", "languages", "loss_sentences"})')
    s.add_argument("--initial", help="also write the model at update 0 here (the random-encoder baseline)")
    s.add_argument("--curves", help="also write the learning curves (JSON lines) here; needs settings.curves")
    s.add_argument("--record", help="also write the model's record here (model_record.json: its family, settings, "
                                    "fingerprint, updates; the tables check it against the config)")
    s.add_argument("--launcher", default="local", choices=["local", "srun", "worker"],
                   help="local: in-process, or torchrun over the GPUs (or train.cpu_processes) of this "
                        "machine; srun: one worker per task of the SLURM allocation; worker: internal")
    s.add_argument("--stop-before-limit", type=int, default=300, metavar="SECONDS",
                   help="inside a SLURM job: checkpoint and exit 75 this long before the job's time limit")
    s.add_argument("--outlive-parent", action="store_true",
                   help="keep training when the process that started this one dies (nohup / setsid use); by "
                        "default an orphaned trainer checkpoints, stops and publishes nothing (a killed job "
                        "must not publish later)")
    s.add_argument("--family", choices=list(FAMILIES), default="laser",
                   help="model family (laser_repro.models.<family>, see laser_repro.models.registry)")
    s.set_defaults(func=cmd_train)
