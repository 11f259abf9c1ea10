"""The LASER family (fairseq BiLSTM encoder-decoder, our plugin) behind the model-family interface
(laser_repro.models.base)."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable, Mapping

from laser_repro.models.base import Encoder, ModelFamily

log = logging.getLogger("laser_repro")


class LaserFamily(ModelFamily):
    name = "laser"
    curves_file = "curves.jsonl"  # laser_repro.models.laser.curves.CURVES_FILE

    def fingerprint_settings(self, settings: Mapping) -> dict:
        from laser_repro.models import training_guard

        return training_guard.model_settings(settings)

    def stopping_settings(self, settings: Mapping) -> dict:
        from laser_repro.models import training_guard

        return training_guard.stopping_settings(settings)

    def data_files(self, data_dir, settings: Mapping) -> dict[str, Path]:
        from laser_repro.models import training_guard

        return training_guard.data_files(data_dir, settings)

    def train_worker(self, data_dir: Path, save_dir: Path, settings: Mapping, *, rank, threads: int, device,
                     stop_requested: Callable[[], bool]) -> dict:
        """One fairseq rank on ``device`` (CPU, or its GPU: fairseq's ``--device-id``): ``update_freq``
        recomputed for the processes found (exactly the planned tokens per update, else refused: :meth:`preflight`),
        early stopping on the held-out pairs, the NLI multitask objective, the curves."""
        from laser_repro.models import training_guard
        from laser_repro.models.laser import fairseq_bridge
        from laser_repro.models.training import INITIAL_CHECKPOINT

        train = dict(settings["train"])
        planned = training_guard.planned_tokens_per_update(train)
        for key in ("tokens_per_update", "gpus", "cpu_processes"):
            train.pop(key, None)
        early = train.pop("early_stopping", None)
        if early:  # validate (and save, so that checkpoint_best.pt follows) every interval on the held-out pairs
            train.update(validate_interval_updates=early["interval_updates"], save_interval_updates=early["interval_updates"],
                         keep_interval_updates=1, patience=early["patience"])
        # before fairseq starts: the planned tokens per update on these processes, and where the checkpoint resumes
        train["update_freq"] = self.preflight(save_dir, settings, rank.world_size, write_status=rank.is_master)
        tokens_per_update = train["max_tokens"] * rank.world_size * train["update_freq"]  # == planned
        cpu = device.type == "cpu"
        if rank.is_master:
            log.info("tokens per update: %d planned; here %d x %d processes x update_freq %d = %d",
                     planned, train["max_tokens"], rank.world_size, train["update_freq"], tokens_per_update)
        nli = settings.get("nli")  # optional {"data": PREFIX, "weight": W}: the NLI multitask objective
        curves = settings.get("curves")  # learning curves (laser_repro.models.laser.curves); they measure the held-out loss
        # pairs with no binarized sentence (empty bitexts) are left out with a warning; none left: an error
        pairs, _ = fairseq_bridge.nonempty_pairs(str(data_dir), settings["pairs"])
        argv = fairseq_bridge.fairseq_train_argv(str(data_dir), str(save_dir), pairs, settings["targets"],
                                                 settings["model"], train, cpu=cpu, nli=nli,
                                                 validate=bool(early) or (False if curves else None))
        argv += fairseq_bridge.distributed_argv(rank.world_size, rank.rank, device,
                                                unused_parameters=fairseq_bridge.nli_settings(nli) is not None)
        if rank.is_master:
            log.info("fairseq-train %s", " ".join(argv))
        monitor = None
        if curves and rank.is_master:
            from laser_repro.models.laser.curves import CurveMonitor

            monitor = CurveMonitor(Path(save_dir) / self.curves_file, seed=train["seed"], **curves)
        initial = Path(save_dir) / INITIAL_CHECKPOINT if rank.is_master else None
        outcome = fairseq_bridge.train(argv, stop_requested=stop_requested, initial_checkpoint=initial, monitor=monitor,
                                       restart_epoch=_restart_epoch())
        model, kept = Path(save_dir) / "checkpoint_last.pt", None
        done = rank.is_master and not outcome["preempted"] and outcome["num_updates"] > outcome["start_updates"]
        if early and done:  # the model is the checkpoint with the lowest held-out loss
            model = Path(save_dir) / "checkpoint_best.pt"
            if not model.exists():
                raise SystemExit(f"early stopping: training finished without {model}")
            kept = self.checkpoint_updates(model)
            log.info("early stopping: the model is %s (update %d, lowest held-out loss); stopped at update %d",
                     model, kept, outcome["num_updates"])
            if curves:
                from laser_repro.models.laser.curves import mark_kept

                mark_kept(Path(save_dir) / self.curves_file, kept)
        return {**outcome, "model": model, "kept_update": kept,
                "runtime": {"update_freq": train["update_freq"], "max_tokens": train["max_tokens"],
                            "tokens_per_update": tokens_per_update, "device": str(device)}}

    def preflight(self, save_dir, settings: Mapping, world_size: int, write_status: bool = False) -> int:
        """Refuse, in one line, what would train another model than planned, before any process trains: a world
        size for which no whole update_freq gives the planned tokens per update (:func:`launch.update_freq_for`),
        a checkpoint saved mid-epoch that this world size cannot continue at the same batch
        (:func:`fairseq_bridge.resume_plan`). Returns the update_freq. ``write_status``: also put the refusal in
        ``train_status.json`` (the master worker: the launcher then ends with that line)."""
        from laser_repro.core.errors import UserError
        from laser_repro.models import launch, training_guard
        from laser_repro.models.laser import fairseq_bridge

        train = settings["train"]
        try:
            update_freq = launch.update_freq_for(training_guard.planned_tokens_per_update(train), train["max_tokens"],
                                                 world_size)
            fairseq_bridge.resume_plan(Path(save_dir) / "checkpoint_last.pt", world_size, _restart_epoch())
        except UserError as err:
            if write_status:
                from laser_repro.core.textio import write_json
                from laser_repro.models.training import TRAIN_STATUS

                write_json(Path(save_dir) / TRAIN_STATUS, {"status": "failed", "family": self.name,
                                                           "world_size": world_size, "error": str(err)})
            raise
        return update_freq

    def checkpoint_updates(self, path) -> int:
        from laser_repro.models.laser import fairseq_bridge

        return fairseq_bridge.checkpoint_num_updates(fairseq_bridge.load_checkpoint(path))

    def export(self, checkpoint, out) -> dict:
        from laser_repro.models.laser.export import export_encoder

        return export_encoder(checkpoint, out)

    def load_encoder(self, path) -> Encoder:
        from laser_repro.models.laser.encoder import SentenceEncoder

        return _Loaded(SentenceEncoder.load(path))


def _restart_epoch() -> bool:
    """The user's choice (fairseq_bridge.RESTART_EPOCH_ENV=1) to start over an epoch that cannot be continued."""
    import os

    from laser_repro.models.laser import fairseq_bridge

    return os.environ.get(fairseq_bridge.RESTART_EPOCH_ENV, "").strip() == "1"


class _Loaded(Encoder):
    """LASER's encoder is language-independent: ``lang`` is not used."""

    def __init__(self, encoder, max_tokens: int = 12000):
        self._encoder, self.max_tokens = encoder, max_tokens
        self.dim = encoder.dim

    def embed(self, lines, lang):
        return self._encoder.embed(list(lines), max_tokens=self.max_tokens)
