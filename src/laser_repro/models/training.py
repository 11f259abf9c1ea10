"""Training: ``laser-repro train``'s launcher (lock, fingerprint, torchrun/srun workers) and worker
(one fairseq rank), and the publication of the trained model."""
from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

from laser_repro.core.textio import read_json, write_json

log = logging.getLogger("laser_repro")


def _train_worker_argv(a, threads: int) -> list[str]:
    argv = ["--data", a.data, "--save-dir", a.save_dir, "--final", a.final,
            "--threads", str(threads), "--stop-before-limit", str(a.stop_before_limit),
            "--settings", a.settings]
    for opt, value in (("--initial", a.initial), ("--curves", a.curves)):
        if value:
            argv += [opt, value]
    return argv


def cmd_train(a):
    """Launcher: start the worker(s); worker: train one rank (see laser_repro.core.launch).

    The launcher holds ``<save_dir>/.train.lock`` for the whole run and resumes only a checkpoint
    directory whose fingerprint matches these settings and data (laser_repro.models.training_guard)."""
    from laser_repro.core import launch
    from laser_repro.models import training_guard

    settings = json.loads(a.settings)
    if a.launcher == "worker":
        rank = launch.worker_rank()
        if rank.source == "torchrun":  # srun's tasks belong to the SLURM step, which SLURM ends
            training_guard.die_with_parent()
        return _train_worker(a, settings, rank)
    try:
        with training_guard.TrainingLock(a.save_dir):
            _train_launcher(a, settings)
    except training_guard.TrainingLockHeld as err:
        raise SystemExit(str(err)) from None
    # into the provenance record: how it was trained (float sums differ with threads and processes)
    status = read_json(Path(a.save_dir) / TRAIN_STATUS)
    a.runtime = {k: status.get(k) for k in ("world_size", "threads", "update_freq", "max_tokens",
                                            "tokens_per_update", "start_updates", "num_updates")}


def _train_launcher(a, settings: dict):
    from laser_repro.core import launch
    from laser_repro.models import training_guard

    save_dir = Path(a.save_dir)
    guard = training_guard.prepare_save_dir(save_dir, settings, a.data, workers=min(max(a.threads, 1), 8))
    status_path = save_dir / TRAIN_STATUS
    previous = read_json(status_path) if status_path.exists() else {}
    if _finished_unpublished(previous, guard["digest"], settings, save_dir):
        # A previous job of this very fingerprint and these stopping criteria trained to the end
        # and died before publishing (or its outputs were deleted): its model is this run's
        # result. Resuming instead would make zero updates (an error) or, with early stopping,
        # train past the point where the previous job stopped.
        log.warning("%s: training already completed at update %s with the same fingerprint and stopping "
                    "criteria (%s); publishing that model without training (to train anew, move %s aside)",
                    save_dir, previous["num_updates"], status_path, save_dir)
        _publish_outputs(a, save_dir / previous.get("model", "checkpoint_last.pt"))
        return
    status_path.unlink(missing_ok=True)  # a stale status must not be read as this run's
    if a.launcher == "srun":
        job = launch.slurm_job_geometry(os.environ["SLURM_JOB_ID"])
        # as many threads per worker as CPUs per task (as torchrun's split below): the thread
        # count changes floating-point sums, so the same split gives the same model
        threads = max(1, job["cpus"] // job["tasks"])
        rc = launch.launch_workers("srun", job["tasks"], _train_worker_argv(a, threads), job)
    else:
        world = launch.local_world_size(settings["train"].get("cpu_processes", 1))
        if world == 1:
            return _train_worker(a, settings, launch.Rank())
        threads = max(1, a.threads // world)
        rc = launch.launch_workers("torchrun", world, _train_worker_argv(a, threads))
    status = read_json(status_path) if status_path.exists() else {}
    if status.get("status") == "preempted":
        log.warning("training stopped at update %s on request; rerun to resume", status.get("num_updates"))
        raise SystemExit(launch.EXIT_PREEMPTED)
    if status.get("error"):
        raise SystemExit(status["error"])
    if rc != 0 or status.get("status") != "completed":
        raise SystemExit(f"training workers failed (exit status {rc}); see the log above")


def _finished_unpublished(previous: dict, digest: str, settings: dict, save_dir: Path) -> bool:
    """True when ``previous`` (the last job's train_status.json) completed training of this
    fingerprint with these stopping criteria, and ``checkpoint_last.pt`` is still at its update."""
    from laser_repro.models.laser import fairseq_bridge
    from laser_repro.models import training_guard

    last = save_dir / "checkpoint_last.pt"
    if not (previous.get("status") == "completed" and previous.get("fingerprint") == digest
            and previous.get("stopping") == training_guard.stopping_settings(settings) and last.exists()
            and (save_dir / previous.get("model", "checkpoint_last.pt")).exists()):
        return False
    return fairseq_bridge.checkpoint_num_updates(fairseq_bridge.load_checkpoint(last)) == previous.get("num_updates")


TRAIN_STATUS = "train_status.json"


def _train_worker(a, settings: dict, rank) -> None:
    import torch

    from laser_repro.models.laser import fairseq_bridge
    from laser_repro.core import launch
    from laser_repro.models import training_guard
    from laser_repro.config import planned_tokens_per_update

    torch.set_num_threads(a.threads)
    train = dict(settings["train"])
    planned = planned_tokens_per_update(train)
    train.pop("tokens_per_update", None)
    train.pop("gpus")
    train.pop("cpu_processes", None)
    early = train.pop("early_stopping", None)
    if early:  # validate (and save, so that checkpoint_best.pt follows) every interval on the held-out pairs
        train.update(validate_interval_updates=early["interval_updates"], save_interval_updates=early["interval_updates"],
                     keep_interval_updates=1, patience=early["patience"])
    # the same tokens per update whatever the number of processes found here
    train["update_freq"] = launch.update_freq_for(planned, train["max_tokens"], rank.world_size)
    tokens_per_update = train["max_tokens"] * rank.world_size * train["update_freq"]  # >= planned
    gpus = torch.cuda.device_count()
    if rank.source == "srun":  # torchrun sets these itself
        os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = rank.master_addr, str(rank.master_port)
    if rank.is_master:
        log.info("tokens per update: %d planned; here %d x %d processes x update_freq %d = %d",
                 planned, train["max_tokens"], rank.world_size, train["update_freq"], tokens_per_update)
    nli = settings.get("nli")  # optional {"data": PREFIX, "weight": W}: the NLI multitask objective
    curves = settings.get("curves")  # learning curves (laser_repro.evaluation.curves); they measure the held-out loss
    # pairs with no binarized sentence (empty bitexts) are left out with a warning; none left: an error
    pairs, _ = fairseq_bridge.nonempty_pairs(a.data, settings["pairs"])
    argv = fairseq_bridge.fairseq_train_argv(a.data, a.save_dir, pairs, settings["targets"],
                                             settings["model"], train, cpu=gpus == 0, nli=nli,
                                             validate=bool(early) or (False if curves else None))
    argv += fairseq_bridge.distributed_argv(rank.world_size, rank.rank, rank.local_rank % max(gpus, 1),
                                            cpu=gpus == 0,
                                            unused_parameters=fairseq_bridge.nli_settings(nli) is not None)
    if rank.is_master:
        log.info("fairseq-train %s", " ".join(argv))
    deadline = launch.training_deadline(a.stop_before_limit) if rank.is_master else None
    if deadline is not None:
        log.info("inside SLURM job %s: checkpoint and stop at %s (%d s before its time limit)",
                 os.environ.get("SLURM_JOB_ID"), time.strftime("%H:%M:%S", time.localtime(deadline)),
                 a.stop_before_limit)
    monitor = None
    if curves and rank.is_master:
        from laser_repro.evaluation.curves import CURVES_FILE, CurveMonitor

        monitor = CurveMonitor(Path(a.save_dir) / CURVES_FILE, seed=train["seed"], **curves)
    initial = Path(a.save_dir) / INITIAL_CHECKPOINT if rank.is_master else None
    with launch.PreemptionFlag(deadline) as flag:
        outcome = fairseq_bridge.train(argv, stop_requested=lambda: flag.requested, initial_checkpoint=initial,
                                       monitor=monitor)
    no_update = not outcome["preempted"] and outcome["num_updates"] <= outcome["start_updates"]
    if not rank.is_master:
        if outcome["preempted"]:
            raise SystemExit(launch.EXIT_PREEMPTED)
        if no_update:
            raise SystemExit(1)
        return
    fingerprint = training_guard.read_fingerprint_file(a.save_dir) or {}
    # threads and world size: floating-point sums (and so the weights, by ~1e-7) depend on them
    status = {"status": "preempted" if outcome["preempted"] else "completed",
              "num_updates": outcome["num_updates"], "start_updates": outcome["start_updates"],
              "world_size": rank.world_size, "threads": a.threads,
              "update_freq": train["update_freq"], "max_tokens": train["max_tokens"],
              "tokens_per_update": tokens_per_update,
              "reason": flag.reason, "fingerprint": fingerprint.get("digest"),
              "stopping": training_guard.stopping_settings(settings), "model": "checkpoint_last.pt"}
    last = Path(a.save_dir) / "checkpoint_last.pt"
    if no_update:
        status.update(status="failed", error=_no_update_message(last, outcome, settings))
        write_json(Path(a.save_dir) / TRAIN_STATUS, status)
        raise SystemExit(status["error"])
    write_json(Path(a.save_dir) / TRAIN_STATUS, status)
    if outcome["preempted"]:
        raise SystemExit(launch.EXIT_PREEMPTED)
    if not last.exists():
        raise SystemExit(f"training finished without {last}")
    if early:  # the model is the checkpoint with the lowest held-out loss
        last = Path(a.save_dir) / "checkpoint_best.pt"
        if not last.exists():
            raise SystemExit(f"early stopping: training finished without {last}")
        kept = fairseq_bridge.checkpoint_num_updates(fairseq_bridge.load_checkpoint(last))
        log.info("early stopping: the model is %s (update %d, lowest held-out loss); stopped at update %d",
                 last, kept, outcome["num_updates"])
        status.update(kept_update=kept, model=last.name)
        write_json(Path(a.save_dir) / TRAIN_STATUS, status)
        if curves:
            from laser_repro.evaluation.curves import CURVES_FILE, mark_kept

            mark_kept(Path(a.save_dir) / CURVES_FILE, kept)
    _publish_outputs(a, last)


def _no_update_message(last: Path, outcome: dict, settings: dict) -> str:
    stop = ", ".join(f"{k}={v}" for k, v in settings["train"].items() if k in ("max_epoch", "max_update"))
    where = (f"{last} is already at update {outcome['start_updates']}, at or past the end of training "
             f"the settings set ({stop})" if outcome["start_updates"] else f"training ended at update 0 ({stop})")
    return (f"no update was made: {where}. Nothing is published: this job did not train that model, and "
            f"its run did not record that it completed. To train longer raise train.max_epoch / max_update; "
            f"to train anew move {last.parent} aside.")


def _publish_outputs(a, model: Path) -> None:
    """Publish the model (``--final``) and, when asked, the update-0 model and the curves."""
    save_dir = Path(a.save_dir)
    if a.initial:
        initial = save_dir / INITIAL_CHECKPOINT
        if not initial.exists():
            raise SystemExit(f"{initial} is missing (the run was started before it was kept): delete "
                             f"{a.save_dir} and train again")
        _publish(initial, a.initial)
    if a.curves:
        from laser_repro.evaluation.curves import CURVES_FILE

        _publish(save_dir / CURVES_FILE, a.curves, link=False)
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
