"""The multienc family (Schwenk & Douze 2017) behind the model-family interface (laser_repro.models.base)."""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Mapping

from laser_repro.models.base import Encoder, LoadedEncoder, ModelFamily, run_training_loop

#: train keys that do not change the weights at a given update, or only say when to stop / what to log
PROCESS_KEYS = ("cpu_processes", "gpus")
STOPPING_KEYS = ("max_epoch", "max_update", "patience")
LOGGING_KEYS = ("log_interval",)


class MultiencFamily(ModelFamily):
    name = "multienc"
    curves_file = "curves.json"

    def fingerprint_settings(self, settings: Mapping) -> dict:
        return self.train_settings_without(settings, (*PROCESS_KEYS, *STOPPING_KEYS, *LOGGING_KEYS))

    def stopping_settings(self, settings: Mapping) -> dict:
        return {k: settings["train"].get(k) for k in STOPPING_KEYS}

    def data_files(self, data_dir, settings: Mapping) -> dict[str, Path]:
        data_dir = Path(data_dir)
        files = {"dict.txt": data_dir / "dict.txt"}
        for split in ("train", "valid"):
            for lang in settings["languages"]:
                files[f"{split}.{lang}"] = data_dir / f"{split}.{lang}"
        return files

    def train_worker(self, data_dir: Path, save_dir: Path, settings: Mapping, *, rank, threads: int, device,
                     stop_requested: Callable[[], bool]) -> dict:
        from laser_repro.models.multienc import trainer

        return run_training_loop(trainer, data_dir, save_dir, settings, rank=rank, device=device,
                                 stop_requested=stop_requested,
                                 process_keys=PROCESS_KEYS)

    def export(self, checkpoint, out) -> dict:
        from laser_repro.models.multienc.export import export_encoder

        return export_encoder(checkpoint, out)

    def load_encoder(self, path) -> Encoder:
        from laser_repro.models.multienc.export import MultiencEncoder

        return LoadedEncoder(MultiencEncoder.load(path))

