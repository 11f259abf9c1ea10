"""The LaBSE family (Feng et al. 2020) behind the model-family interface (laser_repro.models.base).

Its input text is the Moses-preprocessed line (as the other families'); the WordPiece vocabulary is part
of the encoder file, so ``prepare`` takes no codes. Two training stages run through the shared launcher:
``pretrain`` (MLM + TLM) and ``dual`` (the dual encoder, from scratch or from a pre-training checkpoint).
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Mapping

from laser_repro.models.base import Encoder, LoadedEncoder, ModelFamily, MosesInputFamily, run_training_loop

PROCESS_KEYS = ("cpu_processes", "gpus")
STOPPING_KEYS = ("max_update",)
LOGGING_KEYS = ("log_interval", "validate_interval_updates")
#: how a step is computed, not what: gradient caching gives the one-pass gradient
MEMORY_KEYS = ("micro_batch",)


class LabseFamily(MosesInputFamily, ModelFamily):
    name = "labse"
    curves_file = "curves.json"

    def fingerprint_settings(self, settings: Mapping) -> dict:
        # max_update sets the learning-rate schedule: it changes the weights at every update
        return self.train_settings_without(settings, (*PROCESS_KEYS, *LOGGING_KEYS, *MEMORY_KEYS))

    def stopping_settings(self, settings: Mapping) -> dict:
        return {k: settings["train"].get(k) for k in STOPPING_KEYS}

    def data_files(self, data_dir, settings: Mapping) -> dict[str, Path]:
        files = {"dict.txt": Path(settings["tokenizer"])}  # the vocabulary, under the launcher's name for it
        if settings.get("init_checkpoint"):
            files["init_checkpoint"] = Path(settings["init_checkpoint"])
        from laser_repro.models.labse.token_store import manifest_file

        tokens = manifest_file(data_dir, settings["tokenizer"])
        if tokens is not None:  # the token arrays (rule labse_tokenize): their vocabulary and every file's sha256
            files["token_ids"] = tokens
        return {**files, **self.text_data_files(data_dir, settings["languages"])}

    def train_worker(self, data_dir: Path, save_dir: Path, settings: Mapping, *, rank, threads: int, device,
                     stop_requested: Callable[[], bool]) -> dict:
        from laser_repro.models.labse import trainer

        return run_training_loop(trainer, data_dir, save_dir, settings, rank=rank, device=device,
                                 stop_requested=stop_requested,
                                 process_keys=PROCESS_KEYS)

    def export(self, checkpoint, out) -> dict:
        from laser_repro.models.labse.export import export_encoder

        return export_encoder(checkpoint, out)

    def load_encoder(self, path) -> Encoder:
        from laser_repro.models.labse.export import LabseEncoder

        return LoadedEncoder(LabseEncoder.load(path))

