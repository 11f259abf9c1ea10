"""The LaBSE family (Feng et al. 2020) behind the model-family interface (laser_repro.models.base).

Its input text is the Moses-preprocessed line (as the other families'); the WordPiece vocabulary is part
of the encoder file, so ``prepare`` takes no codes. Two training stages run through the shared launcher:
``pretrain`` (MLM + TLM) and ``dual`` (the dual encoder, from scratch or from a pre-training checkpoint).
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Mapping

from laser_repro.models.base import Encoder, ModelFamily

PROCESS_KEYS = ("cpu_processes",)
STOPPING_KEYS = ("max_update",)
LOGGING_KEYS = ("log_interval", "validate_interval_updates")


class LabseFamily(ModelFamily):
    name = "labse"
    curves_file = "curves.json"

    def prepare(self, lines, lang, *, codes=None, lowercase: bool = True) -> list[str]:
        """Moses preprocessing of ``lang`` (the vocabulary is applied by the encoder; ``codes`` unused)."""
        from laser_repro.data.preprocess import language_preprocessor

        preprocess = language_preprocessor(lang, lowercase=lowercase)
        return [preprocess(line) for line in lines]

    def fingerprint_settings(self, settings: Mapping) -> dict:
        # max_update sets the learning-rate schedule: it changes the weights at every update
        train = {k: v for k, v in settings["train"].items() if k not in (*PROCESS_KEYS, *LOGGING_KEYS)}
        return {**{k: v for k, v in settings.items() if k != "train"}, "train": train}

    def stopping_settings(self, settings: Mapping) -> dict:
        return {k: settings["train"].get(k) for k in STOPPING_KEYS}

    def data_files(self, data_dir, settings: Mapping) -> dict[str, Path]:
        from laser_repro.models.labse.data import text_files

        files = {"dict.txt": Path(settings["tokenizer"])}  # the vocabulary, under the launcher's name for it
        if settings.get("init_checkpoint"):
            files["init_checkpoint"] = Path(settings["init_checkpoint"])
        for split in ("train", "valid"):
            for lang, path in text_files(data_dir, split, settings["languages"]).items():
                files[f"{split}.{lang}"] = path
        return files

    def train_worker(self, data_dir: Path, save_dir: Path, settings: Mapping, *, rank, threads: int,
                     stop_requested: Callable[[], bool]) -> dict:
        from laser_repro.models.labse import trainer

        train = {k: v for k, v in settings["train"].items() if k not in PROCESS_KEYS}
        outcome = trainer.train(data_dir, save_dir, {**settings, "train": train}, rank=rank,
                                stop_requested=stop_requested)
        best = Path(save_dir) / trainer.CHECKPOINT_BEST
        return {**outcome, "model": best, "kept_update": outcome.get("best_update"),
                "runtime": {"batch_size": train.get("batch_size")}}

    def checkpoint_updates(self, path) -> int:
        from laser_repro.models.checkpoint_safety import load_model_file

        state = load_model_file(path, what="training checkpoint", rebuild="delete it and train again",
                                map_location="cpu", weights_only=True)
        return int(state["num_updates"])

    def export(self, checkpoint, out) -> dict:
        from laser_repro.models.labse.export import export_encoder

        return export_encoder(checkpoint, out)

    def load_encoder(self, path) -> Encoder:
        from laser_repro.models.labse.export import LabseEncoder

        return _Loaded(LabseEncoder.load(path))


class _Loaded(Encoder):
    def __init__(self, encoder):
        self._encoder = encoder
        self.dim = encoder.dim

    def embed(self, lines, lang):
        return self._encoder.embed(list(lines), lang)
