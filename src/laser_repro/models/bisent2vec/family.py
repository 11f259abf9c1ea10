"""The Bi-Sent2Vec family (Sabet et al. 2019) behind the model-family interface (laser_repro.models.base).

Its input text is the Moses-tokenised line (the paper tokenises words; no subwords): ``prepare`` takes
no codes. One model per language pair; its vocabulary is built by its own rule (``bisent2vec-vocab``)
and named ``dict.txt`` for the launcher's fingerprint.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Mapping

from laser_repro.models.base import Encoder, LoadedEncoder, ModelFamily, MosesInputFamily

#: run geometry and logging: a resume may change them (threads: hogwild floats differ anyway)
PROCESS_KEYS = ("cpu_processes", "threads")
STOPPING_KEYS = ("epochs",)
LOGGING_KEYS = ("log_interval", "validations_per_epoch", "chunk_pairs")


class BiSent2VecFamily(MosesInputFamily, ModelFamily):
    name = "bisent2vec"
    curves_file = "curves.json"
    uses_gpu = False  # a compiled CPU kernel: one process whatever GPUs the node has

    def fingerprint_settings(self, settings: Mapping) -> dict:
        # epochs set the learning-rate schedule: they change the weights at every step
        return self.train_settings_without(settings, (*PROCESS_KEYS, *LOGGING_KEYS))

    def stopping_settings(self, settings: Mapping) -> dict:
        return {k: settings["train"].get(k) for k in STOPPING_KEYS}

    def data_files(self, data_dir, settings: Mapping) -> dict[str, Path]:
        # the vocabulary, under the launcher's name for it
        return {"dict.txt": Path(settings["vocab"]), **self.text_data_files(data_dir, settings["languages"])}

    def train_worker(self, data_dir: Path, save_dir: Path, settings: Mapping, *, rank, threads: int, device,
                     stop_requested: Callable[[], bool]) -> dict:
        from laser_repro.models.bisent2vec import trainer

        train = {k: v for k, v in settings["train"].items() if k not in PROCESS_KEYS}
        outcome = trainer.train(data_dir, save_dir, {**settings, "train": train}, rank=rank, threads=threads,
                                stop_requested=stop_requested)
        return {**outcome, "model": Path(save_dir) / trainer.CHECKPOINT_BEST, "kept_update": outcome["best_update"],
                "runtime": {"threads": threads, "capped_lines": outcome["capped_lines"]}}

    def export(self, checkpoint, out) -> dict:
        from laser_repro.models.bisent2vec.export import export_encoder

        return export_encoder(checkpoint, out)

    def load_encoder(self, path) -> Encoder:
        from laser_repro.models.bisent2vec.export import BiSent2VecEncoder

        return LoadedEncoder(BiSent2VecEncoder.load(path))
